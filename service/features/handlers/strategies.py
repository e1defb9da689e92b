"""HTTP handlers for a flag's per-environment configuration: strategies (and their order),
switch, variants (one environment's, or the same in several)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

import msgspec

from service import auth
from service.errors import ValidationError
from service.features import domain, queries
from service.features.commands import SortOrders, StrategyBody, Variants, VariantsBatch
from service.features.patches import Patch
from service.features.responses import Strategy, VariantList
from service.http.answers import empty, json_response
from service.http.past import reading
from service.http.requests import actor, query_param, read_json, unit_of_work
from service.http.routes import Param, Route

if TYPE_CHECKING:
    from aiohttp import web

BASE = "/api/admin/projects/{projectId}/features/{featureName}/environments/{environment}"
# One strategy: any id but `set-sort-order`, whose path is a route of its own (405 answers of
# either then list only its own methods in Allow).
STRATEGY = BASE + "/strategies/{strategyId:(?!set-sort-order$)[^/]+}"


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


async def get_strategy(request: web.Request) -> web.Response:
    target = _target(request)
    strategy_id = _strategy_id(request)
    async with reading(request) as conn:
        domain.check_target(target, await queries.environment_state(conn, target))
        row = await conn.fetchrow(
            queries.STRATEGY_IN, strategy_id, target.feature, target.environment
        )
    if row is None:
        raise domain.strategy_not_found(strategy_id)
    return json_response(Strategy.from_row(row))


async def patch_strategy(request: web.Request) -> web.Response:
    """JSON Patch over the strategy as GET shows it; the result is saved as a PUT saves it
    (the UI's "disable strategy" sends `replace /disabled`)."""
    target = _target(request)
    operations = await read_json(request, Patch)
    strategy_id = _strategy_id(request)
    async with unit_of_work(request) as uow:
        state = await queries.environment_state(uow.conn, target, lock=True)
        domain.check_target(target, state)
        row = await uow.conn.fetchrow(
            queries.STRATEGY_IN, strategy_id, target.feature, target.environment
        )
        if row is None:
            raise domain.strategy_not_found(strategy_id)
        current = msgspec.to_builtins(Strategy.from_row(row))
        body = domain.patched_strategy(current, operations)
        known = await queries.strategy_type_known(uow.conn, body.name)
        domain.check_strategy_type(target, state, body.name, known=known)
        event = domain.update_strategy(
            target,
            body,
            state,
            strategy_id=str(strategy_id),
            current_sort_order=row["sort_order"],
            missing_segments=await queries.missing_segments(uow.conn, body.segments),
        )
        await uow.append(domain.stream(target.feature), [event], actor(request))
        row = await uow.conn.fetchrow(queries.STRATEGY, strategy_id)
    assert row is not None  # the inline projection wrote it in this transaction
    return json_response(Strategy.from_row(row))


async def set_sort_order(request: web.Request) -> web.Response:
    target = _target(request)
    orders = await read_json(request, SortOrders)
    async with unit_of_work(request) as uow:
        state = await queries.environment_state(uow.conn, target, lock=True)
        rows = await uow.conn.fetch(queries.SORT_ORDERS_IN, target.feature, target.environment)
        event = domain.reorder_strategies(
            target, orders, state, current={r["id"]: r["sort_order"] for r in rows}
        )
        if event is not None:
            await uow.append(domain.stream(target.feature), [event], actor(request))
    return empty()


ACTIVATE: Final = Param(
    "shouldActivateDisabledStrategies",
    bool,
    "`true`: the strategies disabled there are enabled too (Unleash's dialog offers it when"
    " every strategy there is disabled); default `false`",
)


def _flag_param(request: web.Request, param: Param) -> bool:
    value = query_param(request, param.name)
    if value in (None, "", "false"):
        return False
    if value == "true":
        return True
    raise ValidationError(f"{param.name} is true or false - at `{param.name}`")


async def switch_on(request: web.Request) -> web.Response:
    target = _target(request)
    activate = _flag_param(request, ACTIVATE)
    async with unit_of_work(request) as uow:
        state = await queries.environment_state(uow.conn, target, lock=True)
        events = domain.switch_on(
            target,
            state,
            strategies=await queries.strategies_in(uow.conn, target) if state else [],
            activate=activate,
            new_id=lambda: str(uuid.uuid4()),
            now=datetime.now(UTC),
            default=await queries.default_strategy(uow.conn, target.project, target.environment),
        )
        if events:
            await uow.append(domain.stream(target.feature), events, actor(request))
    return empty()


async def switch_off(request: web.Request) -> web.Response:
    target = _target(request)
    async with unit_of_work(request) as uow:
        state = await queries.environment_state(uow.conn, target, lock=True)
        event = domain.switch_environment(target, state, on=False)
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


async def get_variants(request: web.Request) -> web.Response:
    target = _target(request)
    async with reading(request) as conn:
        domain.check_target(target, await queries.environment_state(conn, target))
        column = await conn.fetchval(queries.VARIANTS, target.feature, target.environment)
    return json_response(VariantList.from_column(column))


async def patch_variants(request: web.Request) -> web.Response:
    """JSON Patch over the environment's variants as GET shows them; the result is saved as
    a PUT saves it (the UI's variants dialog sends the difference it made)."""
    target = _target(request)
    operations = await read_json(request, Patch)
    async with unit_of_work(request) as uow:
        state = await queries.environment_state(uow.conn, target, lock=True)
        domain.check_target(target, state)
        column = await uow.conn.fetchval(queries.VARIANTS, target.feature, target.environment)
        current = msgspec.to_builtins(VariantList.from_column(column).variants)
        variants = domain.patched_variants(current, operations)
        event = domain.set_environment_variants(target, variants, state)
        await uow.append(domain.stream(target.feature), [event], actor(request))
        column = await uow.conn.fetchval(queries.VARIANTS, target.feature, target.environment)
    return json_response(VariantList.from_column(column))


async def set_variants_batch(request: web.Request) -> web.Response:
    """The same variants in each listed environment of the flag (Unleash's "push to other
    environments"); all or nothing."""
    feature, project = request.match_info["featureName"], request.match_info["projectId"]
    body = await read_json(request, VariantsBatch)
    async with unit_of_work(request) as uow:
        states = {
            environment: await queries.environment_state(
                uow.conn, domain.Target(feature, project, environment), lock=True
            )
            for environment in dict.fromkeys(body.environments)
        }
        events = domain.set_variants_batch(feature, project, body, states)
        await uow.append(domain.stream(feature), events, actor(request))
        column = await uow.conn.fetchval(queries.VARIANTS, feature, events[0].environment)
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
        STRATEGY,
        update_strategy,
        auth.UPDATE_FEATURE,
        body=StrategyBody,
        ok={200: Strategy},
    ),
    Route("DELETE", STRATEGY, remove_strategy, auth.UPDATE_FEATURE),
    Route(
        "GET",
        STRATEGY,
        get_strategy,
        auth.READ,
        ok={200: Strategy},
        past=True,
    ),
    Route(
        "PATCH",
        STRATEGY,
        patch_strategy,
        auth.UPDATE_FEATURE,
        body=Patch,
        ok={200: Strategy},
    ),
    Route(
        "POST",
        f"{BASE}/strategies/set-sort-order",
        set_sort_order,
        auth.UPDATE_FEATURE,
        body=SortOrders,
    ),
    Route("POST", f"{BASE}/on", switch_on, auth.UPDATE_FEATURE, query=(ACTIVATE,)),
    Route("POST", f"{BASE}/off", switch_off, auth.UPDATE_FEATURE),
    Route(
        "PUT",
        f"{BASE}/variants",
        set_variants,
        auth.UPDATE_FEATURE,
        body=Variants,
        ok={200: VariantList},
    ),
    Route("GET", f"{BASE}/variants", get_variants, auth.READ, ok={200: VariantList}, past=True),
    Route(
        "PATCH",
        f"{BASE}/variants",
        patch_variants,
        auth.UPDATE_FEATURE,
        body=Patch,
        ok={200: VariantList},
    ),
    Route(
        "PUT",
        "/api/admin/projects/{projectId}/features/{featureName}/variants-batch",
        set_variants_batch,
        auth.UPDATE_FEATURE,
        body=VariantsBatch,
        ok={200: VariantList},
    ),
]
