"""HTTP handlers for a flag's per-environment configuration: strategies, switch, variants."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import msgspec
from aiohttp import web

from service import auth, store
from service.appkeys import POOL, REQUEST_ID
from service.errors import NotFound, ValidationError
from service.features import domain, queries
from service.features.commands import StrategyBody, Variants
from service.features.events import (
    EnvironmentVariantsSet,
    FeatureEnvironmentDisabled,
    FeatureEnvironmentEnabled,
    StrategyAdded,
    StrategyRemoved,
    StrategyUpdated,
)
from service.http import Route, json_response, principal, read_json
from service.segments import queries as segment_queries

if TYPE_CHECKING:
    from service.connections import Conn
    from service.events import Event

BASE = "/api/admin/projects/{projectId}/features/{featureName}/environments/{environment}"
_json = msgspec.json.Decoder()


class Target(msgspec.Struct, frozen=True):
    feature: str
    project: str
    environment: str


def _target(request: web.Request) -> Target:
    info = request.match_info
    return Target(info["featureName"], info["projectId"], info["environment"])


async def _lock(conn: Conn, target: Target) -> None:
    """Lock the flag's row (changes to one flag queue) and check the environment is usable."""
    row = await conn.fetchrow(
        queries.LOCK_ACTIVE_FEATURE, target.feature, target.project, target.environment
    )
    if row is None:
        raise NotFound(f"There is no flag named {target.feature} in project {target.project}")
    if not row["environment_enabled"]:
        raise NotFound(
            f"Environment {target.environment} is not enabled in project {target.project}"
        )


async def _record(request: web.Request, conn: Conn, target: Target, event: Event) -> None:
    meta = principal(request).metadata(request[REQUEST_ID])
    await store.append_to_current(conn, domain.stream(target.feature), [event], meta)


async def _check_segments(conn: Conn, segments: list[int]) -> None:
    """Every referenced segment exists; they stay (share-locked) until this transaction ends."""
    if not segments:
        return
    found = {r["id"] for r in await conn.fetch(segment_queries.LOCK_EXISTING, segments)}
    missing = [s for s in segments if s not in found]
    if missing:
        raise ValidationError(f"Segment {missing[0]} does not exist - at `$.segments`")


async def list_strategies(request: web.Request) -> web.Response:
    target = _target(request)
    async with request.app[POOL].acquire() as conn, conn.transaction():
        await _lock(conn, target)
        raw = await conn.fetchval(queries.STRATEGIES_JSON, target.feature, target.environment)
    return web.Response(body=raw, content_type="application/json")


async def add_strategy(request: web.Request) -> web.Response:
    target = _target(request)
    body = await read_json(request, StrategyBody)
    async with request.app[POOL].acquire() as conn, conn.transaction():
        await _lock(conn, target)
        await _check_segments(conn, body.segments)
        sort_order = await conn.fetchval(
            queries.NEXT_STRATEGY_SORT_ORDER, target.feature, target.environment
        )
        data = domain.strategy_data(body, str(uuid.uuid4()), sort_order)
        event = StrategyAdded(
            name=target.feature,
            project=target.project,
            environment=target.environment,
            strategy=data,
            added_at=datetime.now(UTC),
        )
        await _record(request, conn, target, event)
        raw = await conn.fetchval(queries.STRATEGY_JSON, uuid.UUID(data.id))
    return web.Response(body=raw, content_type="application/json")


async def update_strategy(request: web.Request) -> web.Response:
    target = _target(request)
    body = await read_json(request, StrategyBody)  # a bad body is a 400 before any 404
    strategy_id = _strategy_id(request)
    async with request.app[POOL].acquire() as conn, conn.transaction():
        await _lock(conn, target)
        await _existing_strategy(conn, target, strategy_id)
        await _check_segments(conn, body.segments)
        data = domain.strategy_data(body, str(strategy_id), 0)
        if body.sort_order is None:  # a PUT without sortOrder keeps the strategy's place
            current = _json.decode(await conn.fetchval(queries.STRATEGY_JSON, strategy_id))
            data = msgspec.structs.replace(data, sort_order=current["sortOrder"])
        event = StrategyUpdated(
            name=target.feature,
            project=target.project,
            environment=target.environment,
            strategy=data,
        )
        await _record(request, conn, target, event)
        raw = await conn.fetchval(queries.STRATEGY_JSON, strategy_id)
    return web.Response(body=raw, content_type="application/json")


async def remove_strategy(request: web.Request) -> web.Response:
    target = _target(request)
    strategy_id = _strategy_id(request)
    async with request.app[POOL].acquire() as conn, conn.transaction():
        await _lock(conn, target)
        await _existing_strategy(conn, target, strategy_id)
        event = StrategyRemoved(
            name=target.feature,
            project=target.project,
            environment=target.environment,
            strategy_id=str(strategy_id),
        )
        await _record(request, conn, target, event)
    return web.Response(status=200)


def _strategy_id(request: web.Request) -> uuid.UUID:
    value = request.match_info["strategyId"]
    try:
        return uuid.UUID(value)
    except ValueError:
        raise NotFound(f"Could not find strategy with id={value}") from None


async def _existing_strategy(conn: Conn, target: Target, strategy_id: uuid.UUID) -> None:
    found = await conn.fetchval(
        queries.STRATEGY_IN, strategy_id, target.feature, target.environment
    )
    if found is None:
        raise NotFound(f"Could not find strategy with id={strategy_id}")


async def switch_on(request: web.Request) -> web.Response:
    return await _switch(request, on=True)


async def switch_off(request: web.Request) -> web.Response:
    return await _switch(request, on=False)


async def _switch(request: web.Request, *, on: bool) -> web.Response:
    target = _target(request)
    async with request.app[POOL].acquire() as conn, conn.transaction():
        await _lock(conn, target)
        enabled = await conn.fetchval(queries.ENVIRONMENT_STATE, target.feature, target.environment)
        if bool(enabled) != on:  # switching to the state it has records nothing
            kind = FeatureEnvironmentEnabled if on else FeatureEnvironmentDisabled
            event = kind(
                name=target.feature, project=target.project, environment=target.environment
            )
            await _record(request, conn, target, event)
    return web.Response(status=200)


async def set_variants(request: web.Request) -> web.Response:
    target = _target(request)
    variants = await read_json(request, Variants)
    async with request.app[POOL].acquire() as conn, conn.transaction():
        await _lock(conn, target)
        event = EnvironmentVariantsSet(
            name=target.feature,
            project=target.project,
            environment=target.environment,
            variants=domain.environment_variants(variants),
        )
        await _record(request, conn, target, event)
        raw = await conn.fetchval(queries.VARIANTS_JSON, target.feature, target.environment)
    return json_response({"version": 1, "variants": _json.decode(raw)})


ROUTES = [
    Route("GET", f"{BASE}/strategies", list_strategies, auth.READ),
    Route("POST", f"{BASE}/strategies", add_strategy, auth.UPDATE_FEATURE, body=True),
    Route(
        "PUT", f"{BASE}/strategies/{{strategyId}}", update_strategy, auth.UPDATE_FEATURE, body=True
    ),
    Route("DELETE", f"{BASE}/strategies/{{strategyId}}", remove_strategy, auth.UPDATE_FEATURE),
    Route("POST", f"{BASE}/on", switch_on, auth.UPDATE_FEATURE),
    Route("POST", f"{BASE}/off", switch_off, auth.UPDATE_FEATURE),
    Route("PUT", f"{BASE}/variants", set_variants, auth.UPDATE_FEATURE, body=True),
]
