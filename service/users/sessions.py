"""Sign-in with a password (`POST /auth/simple/login`), session cookies, and sign-out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Final

from aiohttp import web

from service import auth, store
from service.appkeys import POOL, REQUEST_ID
from service.errors import PasswordMismatch
from service.events import Metadata
from service.http import Route, json_response, read_json
from service.users import domain, passwords, queries
from service.users.commands import SignIn
from service.users.events import UserSignedIn, UserSignedOut, UserSignInFailed

SESSION_LIFETIME: Final = timedelta(hours=48)  # Unleash's default session TTL
# One answer for an unknown account and a wrong password, so sign-in reveals nobody.
WRONG_CREDENTIALS: Final = (
    "The combination of password and username you provided is invalid. If you have forgotten "
    "your password, visit /forgotten-password or get in touch with your instance administrator."
)


async def sign_in(request: web.Request) -> web.Response:
    cmd = await read_json(request, SignIn)
    pool = request.app[POOL]
    name = cmd.username.strip()
    lookup = (
        queries.SIGN_IN_BY_EMAIL if domain.looks_like_email(name) else queries.SIGN_IN_BY_USERNAME
    )
    candidate = await pool.fetchrow(lookup, name)
    stored_hash = candidate["password_hash"] if candidate is not None else None
    # Always one argon2 check, against a dummy hash when there is no account or password.
    ok = await passwords.verify_password(stored_hash, cmd.password)
    if candidate is None:
        raise PasswordMismatch(WRONG_CREDENTIALS)
    user_id = candidate["id"]
    now = datetime.now(UTC)
    async with pool.acquire() as conn, conn.transaction():
        row = await conn.fetchrow(queries.LOCK_USER, user_id)
        # Deleted, or given a new password, while this one was checked: the check is void.
        if row is None or await conn.fetchval(queries.PASSWORD_HASH, user_id) != stored_hash:
            raise PasswordMismatch(WRONG_CREDENTIALS)
        meta = _meta(request, user_id, row["name"] or row["username"] or row["email"])
        if not ok:
            failed = UserSignInFailed(
                user_id=user_id, attempted_at=now, login_attempts=row["login_attempts"] + 1
            )
            await store.append(conn, domain.user_stream(user_id), "any", [failed], meta)
        else:
            session = auth.new_secret()
            signed_in = UserSignedIn(
                user_id=user_id,
                seen_at=now,
                session_hash=auth.hash_secret(session),
                session_expires_at=now + SESSION_LIFETIME,
            )
            await store.append(conn, domain.user_stream(user_id), "any", [signed_in], meta)
            row = await conn.fetchrow(queries.GET_USER, user_id)
    if not ok:  # raised after the commit, so the failed attempt is counted
        raise PasswordMismatch(WRONG_CREDENTIALS)
    assert row is not None  # read back in the transaction that signed in
    response = json_response(queries.user_json(row))
    response.set_cookie(
        auth.SESSION_COOKIE,
        session,
        max_age=int(SESSION_LIFETIME.total_seconds()),
        path="/",
        httponly=True,
        samesite="Lax",
        secure=request.secure,
    )
    return response


async def sign_out(request: web.Request) -> web.Response:
    """Ends the session of the cookie, if any, and clears the cookie. Like Unleash, answers
    302 to `/`; unlike it, other sessions of the same person (other browsers) stay open."""
    cookie = request.cookies.get(auth.SESSION_COOKIE)
    if cookie:
        session_hash = auth.hash_secret(cookie)
        async with request.app[POOL].acquire() as conn, conn.transaction():
            owner = await conn.fetchrow(queries.LOCK_SESSION_OWNER, session_hash)
            if owner is not None:
                event = UserSignedOut(user_id=owner["id"], session_hash=session_hash)
                meta = _meta(request, owner["id"], owner["name"])
                await store.append(conn, domain.user_stream(owner["id"]), "any", [event], meta)
    response = web.Response(status=302, headers={"Location": "/"})
    response.headers["Clear-Site-Data"] = '"cookies", "storage"'
    response.del_cookie(auth.SESSION_COOKIE, path="/")
    return response


def _meta(request: web.Request, user_id: int, name: str | None) -> Metadata:
    return Metadata(
        actor_id=f"user:{user_id}",
        actor_name=name or str(user_id),
        actor_kind="user",
        request_id=request[REQUEST_ID],
    )


ROUTES = [
    Route("POST", "/auth/simple/login", sign_in, auth.PUBLIC, body=True),
    Route("POST", "/logout", sign_out, auth.PUBLIC),
]
