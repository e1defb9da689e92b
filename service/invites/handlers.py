"""HTTP handlers of /api/admin/invite-link/tokens and the public /invite/{token} routes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from service import auth
from service.appkeys import POOL, REQUEST_ID
from service.errors import NameExists, TooManyRequests, WeakPassword
from service.http.answers import empty, json_response
from service.http.past import reading
from service.http.requests import actor, read_json, unit_of_work
from service.http.routes import Route
from service.invites import domain, queries
from service.invites.commands import CreateInviteLink, SignUp, UpdateInviteLink
from service.invites.responses import InviteLink, InviteLinkList
from service.users import domain as users
from service.users import passwords
from service.users import queries as user_queries
from service.users.failures import account_metadata
from service.users.responses import User

if TYPE_CHECKING:
    import asyncpg
    from aiohttp import web

    from eventlog.connections import Conn

TOKEN_PATH = "/api/admin/invite-link/tokens/{token}"


def _origin(request: web.Request) -> str:
    return str(request.url.origin())


def _named(request: web.Request) -> tuple[str, str]:
    """The hashes a link named in the path may have: of the secret given, or the hash itself
    (what the list shows)."""
    key = request.match_info["token"]
    return auth.hash_secret(key), key


def _link(row: asyncpg.Record | None) -> domain.Link | None:
    if row is None:
        return None
    return domain.Link(
        id=row["id"],
        root_role=row["root_role"],
        enabled=row["enabled"],
        expires_at=row["expires_at"],
    )


async def _answer(conn: Conn, request: web.Request, rows: list[asyncpg.Record]) -> list[InviteLink]:
    people = await conn.fetch(queries.LINK_USERS, [r["id"] for r in rows])
    origin = _origin(request)
    return [
        InviteLink.from_row(r, origin=origin, users=[u for u in people if u["link_id"] == r["id"]])
        for r in rows
    ]


async def list_links(request: web.Request) -> web.Response:
    async with reading(request) as conn:
        rows = await conn.fetch(queries.LIST_LINKS)
        links = await _answer(conn, request, rows)
    return json_response(InviteLinkList(tokens=links))


async def get_link(request: web.Request) -> web.Response:
    async with reading(request) as conn:
        row = await conn.fetchrow(queries.GET_LINK, *_named(request))
        if row is None:
            raise domain.link_missing()
        (link,) = await _answer(conn, request, [row])
    return json_response(link)


async def create_link(request: web.Request) -> web.Response:
    cmd = await read_json(request, CreateInviteLink)
    secret = auth.new_secret()
    async with unit_of_work(request) as uow:
        link_id = await uow.conn.fetchval(queries.NEXT_LINK_ID)
        event = domain.create_invite_link(
            cmd, link_id=link_id, secret=secret, now=datetime.now(UTC)
        )
        await uow.append(domain.stream(link_id), [event], actor(request), new=True)
        row = await uow.conn.fetchrow(queries.GET_LINK_BY_ID, link_id)
    assert row is not None  # written in this transaction
    body = InviteLink.from_row(row, origin=_origin(request), secret=secret)
    response = json_response(body, status=201)
    response.headers["Location"] = f"tokens/{secret}"  # as Unleash answers
    return response


async def update_invite_link(request: web.Request) -> web.Response:
    cmd = await read_json(request, UpdateInviteLink)
    async with unit_of_work(request) as uow:
        link = _link(await uow.conn.fetchrow(queries.LOCK_LINK, *_named(request)))
        event = domain.update_invite_link(link, cmd)
        if event is not None:
            await uow.append(domain.stream(event.link_id), [event], actor(request))
        assert link is not None  # update_invite_link refuses a missing link
        row = await uow.conn.fetchrow(queries.GET_LINK_BY_ID, link.id)
        assert row is not None  # locked in this transaction
        (body,) = await _answer(uow.conn, request, [row])
    return json_response(body)


async def validate_link(request: web.Request) -> web.Response:
    """Public: 200 for a link one may sign up with, else 400 (Unleash's new-user page)."""
    secret_hash = auth.hash_secret(request.match_info["token"])
    if not await request.app[POOL].fetchval(queries.VALID_LINK, secret_hash):
        raise domain.invalid_link()
    return empty()


async def sign_up(request: web.Request) -> web.Response:
    """Public: a new account with the link's root role, who may then sign in."""
    secret_hash = auth.hash_secret(request.match_info["token"])
    if not await request.app[POOL].fetchval(queries.VALID_LINK, secret_hash):
        raise domain.invalid_link()  # before the body and the slow hash
    cmd = await read_json(request, SignUp)
    passwords.check_strength(cmd.password)
    password_hash = await request.app[passwords.HASHING].hash(cmd.password)
    async with unit_of_work(request) as uow:
        link = _link(await uow.conn.fetchrow(queries.SHARE_LINK, secret_hash))
        user_id = await uow.conn.fetchval(user_queries.NEXT_USER_ID)
        created, used = domain.sign_up(
            link, cmd, user_id=user_id, password_hash=password_hash, now=datetime.now(UTC)
        )
        meta = account_metadata(user_id, cmd.name or cmd.email, request_id=request[REQUEST_ID])
        await uow.append(users.user_stream(user_id), created, meta, new=True)
        await uow.append(domain.stream(used.link_id), [used], meta)
        row = await uow.conn.fetchrow(user_queries.GET_USER, user_id)
    assert row is not None  # written in this transaction
    return json_response(User.from_row(row), status=201)


ROUTES = [
    Route(
        "GET",
        "/api/admin/invite-link/tokens",
        list_links,
        auth.ADMIN,
        ok={200: InviteLinkList},
        past=True,
    ),
    Route(
        "POST",
        "/api/admin/invite-link/tokens",
        create_link,
        auth.ADMIN,
        body=CreateInviteLink,
        ok={201: InviteLink},
    ),
    Route("GET", TOKEN_PATH, get_link, auth.ADMIN, ok={200: InviteLink}, past=True),
    Route(
        "PUT",
        TOKEN_PATH,
        update_invite_link,
        auth.ADMIN,
        body=UpdateInviteLink,
        ok={200: InviteLink},
    ),
    Route("GET", "/invite/{token}/validate", validate_link, auth.PUBLIC),
    Route(
        "POST",
        "/invite/{token}/signup",
        sign_up,
        auth.PUBLIC,
        body=SignUp,
        ok={201: User},
        errors=(WeakPassword, NameExists, TooManyRequests),
    ),
]
