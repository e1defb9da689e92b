"""Projects and environments: pure decisions, no I/O."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import msgspec

from eventlog.events.projects import (
    EnvironmentCreated,
    EnvironmentSortOrderSet,
    EnvironmentSwitched,
    EnvironmentUpdated,
    ProjectArchived,
    ProjectCreated,
    ProjectEnvironmentDisabled,
    ProjectEnvironmentEnabled,
)
from service.errors import Conflict, InvalidOperation, NameExists, NotFound, ValidationError
from service.names import validate_name

if TYPE_CHECKING:
    from collections.abc import Mapping
    from datetime import datetime

    from service.projects.commands import CreateEnvironment, CreateProject, UpdateEnvironment

DEFAULT_PROJECT = "default"
# What a new install has, as in Unleash: (name, type, sortOrder).
DEFAULT_ENVIRONMENTS = (("development", "development", 2), ("production", "production", 3))


class ActiveProject(msgspec.Struct, frozen=True, kw_only=True):
    """A project that is not archived, as a decision about it needs it (locked while decided)."""

    environments: list[str]  # enabled in it
    active_flags: int


def project_stream(project_id: str) -> tuple[str, str]:
    return ("project", project_id)


def environment_stream(name: str) -> tuple[str, str]:
    return ("environment", name)


def project_missing(project_id: str) -> NotFound:
    return NotFound(f"Project {project_id} does not exist")


def create_project(
    cmd: CreateProject, *, exists: bool, environments: list[str], now: datetime
) -> ProjectCreated:
    validate_name(cmd.id, "$.id", "Project id")
    if exists:
        raise NameExists(f"A project with id {cmd.id} already exists")
    return ProjectCreated(
        project_id=cmd.id,
        name=cmd.name,
        description=cmd.description or None,
        environments=environments,
        created_at=now,
    )


def archive_project(
    project_id: str, project: ActiveProject | None, *, now: datetime
) -> ProjectArchived:
    if project is None:
        raise project_missing(project_id)
    if project_id == DEFAULT_PROJECT:
        raise Conflict("The default project cannot be archived")
    if project.active_flags:
        raise Conflict(
            f"Project {project_id} still has {project.active_flags} active flag(s); "
            "archive them first"
        )
    return ProjectArchived(project_id=project_id, archived_at=now)


def create_environment(
    cmd: CreateEnvironment, *, exists: bool, next_sort_order: int, now: datetime
) -> EnvironmentCreated:
    validate_name(cmd.name, "$.name", "Environment name")
    if exists:
        raise NameExists(f"An environment named {cmd.name} already exists")
    return EnvironmentCreated(
        name=cmd.name,
        environment_type=cmd.type,
        sort_order=next_sort_order if cmd.sort_order is None else cmd.sort_order,
        created_at=now,
    )


def enable_environment(
    project_id: str, environment: str, project: ActiveProject | None, *, known: bool
) -> ProjectEnvironmentEnabled:
    if project is None:
        raise project_missing(project_id)
    if not known:
        raise NotFound(f"Environment {environment} does not exist")
    if environment in project.environments:
        raise NameExists(f"Project {project_id} already has the environment {environment} enabled")
    return ProjectEnvironmentEnabled(project_id=project_id, environment=environment)


def disable_environment(
    project_id: str, environment: str, project: ActiveProject | None
) -> ProjectEnvironmentDisabled:
    if project is None:
        raise project_missing(project_id)
    if environment not in project.environments:
        raise NotFound(f"Environment {environment} is not enabled in project {project_id}")
    if len(project.environments) == 1:
        raise ValidationError("A project must always keep at least one enabled environment")
    return ProjectEnvironmentDisabled(project_id=project_id, environment=environment)


def environment_missing(name: str) -> NotFound:
    return NotFound(f"Could not find environment with name: {name}")


def switch_environment(name: str, *, enabled: bool | None, on: bool) -> EnvironmentSwitched | None:
    """`POST /api/admin/environments/:name/on|off`. enabled: the environment's state now (None:
    there is none). Already so: no event."""
    if enabled is None:
        raise NotFound(f"Could not find environment {name}")
    if enabled == on:
        return None
    return EnvironmentSwitched(name=name, enabled=on)


def set_sort_order(
    orders: Mapping[str, int], current: Mapping[str, int]
) -> list[EnvironmentSortOrderSet]:
    """`PUT /api/admin/environments/sort-order`: one event per environment whose place changes;
    a name no environment has is ignored, as in Unleash (current: the named ones that exist)."""
    return [
        EnvironmentSortOrderSet(name=name, sort_order=order)
        for name, order in sorted(orders.items())
        if name in current and current[name] != order
    ]


# Unleash's one protected environment (its own migrations make it so): its type never
# changes there, and it is never deleted.
PROTECTED_ENVIRONMENT: Final = "default"


def update_environment(
    name: str, cmd: UpdateEnvironment, current: tuple[str, int] | None
) -> EnvironmentUpdated | None:
    """`PUT /api/admin/environments/update/:name`. current: its type and sortOrder (None: no
    such environment); a sortOrder left out stays. Nothing changed: no event."""
    if current is None:
        raise environment_missing(name)
    if name == PROTECTED_ENVIRONMENT and cmd.type != current[0]:
        raise InvalidOperation(f"Environment {name} is protected: its type stays {current[0]}")
    sort_order = current[1] if cmd.sort_order is None else cmd.sort_order
    if (cmd.type, sort_order) == current:
        return None
    return EnvironmentUpdated(name=name, environment_type=cmd.type, sort_order=sort_order)
