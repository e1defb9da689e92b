"""POST /api/admin/projects/:projectId/features/:featureName/clone (behavior.md section 2)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import msgspec

from service import auth, store
from service.appkeys import POOL, REQUEST_ID
from service.errors import NameExists, NotFound
from service.features import domain, queries
from service.features.commands import CloneFeature, Variant
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

    from service.connections import Conn


SOURCE = """
SELECT name, project, type, description, impression_data FROM features
WHERE name = $1 AND archived_at IS NULL FOR SHARE
"""
TARGET_PROJECT = "SELECT archived_at FROM projects WHERE id = $1 FOR SHARE"
# Everything the copy takes from its source, in one round trip (the source row is share-locked).
COPY_CONTEXT = """
SELECT
  (SELECT coalesce(array_agg(environment ORDER BY environment), '{}')
   FROM project_environments WHERE project_id = $2) AS environments,
  (SELECT coalesce(json_agg(json_build_object(
              'environment', s.environment, 'id', s.id, 'name', s.name, 'title', s.title,
              'disabled', s.disabled, 'sort_order', s.sort_order,
              'constraints', s.constraints, 'parameters', s.parameters,
              'variants', s.variants, 'segments', s.segments)
              ORDER BY s.environment, s.sort_order, s.created_at, s.id), '[]')
   FROM feature_strategies s
   JOIN project_environments pe ON pe.project_id = $2 AND pe.environment = s.environment
   WHERE s.feature_name = $1) AS strategies,
  (SELECT coalesce(json_object_agg(fe.environment, fe.variants), '{}')
   FROM feature_environments fe
   JOIN project_environments pe ON pe.project_id = $2 AND pe.environment = fe.environment
   WHERE fe.feature_name = $1) AS variants,
  (SELECT coalesce(json_agg(json_build_object(
              'parent', d.parent, 'enabled', d.enabled, 'variants', d.variants)
              ORDER BY d.parent), '[]')
   FROM feature_dependencies d JOIN features p ON p.name = d.parent
   WHERE d.child = $1 AND p.project = $2 AND p.archived_at IS NULL) AS dependencies,
  (SELECT coalesce(json_agg(json_build_object('tag_type', t.type, 'value', t.value)
              ORDER BY t.type, t.value), '[]')
   FROM feature_tags t WHERE t.feature_name = $1) AS tags,
  (SELECT position FROM events WHERE stream_type = 'feature' AND stream_key = $1
   ORDER BY stream_version DESC LIMIT 1) AS source_position
"""


class _StrategyRow(StrategyData, frozen=True, kw_only=True):
    """A source strategy and the environment it is in."""

    environment: str


_strategy_rows = msgspec.json.Decoder(list[_StrategyRow])
_variants_by_environment = msgspec.json.Decoder(dict[str, list[Variant]])
_dependencies = msgspec.json.Decoder(list[ClonedDependency])
_tags = msgspec.json.Decoder(list[ClonedTag])


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
        await store.append_new(
            conn, domain.stream(cmd.name), [event], meta, exists=domain.FLAG_EXISTS
        )
        body = await queries.feature_in_project(conn, cmd.name, project_id)
    return json_response(body)


async def _decide(
    conn: Conn, source: asyncpg.Record, project_id: str, cmd: CloneFeature
) -> FeatureCloned:
    """Everything the copy takes from its source, per behavior.md section 2."""
    context = await conn.fetchrow(COPY_CONTEXT, source["name"], project_id)
    assert context is not None  # a SELECT without FROM always yields its one row
    strategies: dict[str, list[StrategyData]] = {env: [] for env in context["environments"]}
    for row in _strategy_rows.decode(context["strategies"]):
        fields = msgspec.structs.asdict(row)
        del fields["environment"]  # the event's strategies are plain StrategyData
        copy = domain.clone_strategy(
            StrategyData(**fields), cmd.name, replace_group_id=cmd.replace_group_id
        )
        strategies[row.environment].append(copy)
    variants = _variants_by_environment.decode(context["variants"])
    return FeatureCloned(
        name=cmd.name,
        project=project_id,
        feature_type=source["type"],
        description=source["description"],
        impression_data=source["impression_data"],
        created_at=datetime.now(UTC),
        source=source["name"],
        source_project=source["project"],
        source_position=context["source_position"] or 0,
        environments=[
            ClonedEnvironment(environment=env, strategies=found, variants=variants.get(env, []))
            for env, found in strategies.items()
        ],
        dependencies=_dependencies.decode(context["dependencies"]),
        tags=_tags.decode(context["tags"]),
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
