"""HTTP handlers of /api/admin/api-tokens."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from service import auth
from service.api_tokens import domain, queries
from service.api_tokens.commands import CreateApiToken, UpdateApiToken
from service.api_tokens.responses import ApiToken, ApiTokenList
from service.appkeys import POOL
from service.errors import Conflict
from service.http.answers import empty, json_response
from service.http.past import reading
from service.http.requests import actor, principal, read_json, unit_of_work
from service.http.routes import Route

if TYPE_CHECKING:
    import asyncpg
    from aiohttp import web

    from eventlog.connections import Conn


def _shown(request: web.Request, rows: list[asyncpg.Record]) -> ApiTokenList:
    """The tokens the caller may see: all for an admin; the client and frontend tokens for an
    Editor, as Unleash's READ_CLIENT_API_TOKEN and READ_FRONTEND_API_TOKEN let it."""
    everything = principal(request).can(auth.ADMIN)
    return ApiTokenList(
        tokens=[ApiToken.from_row(r) for r in rows if everything or r["type"] != "admin"]
    )


async def list_api_tokens(request: web.Request) -> web.Response:
    async with reading(request) as conn:
        rows = await conn.fetch(queries.LIST_TOKENS)
    return json_response(_shown(request, rows))


async def create_api_token(request: web.Request) -> web.Response:
    return await _create(request, await read_json(request, CreateApiToken))


async def _create(request: web.Request, cmd: CreateApiToken) -> web.Response:
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
    """By id, or, as Unleash clients do, by the secret itself (found by its hash), or by the
    masked secret the list shows, which Unleash's web UI sends (when it names one token)."""
    key = request.match_info["token"]
    async with unit_of_work(request) as uow:
        if key.isascii() and key.isdigit() and len(key) <= 18:
            row = await uow.conn.fetchrow(queries.LOCK_TOKEN, int(key))
        else:
            row = await _by_secret_or_hint(
                uow.conn, key, queries.LOCK_TOKEN_BY_HASH, queries.LOCK_TOKEN
            )
        event = domain.delete_api_token(None if row is None else (row["id"], row["token_name"]))
        await uow.append(domain.stream(event.token_id), [event], actor(request))
    return empty()


async def _by_secret_or_hint(
    conn: Conn, key: str, by_hash: str, by_id: str
) -> asyncpg.Record | None:
    """The token (locked) a secret names, or a masked hint when it is one token's alone: the
    list shows only hints, and the UI names the token it deletes by what the list showed."""
    if not key.endswith(auth.HINT_MASK):
        row: asyncpg.Record | None = await conn.fetchrow(by_hash, auth.hash_secret(key))
        return row
    rows = await conn.fetch(queries.LOCK_TOKENS_BY_HINT, key)
    if len(rows) > 1:
        raise Conflict("Several API tokens show this masked secret: name the token by its id")
    if not rows:
        return None
    found: asyncpg.Record | None = await conn.fetchrow(by_id, rows[0]["id"])
    return found


async def tokens_named(request: web.Request) -> web.Response:
    """Unleash's `GET /api/admin/api-tokens/{name}`: the tokens with that name (none: [])."""
    async with reading(request) as conn:
        rows = await conn.fetch(queries.BY_NAME, request.match_info["token"])
    return json_response(_shown(request, rows))


async def change_expiry(request: web.Request) -> web.Response:
    """By the secret itself, as Unleash names the token."""
    cmd = await read_json(request, UpdateApiToken)
    secret_hash = auth.hash_secret(request.match_info["token"])
    async with unit_of_work(request) as uow:
        row = await uow.conn.fetchrow(queries.LOCK_TOKEN_BY_HASH, secret_hash)
        token = None if row is None else (row["id"], row["token_name"])
        event = domain.change_expiry(token, cmd.expires_at, datetime.now(UTC))
        await uow.append(domain.stream(event.token_id), [event], actor(request))
    return empty(200)


async def _project_exists(conn: Conn | asyncpg.Pool, project: str) -> None:
    if not await conn.fetchval(queries.PROJECT_EXISTS, project):
        raise domain.project_missing()


async def project_tokens(request: web.Request) -> web.Response:
    project = request.match_info["projectId"]
    async with reading(request) as conn:
        await _project_exists(conn, project)
        rows = await conn.fetch(queries.OF_PROJECT, project)
    return json_response(_shown(request, rows))


async def create_project_token(request: web.Request) -> web.Response:
    project = request.match_info["projectId"]
    cmd = await read_json(request, CreateApiToken)
    await _project_exists(request.app[POOL], project)
    return await _create(request, domain.project_token_command(cmd, project))


async def delete_project_token(request: web.Request) -> web.Response:
    project = request.match_info["projectId"]
    async with unit_of_work(request) as uow:
        await _project_exists(uow.conn, project)
        row = await _by_secret_or_hint(
            uow.conn,
            request.match_info["token"],
            queries.LOCK_PROJECT_TOKEN,
            queries.LOCK_PROJECT_TOKEN_BY_ID,
        )
        token = None if row is None else (row["id"], row["token_name"], list(row["projects"]))
        event = domain.delete_project_token(token, project)
        await uow.append(domain.stream(event.token_id), [event], actor(request))
    return empty(200)


PROJECT_TOKENS = "/api/admin/projects/{projectId}/api-tokens"
# One path, one parameter name, for the three methods (Unleash's document names it {name} for
# GET, {token} for PUT and DELETE): the OpenAPI document then lists the methods Allow lists.
# GET reads it as a token's name, PUT and DELETE as a token (its secret, masked secret or id).
ONE_TOKEN = "/api/admin/api-tokens/{token}"
ROUTES = [
    Route(
        "GET",
        "/api/admin/api-tokens",
        list_api_tokens,
        auth.READ_API_TOKEN,
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
    Route("DELETE", ONE_TOKEN, delete_api_token, auth.ADMIN, errors=(Conflict,)),
    Route(
        "GET",
        ONE_TOKEN,
        tokens_named,
        auth.READ_API_TOKEN,
        ok={200: ApiTokenList},
        past=True,
    ),
    Route(
        "PUT",
        ONE_TOKEN,
        change_expiry,
        auth.ADMIN,
        body=UpdateApiToken,
    ),
    Route(
        "GET",
        PROJECT_TOKENS,
        project_tokens,
        auth.READ_API_TOKEN,
        ok={200: ApiTokenList},
        past=True,
    ),
    Route(
        "POST",
        PROJECT_TOKENS,
        create_project_token,
        auth.ADMIN,
        body=CreateApiToken,
        ok={201: ApiToken},
    ),
    Route(
        "DELETE",
        PROJECT_TOKENS + "/{token}",
        delete_project_token,
        auth.ADMIN,
        errors=(Conflict,),
    ),
]
