"""Sign-in with a password (`POST /auth/simple/login`), session cookies, and sign-out."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from eventlog.events.users import UserSignedIn
from service import auth
from service.appkeys import POOL, REQUEST_ID
from service.errors import PasswordMismatch, TooManyRequests
from service.http.answers import empty, json_response
from service.http.requests import read_json, unit_of_work
from service.http.routes import Route
from service.users import domain, queries
from service.users.commands import SignIn
from service.users.failures import FAILED_SIGN_INS, account_metadata
from service.users.limits import SIGN_IN_LIMITS
from service.users.passwords import HASHING
from service.users.responses import User

if TYPE_CHECKING:
    from aiohttp import web


async def sign_in(request: web.Request) -> web.Response:
    cmd = await read_json(request, SignIn)
    request.app[SIGN_IN_LIMITS].check(request, cmd.username)  # before any database or argon2
    name = cmd.username.strip()
    lookup = (
        queries.SIGN_IN_BY_EMAIL if domain.looks_like_email(name) else queries.SIGN_IN_BY_USERNAME
    )
    candidate = await request.app[POOL].fetchrow(lookup, name)
    stored_hash = candidate["password_hash"] if candidate is not None else None
    # Always one argon2 check, against a dummy hash when there is no account or password.
    ok = await request.app[HASHING].verify(stored_hash, cmd.password)
    if candidate is None:
        raise PasswordMismatch(domain.WRONG_CREDENTIALS)
    session = auth.new_secret()
    failures = request.app[FAILED_SIGN_INS]
    with failures.deciding(candidate["id"]) as keep:
        async with unit_of_work(request) as uow:
            account = await queries.lock_account(uow.conn, candidate["id"])
            events, kept = domain.sign_in(
                account,
                password_ok=ok,
                # Deleted, or given a new password, while this one was checked: the check is void.
                hash_unchanged=await uow.conn.fetchval(queries.PASSWORD_HASH, candidate["id"])
                == stored_hash,
                session_hash=auth.hash_secret(session),
                failures=failures.of(candidate["id"]),
                now=datetime.now(UTC),
            )
            assert account is not None  # sign_in refuses an account that is gone
            if events:  # a wrong password within the minute is only counted, in memory
                who = account.name or account.username or account.email
                meta = account_metadata(account.id, who, request_id=request[REQUEST_ID])
                await uow.append(domain.user_stream(account.id), events, meta)
            row = await uow.conn.fetchrow(queries.GET_USER, account.id)
            keep(kept, events)  # before COMMIT: the next holder of the row lock decides on it
    assert row is not None  # written or locked in this transaction
    if not any(isinstance(e, UserSignedIn) for e in events):
        raise PasswordMismatch(domain.WRONG_CREDENTIALS)  # after the commit: it is counted
    response = json_response(User.from_row(row))
    set_session_cookie(response, request, session)
    return response


def set_session_cookie(response: web.Response, request: web.Request, session: str) -> None:
    response.set_cookie(
        auth.SESSION_COOKIE,
        session,
        max_age=int(domain.SESSION_LIFETIME.total_seconds()),
        path="/",
        httponly=True,
        samesite="Lax",
        secure=request.secure,
    )


async def sign_out(request: web.Request) -> web.Response:
    """Ends the session of the cookie, if any, and clears the cookie. Like Unleash, answers
    302 to `/`; unlike it, other sessions of the same person (other browsers) stay open."""
    cookie = request.cookies.get(auth.SESSION_COOKIE)
    if cookie:
        session_hash = auth.hash_secret(cookie)
        async with unit_of_work(request) as uow:
            owner = await uow.conn.fetchrow(queries.LOCK_SESSION_OWNER, session_hash)
            event = domain.sign_out(None if owner is None else owner["id"], session_hash)
            if event is not None:
                assert owner is not None
                meta = account_metadata(owner["id"], owner["name"], request_id=request[REQUEST_ID])
                await uow.append(domain.user_stream(owner["id"]), [event], meta)
    response = empty(302)
    response.headers["Location"] = "/"
    response.headers["Clear-Site-Data"] = '"cookies", "storage"'
    response.del_cookie(auth.SESSION_COOKIE, path="/")
    return response


ROUTES = [
    Route(
        "POST",
        "/auth/simple/login",
        sign_in,
        auth.PUBLIC,
        body=SignIn,
        ok={200: User},
        errors=(PasswordMismatch, TooManyRequests),
    ),
    Route("POST", "/logout", sign_out, auth.PUBLIC, ok={302: None}),
]
