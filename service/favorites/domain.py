"""Favourites: pure decisions, no I/O. Marking what is marked already, or unmarking what is
not, records nothing (docs/behavior.md, "Favourites")."""

from __future__ import annotations

from eventlog.events.favorites import (
    FeatureFavorited,
    FeatureUnfavorited,
    ProjectFavorited,
    ProjectUnfavorited,
)
from service.errors import NotFound


def flag_missing(name: str, project_id: str) -> NotFound:
    return NotFound(f"Could not find feature flag with name {name} in project {project_id}")


def project_missing(project_id: str) -> NotFound:
    return NotFound(f"Project {project_id} does not exist")


def favorite_feature(
    name: str, project_id: str, user_id: int, *, flag_project: str | None, favorite: bool
) -> list[FeatureFavorited]:
    """`flag_project`: the project of the flag of that name (None: no such flag, archived
    ones included); `favorite`: whether it is the person's favourite already."""
    if flag_project != project_id:
        raise flag_missing(name, project_id)
    if favorite:
        return []
    return [FeatureFavorited(name=name, project=project_id, user_id=user_id)]


def unfavorite_feature(
    name: str, project_id: str, user_id: int, *, flag_project: str | None, favorite: bool
) -> list[FeatureUnfavorited]:
    if flag_project != project_id:
        raise flag_missing(name, project_id)
    if not favorite:
        return []
    return [FeatureUnfavorited(name=name, project=project_id, user_id=user_id)]


def favorite_project(
    project_id: str, user_id: int, *, active: bool | None, favorite: bool
) -> list[ProjectFavorited]:
    """`active`: whether the project is not archived (None: no such project). Only an active
    project can become a favourite."""
    if not active:
        raise project_missing(project_id)
    if favorite:
        return []
    return [ProjectFavorited(project_id=project_id, user_id=user_id)]


def unfavorite_project(
    project_id: str, user_id: int, *, active: bool | None, favorite: bool
) -> list[ProjectUnfavorited]:
    """An archived project can still leave a person's favourites."""
    if active is None:
        raise project_missing(project_id)
    if not favorite:
        return []
    return [ProjectUnfavorited(project_id=project_id, user_id=user_id)]
