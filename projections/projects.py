"""Read models `environments`, `projects` and `project_environments`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from projections.base import Projection
from service.projects.events import (
    EnvironmentCreated,
    ProjectArchived,
    ProjectCreated,
    ProjectEnvironmentDisabled,
    ProjectEnvironmentEnabled,
)

if TYPE_CHECKING:
    from service.codec import RecordedEvent
    from service.connections import Conn

INSERT_ENVIRONMENT = """
INSERT INTO environments (name, type, sort_order, created_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (name) DO NOTHING
"""
INSERT_PROJECT = """
INSERT INTO projects (id, name, description, created_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (id) DO NOTHING
"""
ENABLE = """
INSERT INTO project_environments (project_id, environment) SELECT $1, unnest($2::text[])
ON CONFLICT (project_id, environment) DO NOTHING
"""
DISABLE = "DELETE FROM project_environments WHERE project_id = $1 AND environment = $2"
ARCHIVE = "UPDATE projects SET archived_at = $2 WHERE id = $1"


async def apply(conn: Conn, recorded: RecordedEvent) -> None:
    match recorded.event:
        case EnvironmentCreated() as e:
            await conn.execute(
                INSERT_ENVIRONMENT, e.name, e.environment_type, e.sort_order, e.created_at
            )
        case ProjectCreated() as e:
            await conn.execute(INSERT_PROJECT, e.project_id, e.name, e.description, e.created_at)
            await conn.execute(ENABLE, e.project_id, e.environments)
        case ProjectArchived() as e:
            await conn.execute(ARCHIVE, e.project_id, e.archived_at)
        case ProjectEnvironmentEnabled() as e:
            await conn.execute(ENABLE, e.project_id, [e.environment])
        case ProjectEnvironmentDisabled() as e:
            await conn.execute(DISABLE, e.project_id, e.environment)
        case _:
            pass


PROJECTION = Projection(
    name="projects",
    mode="inline",
    tables=("environments", "projects", "project_environments"),
    apply=apply,
)
