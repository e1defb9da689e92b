"""Personal access tokens: the signed-in user's own (`/api/admin/user/tokens`), and the shared
create/delete steps that service-account tokens use too."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec
from aiohttp import web

from service import auth, store
from service.accounts import domain, queries
from service.accounts.commands import CreatePersonalAccessToken
from service.accounts.events import PersonalAccessTokenDeleted
from service.appkeys import POOL, REQUEST_ID
from service.errors import NotFound
from service.http import Route, json_response, principal, read_json

_record = msgspec.json.Decoder(dict[str, Any])

if TYPE_CHECKING:
    from service.connections import Conn
    from service.events import Metadata


async def list_own_tokens(request: web.Request) -> web.Response:
    user_id = _own_id(request)
    body = await request.app[POOL].fetchval(queries.OWN_PATS_JSON, user_id)
    return web.Response(text=body, content_type="application/json")


async def create_own_token(request: web.Request) -> web.Response:
    cmd = await read_json(request, CreatePersonalAccessToken)
    async with request.app[POOL].acquire() as conn, conn.transaction():
        body = await create_token(conn, _own_id(request), "User", cmd, _meta(request))
    return json_response(body, status=201)


async def delete_own_token(request: web.Request) -> web.Response:
    token_id = token_id_or_404(request.match_info["id"])
    async with request.app[POOL].acquire() as conn, conn.transaction():
        await delete_token(conn, _own_id(request), "User", token_id, _meta(request))
    return web.Response(status=200)


async def create_token(
    conn: Conn, account_id: int, account_type: str, cmd: CreatePersonalAccessToken, meta: Metadata
) -> dict[str, Any]:
    """A new token for the account (locked, so limits hold under concurrency); the body of the
    201 answer, the only place its secret ever appears."""
    if await conn.fetchrow(queries.LOCK_ACCOUNT, account_id, account_type) is None:
        raise NotFound(f"Could not find {_kind(account_type)} with id {account_id}")
    existing = [r["description"] for r in await conn.fetch(queries.PAT_DESCRIPTIONS, account_id)]
    secret = auth.PAT_PREFIX + auth.new_secret()
    token_id = await conn.fetchval(queries.NEXT_PAT_ID)
    event = domain.create_personal_access_token(
        token_id=token_id,
        user_id=account_id,
        description=cmd.description,
        existing=existing,
        secret_hash=auth.hash_secret(secret),
        hint=auth.secret_hint(secret),
        now=datetime.now(UTC),
        expires_at=cmd.expires_at,
        limit=domain.PAT_LIMIT if account_type == "User" else domain.SERVICE_ACCOUNT_TOKEN_LIMIT,
    )
    stream = domain.account_stream(account_type, account_id)
    await store.append(conn, stream, "any", [event], meta)
    record: dict[str, Any] = _record.decode(await conn.fetchval(queries.GET_PAT_BODY, token_id))
    return record | {"secret": secret}


async def delete_token(
    conn: Conn, account_id: int, account_type: str, token_id: int, meta: Metadata
) -> None:
    if await conn.fetchrow(queries.LOCK_ACCOUNT, account_id, account_type) is None:
        raise NotFound(f"Could not find {_kind(account_type)} with id {account_id}")
    if await conn.fetchrow(queries.LOCK_PAT, token_id, account_id) is None:
        raise NotFound("No PAT found.")
    event = PersonalAccessTokenDeleted(token_id=token_id, user_id=account_id)
    stream = domain.account_stream(account_type, account_id)
    await store.append(conn, stream, "any", [event], meta)


def token_id_or_404(value: str) -> int:
    if not (value.isascii() and value.isdigit()) or len(value) > 18:
        raise NotFound("No PAT found.")
    return int(value)


def _kind(account_type: str) -> str:
    return "user" if account_type == "User" else "service account"


def _own_id(request: web.Request) -> int:
    account_id = principal(request).account_id
    assert account_id is not None  # OWN_ACCOUNT is held by people only
    return account_id


def _meta(request: web.Request) -> Metadata:
    return principal(request).metadata(request[REQUEST_ID])


ROUTES = [
    Route("GET", "/api/admin/user/tokens", list_own_tokens, auth.OWN_ACCOUNT),
    Route("POST", "/api/admin/user/tokens", create_own_token, auth.OWN_ACCOUNT, body=True),
    Route("DELETE", "/api/admin/user/tokens/{id}", delete_own_token, auth.OWN_ACCOUNT),
]
