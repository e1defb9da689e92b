"""HTTP handlers of /api/admin/service-account: machine accounts and their tokens."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from service import auth
from service.errors import NameExists, PatLimit
from service.http.answers import empty, json_response
from service.http.past import reading
from service.http.requests import actor, read_json, unit_of_work
from service.http.routes import NUMBERED, Link, Route
from service.users import domain, queries
from service.users.commands import (
    CreatePersonalAccessToken,
    CreateServiceAccount,
    UpdateServiceAccount,
)
from service.users.handlers import tokens
from service.users.responses import (
    PersonalAccessToken,
    PersonalAccessTokenList,
    ServiceAccount,
    ServiceAccountList,
    root_roles,
)

if TYPE_CHECKING:
    from aiohttp import web


async def list_service_accounts(request: web.Request) -> web.Response:
    async with reading(request) as conn:
        rows = await conn.fetch(queries.LIST_SERVICE_ACCOUNTS)
    return json_response(
        ServiceAccountList(
            service_accounts=[ServiceAccount.from_row(r) for r in rows], root_roles=root_roles()
        )
    )


async def create_service_account(request: web.Request) -> web.Response:
    cmd = await read_json(request, CreateServiceAccount)
    async with unit_of_work(request) as uow:
        account_id = await uow.conn.fetchval(queries.NEXT_USER_ID)
        event = domain.create_service_account(
            cmd,
            account_id=account_id,
            username_taken=await uow.conn.fetchval(queries.USERNAME_TAKEN, cmd.username.strip()),
            now=datetime.now(UTC),
        )
        await uow.append(_stream(account_id), [event], actor(request), new=True)
        row = await uow.conn.fetchrow(queries.GET_SERVICE_ACCOUNT, account_id)
    assert row is not None  # written or locked in this transaction
    return json_response(ServiceAccount.from_row(row), status=201)


async def update_service_account(request: web.Request) -> web.Response:
    account_id = _account_id_or_404(request.match_info["id"])
    cmd = await read_json(request, UpdateServiceAccount)
    async with unit_of_work(request) as uow:
        account = await queries.lock_account(uow.conn, account_id)
        event = domain.update_service_account(account_id, account, cmd)
        if event is not None:
            await uow.append(_stream(account_id), [event], actor(request))
        row = await uow.conn.fetchrow(queries.GET_SERVICE_ACCOUNT, account_id)
    assert row is not None  # written or locked in this transaction
    return json_response(ServiceAccount.from_row(row))


async def delete_service_account(request: web.Request) -> web.Response:
    account_id = _account_id_or_404(request.match_info["id"])
    async with unit_of_work(request) as uow:
        account = await queries.lock_account(uow.conn, account_id)
        event = domain.delete_service_account(account_id, account)
        await uow.append(_stream(account_id), [event], actor(request))
    return empty()


async def list_tokens(request: web.Request) -> web.Response:
    """The service account's personal access tokens (secrets masked).

    One query answers both "is it a service account" and its tokens."""
    account_id = _account_id_or_404(request.match_info["id"])
    async with reading(request) as conn:
        rows = await conn.fetch(queries.SERVICE_ACCOUNT_PATS, account_id)
    if not rows:
        raise domain.service_account_missing(account_id)
    return json_response(
        PersonalAccessTokenList.from_rows([r for r in rows if r["id"] is not None])
    )


async def create_token(request: web.Request) -> web.Response:
    account_id = _account_id_or_404(request.match_info["id"])
    cmd = await read_json(request, CreatePersonalAccessToken)
    async with unit_of_work(request) as uow:
        body = await tokens.create_token(
            uow, account_id, domain.SERVICE_ACCOUNT, cmd, actor(request)
        )
    return json_response(body, status=201)


async def delete_token(request: web.Request) -> web.Response:
    account_id = _account_id_or_404(request.match_info["id"])
    token_id = tokens.token_id_or_404(request.match_info["tokenId"])
    async with unit_of_work(request) as uow:
        await tokens.delete_token(uow, account_id, domain.SERVICE_ACCOUNT, token_id, actor(request))
    return empty()


def _account_id_or_404(value: str) -> int:
    if not (value.isascii() and value.isdigit()) or len(value) > 18:
        raise domain.service_account_missing(value[:40])
    return int(value)


def _stream(account_id: int) -> tuple[str, str]:
    return domain.account_stream(domain.SERVICE_ACCOUNT, account_id)


ROUTES = [
    Route(
        "GET",
        "/api/admin/service-account",
        list_service_accounts,
        auth.ADMIN,
        ok={200: ServiceAccountList},
        past=True,
    ),
    Route(
        "POST",
        "/api/admin/service-account",
        create_service_account,
        auth.ADMIN,
        body=CreateServiceAccount,
        ok={201: ServiceAccount},
        errors=(NameExists,),
        links={"tokens": Link(list_tokens, {"id": "$response.body#/id"})},
    ),
    Route(
        "PUT",
        "/api/admin/service-account/{id}",
        update_service_account,
        auth.ADMIN,
        body=UpdateServiceAccount,
        ok={200: ServiceAccount},
        errors=(NameExists,),
        params=NUMBERED,
    ),
    Route(
        "DELETE",
        "/api/admin/service-account/{id}",
        delete_service_account,
        auth.ADMIN,
        params=NUMBERED,
    ),
    Route(
        "GET",
        "/api/admin/service-account/{id}/token",
        list_tokens,
        auth.ADMIN,
        ok={200: PersonalAccessTokenList},
        past=True,
        params=NUMBERED,
    ),
    Route(
        "POST",
        "/api/admin/service-account/{id}/token",
        create_token,
        auth.ADMIN,
        body=CreatePersonalAccessToken,
        ok={201: PersonalAccessToken},
        errors=(PatLimit, NameExists),
        params=NUMBERED,
    ),
    Route(
        "DELETE",
        "/api/admin/service-account/{id}/token/{tokenId}",
        delete_token,
        auth.ADMIN,
        params={**NUMBERED, "tokenId": NUMBERED["id"]},
    ),
]
