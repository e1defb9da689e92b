"""Read model `feature_types`: the feature types flags are created with, and the expected
lifetime of each, which decides when a flag of it is potentially stale
(`potentially_stale`, the one SQL expression every read uses)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from eventlog.events.feature_types import FeatureTypeDefined, FeatureTypeLifetimeChanged
from projections.base import Projection
from projections.writes import Insert, Table, Update, Write

if TYPE_CHECKING:
    from eventlog.codec import RecordedEvent

FEATURE_TYPES = Table("feature_types", ("id",))


def writes(recorded: RecordedEvent) -> list[Write]:
    match recorded.event:
        case FeatureTypeDefined() as e:
            row = {
                "id": e.feature_type_id,
                "name": e.name,
                "description": e.description,
                "lifetime_days": e.lifetime_days,
                "sort_order": e.sort_order,
            }
            return [Insert(FEATURE_TYPES, row)]
        case FeatureTypeLifetimeChanged() as e:
            changed = {"lifetime_days": e.lifetime_days}
            return [Update(FEATURE_TYPES, {"id": e.feature_type_id}, changed)]
        case _:
            return []


PROJECTION = Projection(
    name="feature_types",
    mode="inline",
    by_stream=True,
    tables=(FEATURE_TYPES,),
    writes=writes,
    handles=frozenset({FeatureTypeDefined, FeatureTypeLifetimeChanged}),
)


def potentially_stale(flag: str, clock: str) -> str:
    """SQL, a boolean: whether the flag (the `features` row under the alias `flag`) has outlived
    the expected lifetime of its type (this read model) at `clock` (an SQL timestamptz: now, or
    the instant a read of a past state is about), as Unleash's rule says: now > created_at +
    lifetimeDays; never for a type whose lifetime is null. Computed at read time, so it holds
    the moment a lifetime changes (Unleash recomputes it every few minutes). It says nothing of
    `stale`: Unleash's filters and counts take "potentially stale" as `potentially_stale AND
    NOT stale` (the search's `state=IS:potentially-stale`). The age is compared as an interval,
    so a lifetime of 2^31 - 1 days cannot overflow a timestamp."""
    return (
        f"coalesce(({clock}) - {flag}.created_at > (SELECT ft.lifetime_days FROM feature_types ft"  # noqa: S608 - our names
        f" WHERE ft.id = {flag}.type) * interval '1 day', false)"
    )
