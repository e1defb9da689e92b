"""Read SQL of the project and environment read models."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncpg

    from service.connections import Conn

PROJECT = "SELECT id, name, description, created_at, archived_at FROM projects WHERE id = $1"
LOCK_PROJECT = "SELECT archived_at FROM projects WHERE id = $1 FOR UPDATE"
ACTIVE_FLAGS = "SELECT count(*) FROM features WHERE project = $1 AND archived_at IS NULL"
LIST_PROJECTS = """
SELECT p.id, p.name, p.description, p.created_at, p.archived_at,
       (SELECT count(*) FROM features f
        WHERE f.project = p.id AND f.archived_at IS NULL) AS feature_count
FROM projects p WHERE p.archived_at IS NULL ORDER BY p.created_at, p.id
"""
PROJECT_ENVIRONMENTS = """
SELECT e.name, e.type, e.sort_order
FROM project_environments pe JOIN environments e ON e.name = pe.environment
WHERE pe.project_id = $1 ORDER BY e.sort_order, e.name
"""
ENVIRONMENT_NAMES = "SELECT name FROM environments ORDER BY sort_order, name"
ENVIRONMENT_EXISTS = "SELECT EXISTS (SELECT 1 FROM environments WHERE name = $1)"
NEXT_SORT_ORDER = "SELECT coalesce(max(sort_order), 0) + 1 FROM environments"
LOCK_ACTIVE_PROJECT = "SELECT archived_at FROM projects WHERE id = $1 FOR UPDATE"
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


def environment_json(row: asyncpg.Record) -> dict[str, Any]:
    return {
        "name": row["name"],
        "type": row["type"],
        "sortOrder": row["sort_order"],
        "enabled": True,
        "protected": False,
        "projectCount": row["project_count"],
    }


def project_json(row: asyncpg.Record, feature_count: int) -> dict[str, Any]:
    return {
        "id": row["id"],
        "name": row["name"],
        "description": row["description"],
        "createdAt": row["created_at"],
        "archivedAt": row["archived_at"],
        "featureCount": feature_count,
        "mode": "open",
    }


async def project_detail(conn: Conn, project_id: str) -> dict[str, Any] | None:
    row = await conn.fetchrow(PROJECT, project_id)
    if row is None or row["archived_at"] is not None:
        return None
    environments = await conn.fetch(PROJECT_ENVIRONMENTS, project_id)
    body = project_json(row, await conn.fetchval(ACTIVE_FLAGS, project_id))
    body["environments"] = [
        {"environment": e["name"], "type": e["type"], "sortOrder": e["sort_order"]}
        for e in environments
    ]
    return body
