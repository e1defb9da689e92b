"""Read SQL of the feature read model, and the featureSchema JSON it answers with."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    import asyncpg

    from service.connections import Conn
    from service.features.events import FeatureCreated

_FEATURE_COLUMNS = """
SELECT f.name, f.project, f.type, f.description, f.impression_data, f.stale, f.created_at,
       f.archived_at, f.lifecycle_stage, f.lifecycle_entered_at,
       readmodel.feature_environments_json(f.name, f.project) AS environments,
       readmodel.feature_tags_json(f.name) AS tags,
       readmodel.feature_dependencies_json(f.name) AS dependencies,
       readmodel.feature_children_json(f.name) AS children
FROM features f
"""
# Everything a create decides on, in one round trip; the project row is share-locked so that
# archiving the project waits for the create (and then sees the new flag).
CREATE_CONTEXT = """
SELECT p.archived_at,
       (SELECT f.archived_at IS NOT NULL FROM features f WHERE f.name = $2) AS name_taken,
       readmodel.project_environments_json(p.id) AS environments
FROM projects p WHERE p.id = $1 FOR SHARE OF p
"""
FEATURE_IN_PROJECT = _FEATURE_COLUMNS + "WHERE f.name = $1 AND f.project = $2"
ACTIVE_FEATURES_IN_PROJECT = (
    _FEATURE_COLUMNS + "WHERE f.project = $1 AND f.archived_at IS NULL ORDER BY f.name"
)
# Row locks: concurrent archives or revives of one flag queue, and the later ones see the
# state the first one left (READ COMMITTED re-reads a row it waited for).
ARCHIVED_STATE = """
SELECT archived_at IS NOT NULL FROM features WHERE name = $1 AND project = $2 FOR UPDATE
"""
ARCHIVED_IN_PROJECT = """
SELECT name FROM features WHERE project = $1 AND archived_at IS NOT NULL AND name = ANY($2)
ORDER BY name FOR UPDATE
"""
LOCK_PROJECT_SHARED = "SELECT archived_at FROM projects WHERE id = $1 FOR SHARE"
# Every change to a flag's configuration locks its row first: changes to one flag queue.
LOCK_ACTIVE_FEATURE = """
SELECT EXISTS (SELECT 1 FROM project_environments WHERE project_id = $2 AND environment = $3)
       AS environment_enabled
FROM features WHERE name = $1 AND project = $2 AND archived_at IS NULL FOR UPDATE
"""
ENVIRONMENT_STATE = """
SELECT enabled FROM feature_environments WHERE feature_name = $1 AND environment = $2
"""
NEXT_STRATEGY_SORT_ORDER = """
SELECT coalesce(max(sort_order) + 1, 0) FROM feature_strategies
WHERE feature_name = $1 AND environment = $2
"""
STRATEGY_IN = """
SELECT id FROM feature_strategies WHERE id = $1 AND feature_name = $2 AND environment = $3
"""
STRATEGY_JSON = "SELECT readmodel.strategy_json(s) FROM feature_strategies s WHERE s.id = $1"
STRATEGIES_JSON = """
SELECT coalesce(json_agg(readmodel.strategy_json(s) ORDER BY s.sort_order, s.created_at, s.id),
                '[]')
FROM feature_strategies s WHERE s.feature_name = $1 AND s.environment = $2
"""
LOCK_FEATURE_BY_NAME = "SELECT 1 FROM features WHERE name = $1 AND archived_at IS NULL FOR UPDATE"
TAGS_JSON = "SELECT readmodel.feature_tags_json($1)"
NAME_EXISTS = "SELECT 1 FROM features WHERE name = $1"
ARCHIVED_STATE_BY_NAME = "SELECT archived_at IS NOT NULL FROM features WHERE name = $1"
# Lock both flags of a dependency in name order (no deadlock between opposite requests).
LOCK_PAIR = """
SELECT name, project FROM features
WHERE name = ANY($1::text[]) AND archived_at IS NULL ORDER BY name FOR UPDATE
"""
HAS_PARENTS = "SELECT EXISTS (SELECT 1 FROM feature_dependencies WHERE child = $1)"
HAS_CHILDREN = "SELECT EXISTS (SELECT 1 FROM feature_dependencies WHERE parent = $1)"
PARENTS = "SELECT parent FROM feature_dependencies WHERE child = $1 ORDER BY parent"
HAS_TAG = """
SELECT EXISTS (SELECT 1 FROM feature_tags WHERE feature_name = $1 AND type = $2 AND value = $3)
"""
VARIANTS_JSON = """
SELECT coalesce((SELECT variants FROM feature_environments
                 WHERE feature_name = $1 AND environment = $2), '[]'::jsonb)
"""

_environments = msgspec.json.Decoder(list[dict[str, Any]])
_json_list = msgspec.json.Decoder(list[Any])


def environment_json(feature: str, environment: dict[str, Any]) -> dict[str, Any]:
    strategies: list[dict[str, Any]] = environment.get("strategies", [])
    variants: list[dict[str, Any]] = environment.get("variants", [])
    return {
        "name": environment["name"],
        "featureName": feature,
        "environment": environment["name"],
        "type": environment["type"],
        "enabled": environment.get("enabled", False),
        "sortOrder": environment["sortOrder"],
        "variantCount": len(variants),
        "strategies": strategies,
        "variants": variants,
        "lastSeenAt": None,
        "hasStrategies": bool(strategies),
        "hasEnabledStrategies": any(not s["disabled"] for s in strategies),
    }


def new_feature_row(event: FeatureCreated, environments: str) -> dict[str, Any]:
    """The read-model row the inline projection has just written, without reading it back."""
    return {
        "name": event.name,
        "project": event.project,
        "type": event.feature_type,
        "description": event.description,
        "impression_data": event.impression_data,
        "stale": False,
        "created_at": event.created_at,
        "archived_at": None,
        "lifecycle_stage": "initial",
        "lifecycle_entered_at": event.created_at,
        "environments": environments,
        "tags": "[]",
        "dependencies": "[]",
        "children": "[]",
    }


def feature_json(row: asyncpg.Record | dict[str, Any]) -> dict[str, Any]:
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
        "tags": _json_list.decode(row["tags"]),
        "children": _json_list.decode(row["children"]),
        "dependencies": _json_list.decode(row["dependencies"]),
        "lifecycle": {
            "stage": row["lifecycle_stage"],
            "enteredStageAt": row["lifecycle_entered_at"],
        },
    }


async def feature_in_project(conn: Conn, name: str, project_id: str) -> dict[str, Any] | None:
    row = await conn.fetchrow(FEATURE_IN_PROJECT, name, project_id)
    return None if row is None else feature_json(row)
