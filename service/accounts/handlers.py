"""HTTP handlers of /api/admin/api-tokens."""

from __future__ import annotations

from datetime import UTC, datetime

from aiohttp import web

from service import auth, store
from service.accounts import domain, queries
from service.accounts.commands import CreateApiToken
from service.accounts.events import ApiTokenDeleted
from service.appkeys import POOL, REQUEST_ID
from service.errors import NotFound
from service.http import Route, json_response, principal, read_json


async def list_api_tokens(request: web.Request) -> web.Response:
    return json_response({"tokens": await queries.list_tokens(request.app[POOL])})


async def create_api_token(request: web.Request) -> web.Response:
    cmd = await read_json(request, CreateApiToken)
    name = domain.token_name(cmd)
    scope = domain.token_scope(cmd)
    secret = domain.token_secret(*scope, auth.new_secret())
    async with request.app[POOL].acquire() as conn, conn.transaction():
        known = await conn.fetchrow(queries.KNOWN_SCOPES)
        assert known is not None  # a SELECT without FROM always has its row
        domain.check_scope_exists(
            scope, environments=set(known["environments"]), projects=set(known["projects"])
        )
        token_id = await conn.fetchval(queries.NEXT_TOKEN_ID)
        event = domain.create_api_token(
            token_id=token_id,
            name=name,
            scope=scope,
            secret_hash=auth.hash_secret(secret),
            hint=auth.secret_hint(secret),
            now=datetime.now(UTC),
            expires_at=cmd.expires_at,
        )
        meta = principal(request).metadata(request[REQUEST_ID])
        await store.append(conn, domain.stream(token_id), "no-stream", [event], meta)
        row = await conn.fetchrow(queries.GET_TOKEN, token_id)
    assert row is not None  # the inline projection wrote it in this transaction
    body = queries.token_json(row) | {"secret": secret}
    return json_response(body, status=201)


async def delete_api_token(request: web.Request) -> web.Response:
    """By id, or, as Unleash clients do, by the secret itself (found by its hash)."""
    key = request.match_info["id"]
    async with request.app[POOL].acquire() as conn, conn.transaction():
        # The row lock makes concurrent deletes queue: the first deletes, the rest find nothing.
        if key.isascii() and key.isdigit() and len(key) <= 18:
            row = await conn.fetchrow(queries.LOCK_TOKEN, int(key))
        else:
            row = await conn.fetchrow(queries.LOCK_TOKEN_BY_HASH, auth.hash_secret(key))
        if row is None:
            raise NotFound("No API token found")
        token_id, name = row["id"], row["token_name"]
        event = ApiTokenDeleted(token_id=token_id, token_name=name)
        meta = principal(request).metadata(request[REQUEST_ID])
        await store.append_to_current(conn, domain.stream(token_id), [event], meta)
    return web.Response(status=200)


ROUTES = [
    Route("GET", "/api/admin/api-tokens", list_api_tokens, auth.ADMIN),
    Route("POST", "/api/admin/api-tokens", create_api_token, auth.ADMIN, body=True),
    Route("DELETE", "/api/admin/api-tokens/{id}", delete_api_token, auth.ADMIN),
]
