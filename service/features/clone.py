"""POST /api/admin/projects/:projectId/features/:featureName/clone (behavior.md section 2)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec

from service import auth, eventstore, store
from service.appkeys import POOL, REQUEST_ID
from service.errors import NameExists, NotFound
from service.features import domain, queries
from service.features.commands import CloneFeature, Constraint, StrategyVariant, Variant
from service.features.events import (
    ClonedDependency,
    ClonedEnvironment,
    ClonedTag,
    FeatureCloned,
    StrategyData,
)
from service.http import Route, json_response, principal, read_json
from service.names import validate_name

if TYPE_CHECKING:
    import asyncpg
    from aiohttp import web

    from service.db import Conn

_constraints = msgspec.json.Decoder(list[Constraint])
_strategy_variants = msgspec.json.Decoder(list[StrategyVariant])
_variants = msgspec.json.Decoder(list[Variant])
_parameters = msgspec.json.Decoder(dict[str, str])
_strings = msgspec.json.Decoder(list[str])

SOURCE = """
SELECT name, project, type, description, impression_data FROM features
WHERE name = $1 AND archived_at IS NULL FOR SHARE
"""
TARGET_PROJECT = "SELECT archived_at FROM projects WHERE id = $1 FOR SHARE"
TARGET_ENVIRONMENTS = """
SELECT environment FROM project_environments WHERE project_id = $1 ORDER BY environment
"""
SOURCE_VARIANTS = """
SELECT environment, variants::text AS variants FROM feature_environments
WHERE feature_name = $1 AND environment = ANY($2::text[])
"""
SOURCE_STRATEGIES = """
SELECT environment, id::text AS id, name, title, disabled, sort_order,
       constraints::text AS constraints, parameters::text AS parameters,
       variants::text AS variants, segments
FROM feature_strategies WHERE feature_name = $1 AND environment = ANY($2::text[])
ORDER BY environment, sort_order, created_at, id
"""
SOURCE_TAGS = "SELECT type, value FROM feature_tags WHERE feature_name = $1 ORDER BY type, value"
SOURCE_DEPENDENCIES = """
SELECT d.parent, d.enabled, d.variants::text AS variants
FROM feature_dependencies d JOIN features p ON p.name = d.parent
WHERE d.child = $1 AND p.project = $2 AND p.archived_at IS NULL ORDER BY d.parent
"""


async def clone_feature(request: web.Request) -> web.Response:
    source_name, project_id = request.match_info["featureName"], request.match_info["projectId"]
    cmd = await read_json(request, CloneFeature)
    async with request.app[POOL].acquire() as conn, conn.transaction():
        source = await conn.fetchrow(SOURCE, source_name)
        if source is None:
            raise NotFound(f"Could not find feature flag with name {source_name}")
        target = await conn.fetchrow(TARGET_PROJECT, project_id)
        if target is None or target["archived_at"] is not None:
            raise domain.project_missing(project_id)
        validate_name(cmd.name)
        taken = await conn.fetchval(queries.ARCHIVED_STATE_BY_NAME, cmd.name)
        if taken is not None:
            raise NameExists(domain.ARCHIVED_FLAG_EXISTS if taken else domain.FLAG_EXISTS)
        event = await _decide(conn, source, project_id, cmd)
        meta = principal(request).metadata(request[REQUEST_ID])
        try:
            await store.append(conn, domain.stream(cmd.name), "no-stream", [event], meta)
        except eventstore.WrongExpectedVersion:
            raise NameExists(domain.FLAG_EXISTS) from None
        body = await queries.feature_in_project(conn, cmd.name, project_id)
    return json_response(body)


async def _decide(
    conn: Conn, source: asyncpg.Record, project_id: str, cmd: CloneFeature
) -> FeatureCloned:
    """Everything the copy takes from its source, per behavior.md section 2."""
    name = source["name"]
    environments = [r["environment"] for r in await conn.fetch(TARGET_ENVIRONMENTS, project_id)]
    strategies: dict[str, list[StrategyData]] = {env: [] for env in environments}
    for row in await conn.fetch(SOURCE_STRATEGIES, name, environments):
        copy = domain.clone_strategy(
            _strategy(row), cmd.name, replace_group_id=cmd.replace_group_id
        )
        strategies[row["environment"]].append(copy)
    variants = {
        r["environment"]: _variants.decode(r["variants"])
        for r in await conn.fetch(SOURCE_VARIANTS, name, environments)
    }
    position = await eventstore.last_position(conn, domain.stream(name))
    return FeatureCloned(
        name=cmd.name,
        project=project_id,
        feature_type=source["type"],
        description=source["description"],
        impression_data=source["impression_data"],
        created_at=datetime.now(UTC),
        source=name,
        source_project=source["project"],
        source_position=position or 0,
        environments=[
            ClonedEnvironment(
                environment=env, strategies=strategies[env], variants=variants.get(env, [])
            )
            for env in environments
        ],
        dependencies=[
            ClonedDependency(
                parent=r["parent"], enabled=r["enabled"], variants=_strings.decode(r["variants"])
            )
            for r in await conn.fetch(SOURCE_DEPENDENCIES, name, project_id)
        ],
        tags=[
            ClonedTag(tag_type=r["type"], value=r["value"])
            for r in await conn.fetch(SOURCE_TAGS, name)
        ],
    )


def _strategy(row: Any) -> StrategyData:
    return StrategyData(
        id=row["id"],
        name=row["name"],
        title=row["title"],
        disabled=row["disabled"],
        sort_order=row["sort_order"],
        constraints=_constraints.decode(row["constraints"]),
        parameters=_parameters.decode(row["parameters"]),
        variants=_strategy_variants.decode(row["variants"]),
        segments=list(row["segments"]),
    )


ROUTES = [
    Route(
        "POST",
        "/api/admin/projects/{projectId}/features/{featureName}/clone",
        clone_feature,
        auth.CREATE_FEATURE,
        body=True,
    ),
]
