"""Read SQL of the feature read model, and the featureSchema JSON it answers with."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    import asyncpg

    from service.db import Conn

_FEATURE_COLUMNS = """
SELECT f.name, f.project, f.type, f.description, f.impression_data, f.stale, f.created_at,
       f.archived_at, f.lifecycle_stage, f.lifecycle_entered_at,
       (SELECT coalesce(json_agg(json_build_object(
                   'name', e.name, 'type', e.type, 'sortOrder', e.sort_order)
                   ORDER BY e.sort_order, e.name), '[]')
        FROM project_environments pe JOIN environments e ON e.name = pe.environment
        WHERE pe.project_id = f.project) AS environments
FROM features f
"""
FEATURE_IN_PROJECT = _FEATURE_COLUMNS + "WHERE f.name = $1 AND f.project = $2"
ACTIVE_FEATURES_IN_PROJECT = (
    _FEATURE_COLUMNS + "WHERE f.project = $1 AND f.archived_at IS NULL ORDER BY f.name"
)
NAME_TAKEN = "SELECT archived_at IS NOT NULL FROM features WHERE name = $1"
ARCHIVED_STATE = "SELECT archived_at IS NOT NULL FROM features WHERE name = $1 AND project = $2"
ARCHIVED_IN_PROJECT = """
SELECT name FROM features WHERE project = $1 AND archived_at IS NOT NULL AND name = ANY($2)
"""

_environments = msgspec.json.Decoder(list[dict[str, Any]])


def environment_json(feature: str, environment: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": environment["name"],
        "featureName": feature,
        "environment": environment["name"],
        "type": environment["type"],
        "enabled": False,
        "sortOrder": environment["sortOrder"],
        "variantCount": 0,
        "strategies": [],
        "variants": [],
        "lastSeenAt": None,
        "hasStrategies": False,
        "hasEnabledStrategies": False,
    }


def feature_json(row: asyncpg.Record) -> dict[str, Any]:
    """The full featureSchema of spec.md, as create, clone and GET answer it."""
    name = row["name"]
    environments = [environment_json(name, e) for e in _environments.decode(row["environments"])]
    return {
        "name": name,
        "type": row["type"],
        "description": row["description"],
        "project": row["project"],
        "enabled": any(e["enabled"] for e in environments),
        "stale": row["stale"],
        "favorite": False,
        "impressionData": row["impression_data"],
        "archived": row["archived_at"] is not None,
        "createdAt": row["created_at"],
        "archivedAt": row["archived_at"],
        "lastSeenAt": None,
        "environments": environments,
        "variants": [],
        "strategies": [],
        "tags": [],
        "children": [],
        "dependencies": [],
        "lifecycle": {
            "stage": row["lifecycle_stage"],
            "enteredStageAt": row["lifecycle_entered_at"],
        },
    }


async def feature_in_project(conn: Conn, name: str, project_id: str) -> dict[str, Any] | None:
    row = await conn.fetchrow(FEATURE_IN_PROJECT, name, project_id)
    return None if row is None else feature_json(row)
