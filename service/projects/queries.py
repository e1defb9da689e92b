"""Read SQL of the project and environment read models: the state decisions need (under row
locks) and the rows responses are built from."""

from __future__ import annotations

from typing import TYPE_CHECKING

from service.projects.domain import ActiveProject

if TYPE_CHECKING:
    import asyncpg

    from eventlog.connections import Conn

PROJECT = """
SELECT p.id, p.name, p.description, p.created_at, p.archived_at,
       (SELECT count(*) FROM features f
        WHERE f.project = p.id AND f.archived_at IS NULL) AS feature_count
FROM projects p WHERE p.id = $1
"""
LIST_PROJECTS = """
SELECT p.id, p.name, p.description, p.created_at, p.archived_at,
       (SELECT count(*) FROM features f
        WHERE f.project = p.id AND f.archived_at IS NULL) AS feature_count
FROM projects p WHERE p.archived_at IS NULL ORDER BY p.created_at, p.id
"""
PROJECT_EXISTS = "SELECT EXISTS (SELECT 1 FROM projects WHERE id = $1)"
# Changes to a project lock its row: they queue. Flag creates share-lock it, so an archive
# waits for them. The state is read by the next statement, which sees what they committed.
LOCK_ACTIVE_PROJECT = "SELECT 1 FROM projects WHERE id = $1 AND archived_at IS NULL FOR UPDATE"
PROJECT_STATE = """
SELECT array(SELECT pe.environment FROM project_environments pe
             WHERE pe.project_id = $1 ORDER BY pe.environment) AS environments,
       (SELECT count(*) FROM features f
        WHERE f.project = $1 AND f.archived_at IS NULL) AS active_flags
"""
PROJECT_ENVIRONMENTS = """
SELECT e.name, e.type, e.sort_order
FROM project_environments pe JOIN environments e ON e.name = pe.environment
WHERE pe.project_id = $1 ORDER BY e.sort_order, e.name
"""
ENVIRONMENT_NAMES = "SELECT name FROM environments ORDER BY sort_order, name"
ENVIRONMENT_EXISTS = "SELECT EXISTS (SELECT 1 FROM environments WHERE name = $1)"
NEXT_SORT_ORDER = "SELECT coalesce(max(sort_order), 0) + 1 FROM environments"
LIST_ENVIRONMENTS = """
SELECT e.name, e.type, e.sort_order,
       (SELECT count(*) FROM project_environments pe JOIN projects p ON p.id = pe.project_id
        WHERE pe.environment = e.name AND p.archived_at IS NULL) AS project_count
FROM environments e ORDER BY e.sort_order, e.name
"""
ENVIRONMENT = """
SELECT e.name, e.type, e.sort_order, 0::bigint AS project_count FROM environments e
WHERE e.name = $1
"""


async def lock_active_project(conn: Conn, project_id: str) -> ActiveProject | None:
    """Lock the project's row, then read its state (after the lock: docs/architecture.md)."""
    if await conn.fetchval(LOCK_ACTIVE_PROJECT, project_id) is None:
        return None
    row = await conn.fetchrow(PROJECT_STATE, project_id)
    assert row is not None  # a SELECT without FROM has its one row
    return ActiveProject(environments=list(row["environments"]), active_flags=row["active_flags"])


async def environment_names(conn: Conn) -> list[str]:
    return [r["name"] for r in await conn.fetch(ENVIRONMENT_NAMES)]


async def active_project(
    conn: Conn, project_id: str
) -> tuple[asyncpg.Record, list[asyncpg.Record]] | None:
    """A project that is not archived, and its environments in display order."""
    row = await conn.fetchrow(PROJECT, project_id)
    if row is None or row["archived_at"] is not None:
        return None
    return row, await conn.fetch(PROJECT_ENVIRONMENTS, project_id)
