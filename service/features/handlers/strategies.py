"""HTTP handlers for a flag's per-environment configuration: strategies, switch, variants."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from service import auth
from service.features import domain, queries
from service.features.commands import StrategyBody, Variants
from service.features.responses import Strategy, VariantList
from service.http.answers import empty, json_response
from service.http.past import reading
from service.http.requests import actor, read_json, unit_of_work
from service.http.routes import Route

if TYPE_CHECKING:
    from aiohttp import web

BASE = "/api/admin/projects/{projectId}/features/{featureName}/environments/{environment}"


def _target(request: web.Request) -> domain.Target:
    info = request.match_info
    return domain.Target(info["featureName"], info["projectId"], info["environment"])


def _strategy_id(request: web.Request) -> uuid.UUID:
    value = request.match_info["strategyId"]
    try:
        return uuid.UUID(value)
    except ValueError:
        raise domain.strategy_not_found(value) from None


async def list_strategies(request: web.Request) -> web.Response:
    target = _target(request)
    async with reading(request) as conn:
        domain.check_target(target, await queries.environment_state(conn, target))
        rows = await conn.fetch(queries.STRATEGIES_IN, target.feature, target.environment)
    return json_response([Strategy.from_row(r) for r in rows])


async def add_strategy(request: web.Request) -> web.Response:
    target = _target(request)
    body = await read_json(request, StrategyBody)
    async with unit_of_work(request) as uow:
        state = await queries.environment_state(uow.conn, target, lock=True)
        known = await queries.strategy_type_known(uow.conn, body.name)
        domain.check_strategy_type(target, state, body.name, known=known)
        event = domain.add_strategy(
            target,
            body,
            state,
            missing_segments=await queries.missing_segments(uow.conn, body.segments),
            strategy_id=str(uuid.uuid4()),
            next_sort_order=await uow.conn.fetchval(
                queries.NEXT_STRATEGY_SORT_ORDER, target.feature, target.environment
            ),
            now=datetime.now(UTC),
        )
        await uow.append(domain.stream(target.feature), [event], actor(request))
        row = await uow.conn.fetchrow(queries.STRATEGY, uuid.UUID(event.strategy.id))
    assert row is not None  # the inline projection wrote it in this transaction
    return json_response(Strategy.from_row(row))


async def update_strategy(request: web.Request) -> web.Response:
    target = _target(request)
    body = await read_json(request, StrategyBody)  # a bad body is a 400 before any 404
    strategy_id = _strategy_id(request)
    async with unit_of_work(request) as uow:
        state = await queries.environment_state(uow.conn, target, lock=True)
        known = await queries.strategy_type_known(uow.conn, body.name)
        domain.check_strategy_type(target, state, body.name, known=known)
        event = domain.update_strategy(
            target,
            body,
            state,
            strategy_id=str(strategy_id),
            current_sort_order=await queries.strategy_sort_order(uow.conn, target, strategy_id),
            missing_segments=await queries.missing_segments(uow.conn, body.segments),
        )
        await uow.append(domain.stream(target.feature), [event], actor(request))
        row = await uow.conn.fetchrow(queries.STRATEGY, strategy_id)
    assert row is not None  # the inline projection wrote it in this transaction
    return json_response(Strategy.from_row(row))


async def remove_strategy(request: web.Request) -> web.Response:
    target = _target(request)
    strategy_id = _strategy_id(request)
    async with unit_of_work(request) as uow:
        state = await queries.environment_state(uow.conn, target, lock=True)
        event = domain.remove_strategy(
            target,
            state,
            strategy_id=str(strategy_id),
            exists=await queries.strategy_sort_order(uow.conn, target, strategy_id) is not None,
        )
        await uow.append(domain.stream(target.feature), [event], actor(request))
    return empty()


async def switch_on(request: web.Request) -> web.Response:
    return await _switch(request, on=True)


async def switch_off(request: web.Request) -> web.Response:
    return await _switch(request, on=False)


async def _switch(request: web.Request, *, on: bool) -> web.Response:
    target = _target(request)
    async with unit_of_work(request) as uow:
        state = await queries.environment_state(uow.conn, target, lock=True)
        event = domain.switch_environment(target, state, on=on)
        if event is not None:
            await uow.append(domain.stream(target.feature), [event], actor(request))
    return empty()


async def set_variants(request: web.Request) -> web.Response:
    target = _target(request)
    variants = await read_json(request, Variants)
    async with unit_of_work(request) as uow:
        state = await queries.environment_state(uow.conn, target, lock=True)
        event = domain.set_environment_variants(target, variants, state)
        await uow.append(domain.stream(target.feature), [event], actor(request))
        column = await uow.conn.fetchval(queries.VARIANTS, target.feature, target.environment)
    return json_response(VariantList.from_column(column))


ROUTES = [
    Route(
        "GET", f"{BASE}/strategies", list_strategies, auth.READ, ok={200: list[Strategy]}, past=True
    ),
    Route(
        "POST",
        f"{BASE}/strategies",
        add_strategy,
        auth.UPDATE_FEATURE,
        body=StrategyBody,
        ok={200: Strategy},
    ),
    Route(
        "PUT",
        f"{BASE}/strategies/{{strategyId}}",
        update_strategy,
        auth.UPDATE_FEATURE,
        body=StrategyBody,
        ok={200: Strategy},
    ),
    Route("DELETE", f"{BASE}/strategies/{{strategyId}}", remove_strategy, auth.UPDATE_FEATURE),
    Route("POST", f"{BASE}/on", switch_on, auth.UPDATE_FEATURE),
    Route("POST", f"{BASE}/off", switch_off, auth.UPDATE_FEATURE),
    Route(
        "PUT",
        f"{BASE}/variants",
        set_variants,
        auth.UPDATE_FEATURE,
        body=Variants,
        ok={200: VariantList},
    ),
]
