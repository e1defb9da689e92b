"""HTTP handlers of /api/admin/strategies (docs/behavior.md, "Strategy types")."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from service import auth
from service.errors import Conflict, InvalidOperation, NameExists
from service.http.answers import empty, json_response
from service.http.past import reading
from service.http.requests import actor, read_json, unit_of_work
from service.http.routes import Link, Route
from service.strategies import domain, queries
from service.strategies.commands import CreateStrategyType, UpdateStrategyType
from service.strategies.responses import StrategyType, StrategyTypeList

if TYPE_CHECKING:
    from aiohttp import web

    from eventlog.codec import DomainEvent

BASE = "/api/admin/strategies"


async def list_strategy_types(request: web.Request) -> web.Response:
    async with reading(request) as conn:
        types = await queries.strategy_types(conn)
    return json_response(
        StrategyTypeList(version=1, strategies=[StrategyType.of(t) for t in types])
    )


async def get_strategy_type(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    async with reading(request) as conn:
        found = await queries.strategy_type(conn, name)
    if found is None:
        raise domain.missing(name)
    return json_response(StrategyType.of(found))


async def create_strategy_type(request: web.Request) -> web.Response:
    body = await read_json(request, CreateStrategyType)
    async with unit_of_work(request) as uow:
        await queries.lock_name(uow.conn, body.name)
        current = await queries.strategy_type(uow.conn, body.name, lock=True)
        event = domain.create_strategy_type(body, current=current, now=datetime.now(UTC))
        await uow.append(domain.stream(body.name), [event], actor(request))
        created = await queries.strategy_type(uow.conn, body.name)
    assert created is not None  # the inline projection wrote it in this transaction
    return json_response(StrategyType.of(created), status=201)


async def update_strategy_type(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    body = await read_json(request, UpdateStrategyType)
    async with unit_of_work(request) as uow:
        await queries.lock_name(uow.conn, name)
        current = await queries.strategy_type(uow.conn, name, lock=True)
        event = domain.update_strategy_type(name, body, current=current)
        await uow.append(domain.stream(name), [event], actor(request))
    return empty()


async def deprecate_strategy_type(request: web.Request) -> web.Response:
    return await _deprecation(request, deprecated=True)


async def reactivate_strategy_type(request: web.Request) -> web.Response:
    return await _deprecation(request, deprecated=False)


async def _deprecation(request: web.Request, *, deprecated: bool) -> web.Response:
    name = request.match_info["strategyName"]
    async with unit_of_work(request) as uow:
        await queries.lock_name(uow.conn, name)
        current = await queries.strategy_type(uow.conn, name, lock=True)
        decide = domain.deprecate_strategy_type if deprecated else domain.reactivate_strategy_type
        event: DomainEvent | None = decide(name, current=current)
        if event is not None:
            await uow.append(domain.stream(name), [event], actor(request))
    return empty()


async def delete_strategy_type(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    async with unit_of_work(request) as uow:
        await queries.lock_name(uow.conn, name)
        current = await queries.strategy_type(uow.conn, name, lock=True)
        # Counted after the lock: a flag's strategy that took the type up meanwhile held the
        # row FOR SHARE, committed, and is counted by this later statement.
        used_by = await uow.conn.fetchval(queries.USED_BY, name) if current else 0
        event = domain.delete_strategy_type(name, current=current, used_by=used_by)
        await uow.append(domain.stream(name), [event], actor(request))
    return empty()


ROUTES = [
    Route("GET", BASE, list_strategy_types, auth.READ, ok={200: StrategyTypeList}, past=True),
    Route(
        "POST",
        BASE,
        create_strategy_type,
        auth.CREATE_STRATEGY,
        body=CreateStrategyType,
        ok={201: StrategyType},
        errors=(NameExists,),
        links={"strategy": Link(get_strategy_type, {"name": "$response.body#/name"})},
    ),
    Route(
        "GET", f"{BASE}/{{name}}", get_strategy_type, auth.READ, ok={200: StrategyType}, past=True
    ),
    Route(
        "PUT",
        f"{BASE}/{{name}}",
        update_strategy_type,
        auth.UPDATE_STRATEGY,
        body=UpdateStrategyType,
        ok={200: None},
        errors=(InvalidOperation,),
    ),
    Route(
        "DELETE",
        f"{BASE}/{{name}}",
        delete_strategy_type,
        auth.DELETE_STRATEGY,
        ok={200: None},
        errors=(InvalidOperation, Conflict),
    ),
    Route(
        "POST",
        f"{BASE}/{{strategyName}}/deprecate",
        deprecate_strategy_type,
        auth.UPDATE_STRATEGY,
        ok={200: None},
    ),
    Route(
        "POST",
        f"{BASE}/{{strategyName}}/reactivate",
        reactivate_strategy_type,
        auth.UPDATE_STRATEGY,
        ok={200: None},
    ),
]
