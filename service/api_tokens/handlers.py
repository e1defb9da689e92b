"""HTTP handlers of /api/admin/api-tokens."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from service import auth
from service.api_tokens import domain, queries
from service.api_tokens.commands import CreateApiToken
from service.api_tokens.responses import ApiToken, ApiTokenList
from service.http.answers import empty, json_response
from service.http.past import reading
from service.http.requests import actor, read_json, unit_of_work
from service.http.routes import Route

if TYPE_CHECKING:
    from aiohttp import web


async def list_api_tokens(request: web.Request) -> web.Response:
    async with reading(request) as conn:
        rows = await conn.fetch(queries.LIST_TOKENS)
    return json_response(ApiTokenList(tokens=[ApiToken.from_row(r) for r in rows]))


async def create_api_token(request: web.Request) -> web.Response:
    cmd = await read_json(request, CreateApiToken)
    async with unit_of_work(request) as uow:
        known = await uow.conn.fetchrow(queries.KNOWN_SCOPES)
        assert known is not None  # a SELECT without FROM always has its row
        event, secret = domain.create_api_token(
            cmd,
            token_id=await uow.conn.fetchval(queries.NEXT_TOKEN_ID),
            random=auth.new_secret(),
            environments=set(known["environments"]),
            projects=set(known["projects"]),
            now=datetime.now(UTC),
        )
        stream = domain.stream(event.token_id)
        await uow.append(stream, [event], actor(request), new=True)
        row = await uow.conn.fetchrow(queries.GET_TOKEN, event.token_id)
    assert row is not None  # written or locked in this transaction
    return json_response(ApiToken.from_row(row, secret), status=201)


async def delete_api_token(request: web.Request) -> web.Response:
    """By id, or, as Unleash clients do, by the secret itself (found by its hash)."""
    key = request.match_info["id"]
    async with unit_of_work(request) as uow:
        if key.isascii() and key.isdigit() and len(key) <= 18:
            row = await uow.conn.fetchrow(queries.LOCK_TOKEN, int(key))
        else:
            row = await uow.conn.fetchrow(queries.LOCK_TOKEN_BY_HASH, auth.hash_secret(key))
        event = domain.delete_api_token(None if row is None else (row["id"], row["token_name"]))
        await uow.append(domain.stream(event.token_id), [event], actor(request))
    return empty()


ROUTES = [
    Route(
        "GET",
        "/api/admin/api-tokens",
        list_api_tokens,
        auth.ADMIN,
        ok={200: ApiTokenList},
        past=True,
    ),
    Route(
        "POST",
        "/api/admin/api-tokens",
        create_api_token,
        auth.ADMIN,
        body=CreateApiToken,
        ok={201: ApiToken},
    ),
    Route("DELETE", "/api/admin/api-tokens/{id}", delete_api_token, auth.ADMIN),
]
