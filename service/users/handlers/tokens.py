"""Personal access tokens: the signed-in user's own (`/api/admin/user/tokens`), and the shared
create and delete steps that service-account tokens use too."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import msgspec

from service import auth
from service.appkeys import POOL
from service.errors import NameExists, NotFound, PatLimit
from service.http.answers import empty, json_response
from service.http.requests import actor, principal, read_json, unit_of_work
from service.http.routes import NUMBERED, Route
from service.users import domain, queries
from service.users.commands import CreatePersonalAccessToken
from service.users.responses import PersonalAccessToken, PersonalAccessTokenList

if TYPE_CHECKING:
    from aiohttp import web

    from eventlog.events.base import Metadata
    from service.work import UnitOfWork


async def list_own_tokens(request: web.Request) -> web.Response:
    rows = await request.app[POOL].fetch(queries.OWN_PATS, _own_id(request))
    return json_response(PersonalAccessTokenList.from_rows(rows))


async def create_own_token(request: web.Request) -> web.Response:
    cmd = await read_json(request, CreatePersonalAccessToken)
    async with unit_of_work(request) as uow:
        body = await create_token(uow, _own_id(request), domain.USER, cmd, actor(request))
    return json_response(body, status=201)


async def delete_own_token(request: web.Request) -> web.Response:
    token_id = token_id_or_404(request.match_info["id"])
    async with unit_of_work(request) as uow:
        await delete_token(uow, _own_id(request), domain.USER, token_id, actor(request))
    return empty()


async def create_token(
    uow: UnitOfWork,
    account_id: int,
    account_type: str,
    cmd: CreatePersonalAccessToken,
    meta: Metadata,
) -> PersonalAccessToken:
    """A new token for the account (locked, so limits hold under concurrency); the body of the
    201 answer, the only place its secret ever appears."""
    account = await queries.lock_account(uow.conn, account_id)
    existing = [
        r["description"] for r in await uow.conn.fetch(queries.PAT_DESCRIPTIONS, account_id)
    ]
    secret = auth.PAT_PREFIX + auth.new_secret()
    event = domain.create_personal_access_token(
        cmd,
        account,
        account_id=account_id,
        account_type=account_type,
        token_id=await uow.conn.fetchval(queries.NEXT_PAT_ID),
        existing=existing,
        secret=domain.NewSecret(hash=auth.hash_secret(secret), hint=auth.secret_hint(secret)),
        now=datetime.now(UTC),
    )
    await uow.append(domain.account_stream(account_type, account_id), [event], meta)
    row = await uow.conn.fetchrow(queries.PAT, event.token_id)
    assert row is not None  # the inline projection wrote it in this transaction
    return msgspec.structs.replace(PersonalAccessToken.from_row(row), secret=secret)


async def delete_token(
    uow: UnitOfWork, account_id: int, account_type: str, token_id: int, meta: Metadata
) -> None:
    account = await queries.lock_account(uow.conn, account_id)
    event = domain.delete_personal_access_token(
        account,
        account_id=account_id,
        account_type=account_type,
        token_id=token_id,
        token_exists=await uow.conn.fetchrow(queries.LOCK_PAT, token_id, account_id) is not None,
    )
    await uow.append(domain.account_stream(account_type, account_id), [event], meta)


def token_id_or_404(value: str) -> int:
    if not (value.isascii() and value.isdigit()) or len(value) > 18:
        raise NotFound("No PAT found.")
    return int(value)


def _own_id(request: web.Request) -> int:
    account_id = principal(request).account_id
    assert account_id is not None  # OWN_ACCOUNT is held by people only
    return account_id


ROUTES = [
    Route(
        "GET",
        "/api/admin/user/tokens",
        list_own_tokens,
        auth.OWN_ACCOUNT,
        ok={200: PersonalAccessTokenList},
    ),
    Route(
        "POST",
        "/api/admin/user/tokens",
        create_own_token,
        auth.OWN_ACCOUNT,
        body=CreatePersonalAccessToken,
        ok={201: PersonalAccessToken},
        errors=(PatLimit, NameExists),
    ),
    Route(
        "DELETE", "/api/admin/user/tokens/{id}", delete_own_token, auth.OWN_ACCOUNT, params=NUMBERED
    ),
]
