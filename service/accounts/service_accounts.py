"""HTTP handlers of /api/admin/service-account: machine accounts and their tokens."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import asyncpg
from aiohttp import web

from service import auth, store
from service.accounts import domain, queries, tokens
from service.accounts.commands import (
    CreatePersonalAccessToken,
    CreateServiceAccount,
    UpdateServiceAccount,
)
from service.accounts.events import ServiceAccountDeleted, ServiceAccountUpdated
from service.appkeys import POOL, REQUEST_ID
from service.errors import NameExists, NotFound
from service.http import Route, json_response, principal, read_json
from service.users import queries as user_queries

if TYPE_CHECKING:
    from service.connections import Conn
    from service.events import Metadata

SERVICE_ACCOUNT = "Service Account"


async def list_service_accounts(request: web.Request) -> web.Response:
    rows = await request.app[POOL].fetch(queries.LIST_SERVICE_ACCOUNTS)
    return json_response(
        {
            "serviceAccounts": [service_account_json(row) for row in rows],
            "rootRoles": user_queries.root_roles_json(),
        }
    )


async def create_service_account(request: web.Request) -> web.Response:
    cmd = await read_json(request, CreateServiceAccount)
    async with request.app[POOL].acquire() as conn, conn.transaction():
        account_id = await conn.fetchval(user_queries.NEXT_USER_ID)
        event = domain.create_service_account(cmd, account_id=account_id, now=datetime.now(UTC))
        try:
            await store.append(conn, _stream(account_id), "no-stream", [event], _meta(request))
        except asyncpg.UniqueViolationError as exc:
            if exc.constraint_name in user_queries.UNIQUE_ACCOUNT_FIELDS:
                raise NameExists(
                    f"A user or service account named {event.username} exists"
                ) from None
            raise
        row = await conn.fetchrow(queries.GET_SERVICE_ACCOUNT, account_id)
    return json_response(service_account_json(row), status=201)


async def update_service_account(request: web.Request) -> web.Response:
    account_id = _account_id_or_404(request.match_info["id"])
    cmd = await read_json(request, UpdateServiceAccount)
    async with request.app[POOL].acquire() as conn, conn.transaction():
        row = await _locked(conn, account_id)
        current = ServiceAccountUpdated(
            account_id=account_id, name=row["name"], root_role=row["root_role"]
        )
        event = domain.update_service_account(current, cmd)
        if event is not None:
            await store.append(conn, _stream(account_id), "any", [event], _meta(request))
        updated = await conn.fetchrow(queries.GET_SERVICE_ACCOUNT, account_id)
    return json_response(service_account_json(updated))


async def delete_service_account(request: web.Request) -> web.Response:
    account_id = _account_id_or_404(request.match_info["id"])
    async with request.app[POOL].acquire() as conn, conn.transaction():
        row = await _locked(conn, account_id)
        event = ServiceAccountDeleted(
            account_id=account_id, username=row["username"], name=row["name"]
        )
        await store.append(conn, _stream(account_id), "any", [event], _meta(request))
    return web.Response(status=200)


async def list_tokens(request: web.Request) -> web.Response:
    """Operation 4 of spec.md: one query answers both "is it a service account" and its tokens."""
    account_id = _account_id_or_404(request.match_info["id"])
    body = await request.app[POOL].fetchval(queries.SERVICE_ACCOUNT_PATS_JSON, account_id)
    if body is None:
        raise NotFound(f"Could not find service account with id {account_id}")
    return web.Response(text=body, content_type="application/json")


async def create_token(request: web.Request) -> web.Response:
    account_id = _account_id_or_404(request.match_info["id"])
    cmd = await read_json(request, CreatePersonalAccessToken)
    async with request.app[POOL].acquire() as conn, conn.transaction():
        body = await tokens.create_token(conn, account_id, SERVICE_ACCOUNT, cmd, _meta(request))
    return json_response(body, status=201)


async def delete_token(request: web.Request) -> web.Response:
    account_id = _account_id_or_404(request.match_info["id"])
    token_id = tokens.token_id_or_404(request.match_info["tokenId"])
    async with request.app[POOL].acquire() as conn, conn.transaction():
        await tokens.delete_token(conn, account_id, SERVICE_ACCOUNT, token_id, _meta(request))
    return web.Response(status=200)


def service_account_json(row: asyncpg.Record | None) -> dict[str, Any]:
    assert row is not None  # callers read it back in the transaction that locked or wrote it
    body = user_queries.user_json(row)
    del body["permissions"], body["scimId"]
    return body


async def _locked(conn: Conn, account_id: int) -> asyncpg.Record:
    row = await conn.fetchrow(queries.LOCK_ACCOUNT, account_id, SERVICE_ACCOUNT)
    if row is None:
        raise NotFound(f"Could not find service account with id {account_id}")
    return row


def _account_id_or_404(value: str) -> int:
    if not (value.isascii() and value.isdigit()) or len(value) > 18:
        raise NotFound(f"Could not find service account with id {value[:40]}")
    return int(value)


def _stream(account_id: int) -> tuple[str, str]:
    return domain.account_stream(SERVICE_ACCOUNT, account_id)


def _meta(request: web.Request) -> Metadata:
    return principal(request).metadata(request[REQUEST_ID])


ROUTES = [
    Route("GET", "/api/admin/service-account", list_service_accounts, auth.ADMIN),
    Route("POST", "/api/admin/service-account", create_service_account, auth.ADMIN, body=True),
    Route("PUT", "/api/admin/service-account/{id}", update_service_account, auth.ADMIN, body=True),
    Route("DELETE", "/api/admin/service-account/{id}", delete_service_account, auth.ADMIN),
    Route("GET", "/api/admin/service-account/{id}/token", list_tokens, auth.ADMIN),
    Route("POST", "/api/admin/service-account/{id}/token", create_token, auth.ADMIN, body=True),
    Route(
        "DELETE",
        "/api/admin/service-account/{id}/token/{tokenId}",
        delete_token,
        auth.ADMIN,
    ),
]
