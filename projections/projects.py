"""Read models `environments`, `projects` and `project_environments`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from eventlog.events.projects import (
    DefaultStrategySet,
    EnvironmentCreated,
    EnvironmentSortOrderSet,
    EnvironmentSwitched,
    EnvironmentUpdated,
    ProjectArchived,
    ProjectCreated,
    ProjectEnvironmentDisabled,
    ProjectEnvironmentEnabled,
)
from projections.base import Projection
from projections.writes import Delete, Insert, Table, Update, Write

if TYPE_CHECKING:
    from eventlog.codec import RecordedEvent

ENVIRONMENTS = Table("environments", ("name",))
PROJECTS = Table("projects", ("id",))
PROJECT_ENVIRONMENTS = Table("project_environments", ("project_id", "environment"))

_json = msgspec.json.Encoder()


def _enable(project_id: str, environment: str) -> Insert:
    return Insert(PROJECT_ENVIRONMENTS, {"project_id": project_id, "environment": environment})


def writes(recorded: RecordedEvent) -> list[Write]:  # noqa: PLR0911 - a case per type
    match recorded.event:
        case EnvironmentCreated() as e:
            row = {
                "name": e.name,
                "type": e.environment_type,
                "sort_order": e.sort_order,
                "created_at": e.created_at,
            }
            return [Insert(ENVIRONMENTS, row)]
        case ProjectCreated() as e:
            project = {
                "id": e.project_id,
                "name": e.name,
                "description": e.description,
                "created_at": e.created_at,
            }
            return [
                Insert(PROJECTS, project),
                *(_enable(e.project_id, environment) for environment in e.environments),
            ]
        case ProjectArchived() as e:
            return [Update(PROJECTS, {"id": e.project_id}, {"archived_at": e.archived_at})]
        case ProjectEnvironmentEnabled() as e:
            return [_enable(e.project_id, e.environment)]
        case ProjectEnvironmentDisabled() as e:
            where = {"project_id": e.project_id, "environment": e.environment}
            return [Delete(PROJECT_ENVIRONMENTS, where)]
        case EnvironmentSwitched() as e:
            return [Update(ENVIRONMENTS, {"name": e.name}, {"enabled": e.enabled})]
        case EnvironmentUpdated() as e:
            values = {"type": e.environment_type, "sort_order": e.sort_order}
            return [Update(ENVIRONMENTS, {"name": e.name}, values)]
        case EnvironmentSortOrderSet() as e:
            return [Update(ENVIRONMENTS, {"name": e.name}, {"sort_order": e.sort_order})]
        case DefaultStrategySet() as e:
            where = {"project_id": e.project_id, "environment": e.environment}
            return [
                Update(
                    PROJECT_ENVIRONMENTS,
                    where,
                    {"default_strategy": _json.encode(e.strategy).decode()},
                )
            ]
        case _:
            return []


PROJECTION = Projection(
    name="projects",
    mode="inline",
    tables=(ENVIRONMENTS, PROJECTS, PROJECT_ENVIRONMENTS),
    writes=writes,
    handles=frozenset(
        {
            DefaultStrategySet,
            EnvironmentCreated,
            EnvironmentSortOrderSet,
            EnvironmentSwitched,
            EnvironmentUpdated,
            ProjectArchived,
            ProjectCreated,
            ProjectEnvironmentDisabled,
            ProjectEnvironmentEnabled,
        }
    ),
)
