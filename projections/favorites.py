"""Read models `favorite_features` and `favorite_projects`: which flags and projects each
person has marked as a favourite. A person's favourites leave with the person."""

from __future__ import annotations

from typing import TYPE_CHECKING

from eventlog.events.favorites import (
    FeatureFavorited,
    FeatureUnfavorited,
    ProjectFavorited,
    ProjectUnfavorited,
)
from eventlog.events.features import FeatureDeleted
from eventlog.events.users import UserDeleted, UsersDeleted
from projections.base import Projection
from projections.writes import Delete, Insert, Table, Write

if TYPE_CHECKING:
    from eventlog.codec import RecordedEvent

FAVORITE_FEATURES = Table("favorite_features", ("user_id", "feature_name"), keyed_only=True)
FAVORITE_PROJECTS = Table("favorite_projects", ("user_id", "project_id"), keyed_only=True)


def _forget(user_ids: list[int]) -> list[Write]:
    return [
        write
        for user_id in user_ids
        for write in (
            Delete(FAVORITE_FEATURES, {"user_id": user_id}),
            Delete(FAVORITE_PROJECTS, {"user_id": user_id}),
        )
    ]


def writes(recorded: RecordedEvent) -> list[Write]:  # noqa: PLR0911 - a case per type
    match recorded.event:
        case FeatureFavorited() as e:
            return [Insert(FAVORITE_FEATURES, {"user_id": e.user_id, "feature_name": e.name})]
        case FeatureUnfavorited() as e:
            return [Delete(FAVORITE_FEATURES, {"user_id": e.user_id, "feature_name": e.name})]
        case ProjectFavorited() as e:
            return [Insert(FAVORITE_PROJECTS, {"user_id": e.user_id, "project_id": e.project_id})]
        case ProjectUnfavorited() as e:
            where = {"user_id": e.user_id, "project_id": e.project_id}
            return [Delete(FAVORITE_PROJECTS, where)]
        case FeatureDeleted() as e:  # everyone's favourite of it goes with it
            return [Delete(FAVORITE_FEATURES, {"feature_name": e.name})]
        case UserDeleted() as e:
            return _forget([e.user_id])
        case UsersDeleted() as e:
            return _forget([u.user_id for u in e.users])
        case _:
            return []


PROJECTION = Projection(
    name="favorites",
    mode="inline",
    tables=(FAVORITE_FEATURES, FAVORITE_PROJECTS),
    writes=writes,
    handles=frozenset(
        {
            FeatureDeleted,
            FeatureFavorited,
            FeatureUnfavorited,
            ProjectFavorited,
            ProjectUnfavorited,
            UserDeleted,
            UsersDeleted,
        }
    ),
)
