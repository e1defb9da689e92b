"""Read models `feature_links`, `feature_lifecycle` and `feature_first_enabled`: a flag's
links, and what its lifecycle's stages are read from (service/features/lifecycle.py): since
when it is at `initial`, its completion, and the stream version of its first enabling in each
environment (the time of that version is in the log; an inline projection never sees it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from eventlog.events.features import (
    FeatureCloned,
    FeatureCreated,
    FeatureDeleted,
    FeatureEnvironmentEnabled,
    FeatureRevived,
)
from eventlog.events.flag_extras import (
    FeatureCompleted,
    FeatureLinkAdded,
    FeatureLinkRemoved,
    FeatureLinkUpdated,
    FeatureUncompleted,
)
from projections.base import Projection
from projections.writes import Delete, Insert, Table, Update, Write

if TYPE_CHECKING:
    from eventlog.codec import RecordedEvent

FEATURE_LINKS = Table("feature_links", ("id",))
FEATURE_LIFECYCLE = Table("feature_lifecycle", ("feature_name",), keyed_only=True)
FEATURE_FIRST_ENABLED = Table(
    "feature_first_enabled", ("feature_name", "environment"), keyed_only=True
)


def current_stage(flag: str) -> str:
    """SQL: the lifecycle stage the flag (a `features` row under alias `flag`) is at now, the
    last it reached (docs/behavior.md, "A flag's lifecycle"), from these read models."""
    return f"""
CASE WHEN {flag}.archived_at IS NOT NULL THEN 'archived'
     WHEN EXISTS (SELECT 1 FROM feature_lifecycle lcs
                  WHERE lcs.feature_name = {flag}.name AND lcs.completed_at IS NOT NULL)
          THEN 'completed'
     WHEN EXISTS (SELECT 1 FROM feature_first_enabled fes
                  JOIN environments es ON es.name = fes.environment AND es.type = 'production'
                  WHERE fes.feature_name = {flag}.name) THEN 'live'
     WHEN EXISTS (SELECT 1 FROM feature_first_enabled fes WHERE fes.feature_name = {flag}.name)
          THEN 'pre-live'
     ELSE 'initial' END"""  # noqa: S608 - an alias of the caller's SQL


def lifecycle_times(flag: str) -> str:
    """SQL: the columns of when the flag (alias `flag`) entered each stage it reached since it
    was (last) created or revived: `initial_at`; `pre_live_version` and `live_version`, the
    versions of its stream that hold its first enabling anywhere and in a production
    environment (the log has their times); `completed_at` with `completed_status`; and
    `lifecycle_archived_at` (service/features/responses.stages reads them)."""
    first = f"""(SELECT min(fes.stream_version) FROM feature_first_enabled fes
 WHERE fes.feature_name = {flag}.name"""  # noqa: S608 - an alias of the caller's SQL
    production = (
        " AND fes.environment IN (SELECT es.name FROM environments es WHERE es.type = 'production')"
    )
    own = f"FROM feature_lifecycle lcs WHERE lcs.feature_name = {flag}.name"
    return f"""
coalesce((SELECT lcs.initial_at {own}), {flag}.created_at) AS initial_at,
{first}) AS pre_live_version, {first}{production}) AS live_version,
(SELECT lcs.completed_at {own}) AS completed_at,
(SELECT lcs.status {own}) AS completed_status,
{flag}.archived_at AS lifecycle_archived_at"""


_NOT_COMPLETED = {"status": None, "status_value": None, "completed_at": None}


def writes(recorded: RecordedEvent) -> list[Write]:  # noqa: PLR0911 - a case per type
    match recorded.event:
        case FeatureCreated() | FeatureCloned() as e:
            row = {"feature_name": e.name, "initial_at": e.created_at} | _NOT_COMPLETED
            return [Insert(FEATURE_LIFECYCLE, row)]
        case FeatureEnvironmentEnabled() as e:
            # the first one stays: a later enabling of the same environment keeps its row
            row = {
                "feature_name": e.name,
                "environment": e.environment,
                "stream_version": recorded.stream_version,
            }
            return [Insert(FEATURE_FIRST_ENABLED, row)]
        case FeatureRevived() as e:  # back at `initial`, as new (as in Unleash)
            return [
                Update(
                    FEATURE_LIFECYCLE,
                    {"feature_name": e.name},
                    {"initial_at": e.revived_at} | _NOT_COMPLETED,
                ),
                Delete(FEATURE_FIRST_ENABLED, {"feature_name": e.name}),
            ]
        case FeatureCompleted() as e:
            completed = {
                "status": e.status,
                "status_value": e.status_value,
                "completed_at": e.completed_at,
            }
            return [Update(FEATURE_LIFECYCLE, {"feature_name": e.name}, completed)]
        case FeatureUncompleted() as e:
            return [Update(FEATURE_LIFECYCLE, {"feature_name": e.name}, _NOT_COMPLETED)]
        case FeatureLinkAdded() as e:
            row = {
                "id": e.link_id,
                "feature_name": e.name,
                "url": e.url,
                "title": e.title,
                "created_at": e.added_at,
            }
            return [Insert(FEATURE_LINKS, row)]
        case FeatureLinkUpdated() as e:
            changed = {"url": e.url, "title": e.title}
            return [Update(FEATURE_LINKS, {"id": e.link_id}, changed)]
        case FeatureLinkRemoved() as e:
            return [Delete(FEATURE_LINKS, {"id": e.link_id})]
        case FeatureDeleted() as e:
            return [
                Delete(FEATURE_LINKS, {"feature_name": e.name}),
                Delete(FEATURE_LIFECYCLE, {"feature_name": e.name}),
                Delete(FEATURE_FIRST_ENABLED, {"feature_name": e.name}),
            ]
        case _:
            return []


PROJECTION = Projection(
    name="flag_extras",
    mode="inline",
    by_stream=True,
    tables=(FEATURE_LINKS, FEATURE_LIFECYCLE, FEATURE_FIRST_ENABLED),
    writes=writes,
    handles=frozenset(
        {
            FeatureCloned,
            FeatureCompleted,
            FeatureCreated,
            FeatureDeleted,
            FeatureEnvironmentEnabled,
            FeatureLinkAdded,
            FeatureLinkRemoved,
            FeatureLinkUpdated,
            FeatureRevived,
            FeatureUncompleted,
        }
    ),
)
