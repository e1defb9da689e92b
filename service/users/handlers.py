"""HTTP handlers of /api/admin/user-admin, /api/admin/roles and /api/admin/user."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import asyncpg
from aiohttp import web

from service import auth, store
from service.appkeys import POOL, REQUEST_ID
from service.errors import NameExists, NotFound
from service.http import Route, json_response, principal, read_json
from service.users import domain, passwords, queries
from service.users.commands import ChangePassword, CreateUser, UpdateUser
from service.users.events import PasswordChanged, UserDeleted, UserUpdated

if TYPE_CHECKING:
    from service.connections import Conn
    from service.events import Event, Metadata


async def list_roles(_request: web.Request) -> web.Response:
    return json_response({"version": 1, "roles": queries.root_roles_json()})


async def list_users(request: web.Request) -> web.Response:
    rows = await request.app[POOL].fetch(queries.LIST_USERS)
    users = [queries.user_json(row) for row in rows]
    return json_response({"users": users, "rootRoles": queries.root_roles_json()})


async def get_user(request: web.Request) -> web.Response:
    user_id = user_id_or_404(request.match_info["id"])
    row = await request.app[POOL].fetchrow(queries.GET_USER, user_id)
    if row is None:
        raise NotFound(f"Could not find user with id {user_id}")
    return json_response(queries.user_json(row))


async def create_user(request: web.Request) -> web.Response:
    cmd = await read_json(request, CreateUser)
    if cmd.password is not None:
        passwords.check_strength(cmd.password)
    password_hash = await passwords.hash_password(cmd.password) if cmd.password else None
    async with request.app[POOL].acquire() as conn, conn.transaction():
        user_id = await conn.fetchval(queries.NEXT_USER_ID)
        events: list[Event] = [
            domain.create_user(cmd, user_id=user_id, now=datetime.now(UTC)),
        ]
        if password_hash is not None:
            events.append(PasswordChanged(user_id=user_id, password_hash=password_hash))
        await _append_unique(conn, domain.user_stream(user_id), "no-stream", events, _meta(request))
        row = await conn.fetchrow(queries.GET_USER, user_id)
    assert row is not None  # the inline projection wrote it in this transaction
    response = json_response(queries.user_json(row), status=201)
    response.headers["Location"] = str(user_id)  # as Unleash answers
    return response


async def update_user(request: web.Request) -> web.Response:
    user_id = user_id_or_404(request.match_info["id"])
    cmd = await read_json(request, UpdateUser)
    async with request.app[POOL].acquire() as conn, conn.transaction():
        row = await _locked_user(conn, user_id)
        current = UserUpdated(
            user_id=user_id, name=row["name"], email=row["email"], root_role=row["root_role"]
        )
        event = domain.update_user(current, cmd)
        if event is not None:
            await _append_unique(conn, domain.user_stream(user_id), "any", [event], _meta(request))
            row = await _locked_user(conn, user_id)
    return json_response(queries.user_json(row))


async def delete_user(request: web.Request) -> web.Response:
    user_id = user_id_or_404(request.match_info["id"])
    async with request.app[POOL].acquire() as conn, conn.transaction():
        row = await _locked_user(conn, user_id)
        event = UserDeleted(
            user_id=user_id, name=row["name"], username=row["username"], email=row["email"]
        )
        await store.append(conn, domain.user_stream(user_id), "any", [event], _meta(request))
    return web.Response(status=200)


async def change_password(request: web.Request) -> web.Response:
    user_id = user_id_or_404(request.match_info["id"])
    cmd = await read_json(request, ChangePassword)
    passwords.check_strength(cmd.password)
    if await request.app[POOL].fetchrow(queries.GET_USER, user_id) is None:
        raise NotFound(f"Could not find user with id {user_id}")
    password_hash = await passwords.hash_password(cmd.password)
    async with request.app[POOL].acquire() as conn, conn.transaction():
        await _locked_user(conn, user_id)
        event = PasswordChanged(user_id=user_id, password_hash=password_hash)
        await store.append(conn, domain.user_stream(user_id), "any", [event], _meta(request))
    return web.Response(status=200)


async def current_user(request: web.Request) -> web.Response:
    """Who the caller is, in Unleash's shape: the account (or the API token) and its root
    permissions (`ADMIN` alone for admins; none for viewers)."""
    who = principal(request)
    row = None
    if who.account_id is not None:
        row = await request.app[POOL].fetchrow(queries.GET_ACCOUNT, who.account_id)
    permissions = (
        [auth.ADMIN]
        if auth.ADMIN in who.permissions
        else sorted(who.permissions - {auth.READ, auth.OWN_ACCOUNT})
    )
    if row is not None:
        user: dict[str, Any] = queries.user_json(row) | {"permissions": permissions}
    else:
        user = {"isAPI": True, "username": who.name, "permissions": permissions}
    body = {
        "user": user,
        "permissions": [{"permission": p} for p in permissions],
        "feedback": [],
        "splash": {},
    }
    response = json_response(body)
    response.headers["Cache-Control"] = "no-store"
    return response


async def _locked_user(conn: Conn, user_id: int) -> asyncpg.Record:
    row = await conn.fetchrow(queries.LOCK_USER, user_id)
    if row is None:
        raise NotFound(f"Could not find user with id {user_id}")
    return row


async def _append_unique(
    conn: Conn, stream: tuple[str, str], expected: Any, events: list[Event], meta: Metadata
) -> None:
    """Append; a taken e-mail or username (the read model's unique indexes) is a 409."""
    try:
        await store.append(conn, stream, expected, events, meta)
    except asyncpg.UniqueViolationError as exc:
        if exc.constraint_name in queries.UNIQUE_ACCOUNT_FIELDS:
            raise NameExists(domain.USER_EXISTS) from None
        raise


def user_id_or_404(value: str) -> int:
    if not (value.isascii() and value.isdigit()) or len(value) > 18:
        raise NotFound(f"Could not find user with id {value[:40]}")
    return int(value)


def _meta(request: web.Request) -> Metadata:
    return principal(request).metadata(request[REQUEST_ID])


ROUTES = [
    Route("GET", "/api/admin/roles", list_roles, auth.READ),
    Route("GET", "/api/admin/user", current_user, auth.READ),
    Route("GET", "/api/admin/user-admin", list_users, auth.ADMIN),
    Route("POST", "/api/admin/user-admin", create_user, auth.ADMIN, body=True),
    Route("GET", "/api/admin/user-admin/{id}", get_user, auth.ADMIN),
    Route("PUT", "/api/admin/user-admin/{id}", update_user, auth.ADMIN, body=True),
    Route("DELETE", "/api/admin/user-admin/{id}", delete_user, auth.ADMIN),
    Route(
        "POST",
        "/api/admin/user-admin/{id}/change-password",
        change_password,
        auth.ADMIN,
        body=True,
    ),
]
