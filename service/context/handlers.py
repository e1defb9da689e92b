"""HTTP handlers of /api/admin/context (docs/behavior.md, "Context fields")."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from service import auth
from service.appkeys import POOL
from service.context import domain, queries
from service.context.commands import CreateField, FieldName, OneLegalValue, UpdateField
from service.context.responses import (
    ConstrainedStrategies,
    ConstrainedStrategy,
    ContextField,
    ListedContextField,
)
from service.errors import InvalidOperation, NameExists
from service.http.answers import empty, json_response
from service.http.past import reading
from service.http.requests import actor, read_json, unit_of_work
from service.http.routes import Link, Route

if TYPE_CHECKING:
    from aiohttp import web

BASE = "/api/admin/context"
# `validate` is POST /api/admin/context/validate, never a field (domain.RESERVED): the path of
# one field does not take it, so that route alone answers there (a 405 names its methods).
ONE = BASE + "/{contextField:(?!validate$)[^/]+}"
USING = BASE + "/{contextField}/strategies"
LEGAL_VALUES = BASE + "/{contextField}/legal-values"


async def list_context_fields(request: web.Request) -> web.Response:
    async with reading(request) as conn:
        fields = await queries.fields(conn)
        usage = await queries.usage(conn)
    return json_response([ListedContextField.listed(f, usage.get(f.name)) for f in fields])


async def get_context_field(request: web.Request) -> web.Response:
    name = request.match_info["contextField"]
    async with reading(request) as conn:
        found = await queries.field(conn, name)
    if found is None:
        raise domain.missing(name)
    return json_response(ContextField.of(found))


async def strategies_using_context_field(request: web.Request) -> web.Response:
    """Also for a name no field has (any more), as Unleash: constraints hold names."""
    name = request.match_info["contextField"]
    async with reading(request) as conn:
        rows = await conn.fetch(queries.STRATEGIES_USING, name)
    return json_response(
        ConstrainedStrategies(strategies=[ConstrainedStrategy.from_row(r) for r in rows])
    )


async def validate_context_field_name(request: web.Request) -> web.Response:
    body = await read_json(request, FieldName)
    async with request.app[POOL].acquire() as conn:
        current = await queries.field(conn, body.name)
    domain.validate_field_name(body, current=current)
    return empty()


async def create_context_field(request: web.Request) -> web.Response:
    body = await read_json(request, CreateField)
    async with unit_of_work(request) as uow:
        await queries.lock_name(uow.conn, body.name)
        current = await queries.field(uow.conn, body.name, lock=True)
        event = domain.create_field(body, current=current, now=datetime.now(UTC))
        await uow.append(domain.stream(body.name), [event], actor(request))
        created = await queries.field(uow.conn, body.name)
    assert created is not None  # the inline projection wrote it in this transaction
    return json_response(ContextField.of(created), status=201)


async def update_context_field(request: web.Request) -> web.Response:
    name = request.match_info["contextField"]
    body = await read_json(request, UpdateField)
    async with unit_of_work(request) as uow:
        await queries.lock_name(uow.conn, name)
        current = await queries.field(uow.conn, name, lock=True)
        event = domain.update_field(name, body, current=current)
        await uow.append(domain.stream(name), [event], actor(request))
    return empty()


async def delete_context_field(request: web.Request) -> web.Response:
    name = request.match_info["contextField"]
    async with unit_of_work(request) as uow:
        await queries.lock_name(uow.conn, name)
        current = await queries.field(uow.conn, name, lock=True)
        event = domain.delete_field(name, current=current)
        await uow.append(domain.stream(name), [event], actor(request))
    return empty()


async def put_legal_value(request: web.Request) -> web.Response:
    name = request.match_info["contextField"]
    body = await read_json(request, OneLegalValue)
    async with unit_of_work(request) as uow:
        await queries.lock_name(uow.conn, name)
        current = await queries.field(uow.conn, name, lock=True)
        event = domain.put_legal_value(name, body, current=current)
        if event is not None:
            await uow.append(domain.stream(name), [event], actor(request))
    return empty()


async def delete_legal_value(request: web.Request) -> web.Response:
    name = request.match_info["contextField"]
    async with unit_of_work(request) as uow:
        await queries.lock_name(uow.conn, name)
        current = await queries.field(uow.conn, name, lock=True)
        event = domain.delete_legal_value(name, request.match_info["value"], current=current)
        if event is not None:
            await uow.append(domain.stream(name), [event], actor(request))
    return empty()


ROUTES = [
    Route(
        "GET", BASE, list_context_fields, auth.READ, ok={200: list[ListedContextField]}, past=True
    ),
    Route(
        "POST",
        BASE,
        create_context_field,
        auth.CREATE_CONTEXT_FIELD,
        body=CreateField,
        ok={201: ContextField},
        errors=(NameExists,),
        links={"field": Link(get_context_field, {"contextField": "$response.body#/name"})},
    ),
    Route(
        "POST",
        f"{BASE}/validate",
        validate_context_field_name,
        auth.UPDATE_CONTEXT_FIELD,  # as Unleash
        body=FieldName,
        ok={200: None},
        errors=(NameExists,),
    ),
    Route("GET", ONE, get_context_field, auth.READ, ok={200: ContextField}, past=True),
    Route(
        "PUT",
        ONE,
        update_context_field,
        auth.UPDATE_CONTEXT_FIELD,
        body=UpdateField,
        ok={200: None},
    ),
    Route(
        "DELETE",
        ONE,
        delete_context_field,
        auth.DELETE_CONTEXT_FIELD,
        ok={200: None},
        errors=(InvalidOperation,),
    ),
    Route(
        "GET",
        USING,
        strategies_using_context_field,
        auth.READ,
        ok={200: ConstrainedStrategies},
        past=True,
    ),
    Route(
        "POST",
        LEGAL_VALUES,
        put_legal_value,
        auth.UPDATE_CONTEXT_FIELD,
        body=OneLegalValue,
        ok={200: None},
    ),
    Route(
        "DELETE",
        LEGAL_VALUES + "/{value}",
        delete_legal_value,
        auth.UPDATE_CONTEXT_FIELD,
        ok={200: None},
    ),
]
