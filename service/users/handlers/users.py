"""HTTP handlers of /api/admin/user-admin, /api/admin/roles and /api/admin/user."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from service import auth
from service.appkeys import POOL, SETTINGS
from service.errors import NameExists, TooManyRequests, WeakPassword
from service.http.answers import empty, json_response
from service.http.past import in_past, reading
from service.http.requests import actor, principal, read_json, unit_of_work
from service.http.routes import NUMBERED, Link, Route
from service.privacy import erasure
from service.users import domain, passwords, queries, records
from service.users.commands import ChangePassword, CreateUser, UpdateUser
from service.users.handlers import search
from service.users.responses import (
    ApiMe,
    ApiUser,
    Feedback,
    Me,
    Permission,
    Profile,
    RoleList,
    User,
    UserList,
    UserPage,
    root_roles,
)

if TYPE_CHECKING:
    from aiohttp import web

    from eventlog.connections import Conn


async def list_roles(_request: web.Request) -> web.Response:
    return json_response(RoleList(roles=root_roles()))


async def list_users(request: web.Request) -> web.Response:
    """Every person, in id order: the web UI's users page. From the records this replica
    remembers at the rows' versions (the search's: service/users/records.py), fetching only
    the people changed since; a past state (`?at=`) is read whole."""
    async with reading(request) as conn:
        if not in_past(request):
            page = await _remembered_list(conn, request.app[search.RECORDS])
            if page is not None:
                return json_response(page)
        rows = await conn.fetch(queries.LIST_USERS)
    return json_response(UserList(users=[User.from_row(r) for r in rows], root_roles=root_roles()))


async def _remembered_list(conn: Conn, held_records: records.Records) -> UserPage | None:
    versions = await conn.fetchrow(queries.LIST_VERSIONS)
    assert versions is not None  # an aggregate without GROUP BY: always one row
    return await search.page_of(conn, held_records, versions["ids"], versions["versions"], None)


async def get_user(request: web.Request) -> web.Response:
    user_id = user_id_or_404(request.match_info["id"])
    async with reading(request) as conn:
        row = await conn.fetchrow(queries.GET_USER, user_id)
    if row is None:
        raise domain.user_missing(user_id)
    return json_response(User.from_row(row))


async def create_user(request: web.Request) -> web.Response:
    cmd = await read_json(request, CreateUser)
    if cmd.password is not None:
        passwords.check_strength(cmd.password)
    hashing = request.app[passwords.HASHING]
    password_hash = await hashing.hash(cmd.password) if cmd.password else None
    async with unit_of_work(request) as uow:
        user_id = await uow.conn.fetchval(queries.NEXT_USER_ID)
        events = domain.create_user(
            cmd, user_id=user_id, password_hash=password_hash, now=datetime.now(UTC)
        )
        await uow.append(domain.user_stream(user_id), events, actor(request), new=True)
        row = await uow.conn.fetchrow(queries.GET_USER, user_id)
    assert row is not None  # written or locked in this transaction
    response = json_response(User.from_row(row), status=201)
    response.headers["Location"] = str(user_id)  # as Unleash answers
    return response


async def update_user(request: web.Request) -> web.Response:
    user_id = user_id_or_404(request.match_info["id"])
    cmd = await read_json(request, UpdateUser)
    async with unit_of_work(request) as uow:
        event = domain.update_user(user_id, await queries.lock_account(uow.conn, user_id), cmd)
        if event is not None:
            await uow.append(domain.user_stream(user_id), [event], actor(request))
        row = await uow.conn.fetchrow(queries.GET_USER, user_id)
    assert row is not None  # written or locked in this transaction
    return json_response(User.from_row(row))


async def delete_user(request: web.Request) -> web.Response:
    user_id = user_id_or_404(request.match_info["id"])
    async with unit_of_work(request) as uow:
        event = domain.delete_user(user_id, await queries.lock_account(uow.conn, user_id))
        erased = await erasure.on_deletion(
            uow.conn,
            [user_id],
            delay_days=request.app[SETTINGS].erasure_delay_days,
            now=datetime.now(UTC),
        )
        stream = domain.user_stream(user_id)
        await uow.append(
            stream, [event, *erased], actor(request), erased=[e.person_id for e in erased]
        )
    return empty()


async def change_password(request: web.Request) -> web.Response:
    user_id = user_id_or_404(request.match_info["id"])
    cmd = await read_json(request, ChangePassword)
    passwords.check_strength(cmd.password)
    if await request.app[POOL].fetchrow(queries.GET_USER, user_id) is None:
        raise domain.user_missing(user_id)  # before the slow hash
    password_hash = await request.app[passwords.HASHING].hash(cmd.password)
    async with unit_of_work(request) as uow:
        account = await queries.lock_account(uow.conn, user_id)
        event = domain.change_password(user_id, account, password_hash)
        await uow.append(domain.user_stream(user_id), [event], actor(request))
    return empty()


async def current_user(request: web.Request) -> web.Response:
    """Who the caller is, in Unleash's shape: the account (or the API token) and its root
    role's permissions by Unleash's names (`ADMIN` alone for admins; none for viewers), which
    Unleash's web UI checks to offer what the role may do."""
    who = principal(request)
    row = None
    feedback: list[Feedback] = []
    splash: dict[str, bool] = {}
    if who.account_id is not None:
        async with request.app[POOL].acquire() as conn:
            row = await conn.fetchrow(queries.GET_ACCOUNT, who.account_id)
            if who.kind == "user":  # people only: the web UI's own state
                rows = await conn.fetch(queries.FEEDBACK, who.account_id)
                feedback = [Feedback.from_row(who.account_id, r) for r in rows]
                splash = {
                    r["splash_id"]: True for r in await conn.fetch(queries.SPLASHES, who.account_id)
                }
    permissions = auth.unleash_permissions(who.permissions)
    granted = [Permission(permission=p) for p in permissions]
    body = (
        Me(
            user=User.from_row(row, permissions),
            permissions=granted,
            feedback=feedback,
            splash=splash,
        )
        if row is not None
        else ApiMe(
            user=ApiUser(is_api=True, username=who.name, permissions=permissions),
            permissions=granted,
            feedback=[],
            splash={},
        )
    )
    response = json_response(body)
    response.headers["Cache-Control"] = "no-store"
    return response


async def current_profile(request: web.Request) -> web.Response:
    """The caller's profile, as Unleash's web UI reads it on its projects page: their root role,
    and the projects they are a member of, which flagstore does not have (a root role holds in
    every project), so none; no e-mail subscriptions, no features."""
    who = principal(request)
    assert who.account_id is not None  # OWN_ACCOUNT: a person
    row = await request.app[POOL].fetchrow(queries.GET_ACCOUNT, who.account_id)
    if row is None:
        raise domain.user_missing(who.account_id)
    roles = root_roles([row["root_role"]])
    role = roles[0] if roles else None
    return json_response(Profile(root_role=role, projects=[], subscriptions=[], features=[]))


def user_id_or_404(value: str) -> int:
    if not (value.isascii() and value.isdigit()) or len(value) > 18:
        raise domain.user_missing(value[:40])
    return int(value)


ROUTES = [
    Route("GET", "/api/admin/roles", list_roles, auth.READ, ok={200: RoleList}),
    Route("GET", "/api/admin/user", current_user, auth.READ, ok={200: (Me, ApiMe)}),
    Route("GET", "/api/admin/user/profile", current_profile, auth.OWN_ACCOUNT, ok={200: Profile}),
    Route("GET", "/api/admin/user-admin", list_users, auth.ADMIN, ok={200: UserList}, past=True),
    Route(
        "POST",
        "/api/admin/user-admin",
        create_user,
        auth.ADMIN,
        body=CreateUser,
        ok={201: User},
        errors=(WeakPassword, NameExists, TooManyRequests),
        links={"user": Link(get_user, {"id": "$response.body#/id"})},
    ),
    Route(
        "GET",
        "/api/admin/user-admin/{id:\\d+}",
        get_user,
        auth.ADMIN,
        ok={200: User},
        past=True,
        params=NUMBERED,
    ),
    Route(
        "PUT",
        "/api/admin/user-admin/{id:\\d+}",
        update_user,
        auth.ADMIN,
        body=UpdateUser,
        ok={200: User},
        errors=(NameExists,),
        params=NUMBERED,
    ),
    Route("DELETE", "/api/admin/user-admin/{id:\\d+}", delete_user, auth.ADMIN, params=NUMBERED),
    Route(
        "POST",
        "/api/admin/user-admin/{id:\\d+}/change-password",
        change_password,
        auth.ADMIN,
        body=ChangePassword,
        errors=(WeakPassword, TooManyRequests),
        params=NUMBERED,
    ),
]
