"""Feature flags: pure decisions, no I/O."""

from __future__ import annotations

from typing import TYPE_CHECKING

from service.errors import NameExists, NotFound
from service.features.events import FeatureArchived, FeatureCreated, FeatureRevived
from service.names import validate_name

if TYPE_CHECKING:
    from datetime import datetime

    from service.features.commands import CreateFeature

FLAG_EXISTS = "A flag with that name already exists"
ARCHIVED_FLAG_EXISTS = "An archived flag with that name already exists"


def stream(name: str) -> tuple[str, str]:
    return ("feature", name)


def project_missing(project_id: str) -> NotFound:
    return NotFound(f"Project {project_id} does not exist")


def create_feature(
    cmd: CreateFeature, project_id: str, *, existing_archived: bool | None, now: datetime
) -> FeatureCreated:
    """existing_archived: None when the name is free, else whether the holder is archived."""
    validate_name(cmd.name)
    if existing_archived is not None:
        raise NameExists(ARCHIVED_FLAG_EXISTS if existing_archived else FLAG_EXISTS)
    return FeatureCreated(
        name=cmd.name,
        project=project_id,
        feature_type=cmd.type,
        description=cmd.description or None,  # an empty description is stored as null
        impression_data=cmd.impression_data,
        created_at=now,
    )


def archive_feature(
    name: str, project_id: str, *, archived: bool | None, now: datetime
) -> FeatureArchived:
    """archived: None when no such flag is in the project."""
    if archived is None or archived:
        raise NotFound(f"Could not find an active flag named {name} in project {project_id}")
    return FeatureArchived(name=name, project=project_id, archived_at=now)


def revive_features(
    names: list[str], project_id: str, *, archived_here: set[str], now: datetime
) -> list[FeatureRevived]:
    """All or nothing: every name must be an archived flag of this project."""
    unique = list(dict.fromkeys(names))
    missing = [n for n in unique if n not in archived_here]
    if missing:
        raise NotFound(f"No archived flag named {', '.join(missing[:10])} in project {project_id}")
    return [
        FeatureRevived(name=n, project=project_id, revived_at=now, lifecycle_stage="initial")
        for n in unique
    ]
