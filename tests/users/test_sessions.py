"""Sign-in with a password, session cookies, sign-out, and failed attempts."""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import TYPE_CHECKING, Any

import pytest

from service import auth
from service.appkeys import POOL
from service.users.domain import WRONG_CREDENTIALS
from service.users.failures import FAILED_SIGN_INS
from service.users.passwords import HASHING
from tests.factories import (
    ADMIN,
    LOGIN,
    STRONG,
    USERS,
    create_user,
    error,
    event_count,
    make_account,
    session,
    settings_for,
    sign_in,
    sign_in_events,
)

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    from service.settings import Settings

    Client = TestClient[Any, Any]


@pytest.fixture
def settings(dsn: str) -> Settings:
    """Sign-in limits have their own tests (test_signin_limits.py); these send more attempts
    from one address than a minute allows."""
    return settings_for(dsn, login_rate_limit_per_address=1000, login_rate_limit_per_account=1000)


async def test_sign_in_by_username_or_email_opens_a_session(
    client: Client, app: web.Application
) -> None:
    user = await create_user(
        client, {"username": "bob", "email": "bob@example.com", "password": STRONG}
    )
    for name in ("bob", "BOB@example.com"):
        resp, cookie = await sign_in(client, name)
        assert resp.status == 200
        body = await resp.json()
        assert body == user | {"seenAt": body["seenAt"]}
        assert body["seenAt"] is not None
        header = resp.headers["Set-Cookie"]
        assert header.startswith(f"{auth.SESSION_COOKIE}={cookie};")
        for attribute in ("HttpOnly", "SameSite=Lax", "Path=/", "Max-Age=172800"):
            assert attribute in header
        assert len(cookie) == 64
    async with app[POOL].acquire() as conn:
        events = await conn.fetchval(
            "SELECT string_agg(data::text, ' ') FROM events WHERE type = 'UserSignedIn'"
        )
    assert auth.hash_secret(cookie) in events
    assert cookie not in events
    admin_view = await (await client.get(f"{USERS}/{user['id']}", headers=ADMIN)).json()
    assert admin_view["seenAt"] is not None


async def test_a_session_acts_with_the_users_root_role(client: Client) -> None:
    await create_user(client, {"username": "vic", "password": STRONG, "rootRole": 3})
    _, cookie = await sign_in(client, "vic")
    resp = await client.get("/api/admin/projects", headers=session(cookie))
    assert resp.status == 200
    resp = await client.post(
        "/api/admin/projects", json={"id": "p", "name": "p"}, headers=session(cookie)
    )
    await error(resp, 403, "NoAccessError")
    me = await (await client.get("/api/admin/user", headers=session(cookie))).json()
    assert me["user"]["username"] == "vic"


async def test_sign_out_ends_only_that_session(client: Client, app: web.Application) -> None:
    await create_user(client, {"username": "bob", "password": STRONG})
    _, first = await sign_in(client, "bob")
    _, second = await sign_in(client, "bob")
    resp = await client.post("/logout", headers=session(first), allow_redirects=False)
    assert (resp.status, resp.headers["Location"]) == (302, "/")
    assert resp.headers["Clear-Site-Data"] == '"cookies", "storage"'
    assert f'{auth.SESSION_COOKIE}=""' in resp.headers["Set-Cookie"]
    resp = await client.get("/api/admin/user", headers=session(first))
    await error(resp, 401, "AuthenticationRequired")
    assert (await client.get("/api/admin/user", headers=session(second))).status == 200
    assert await event_count(app, "UserSignedOut") == 1
    # Signing out again, or without a session, changes nothing.
    for headers in (session(first), {}):
        resp = await client.post("/logout", headers=headers, allow_redirects=False)
        assert resp.status == 302
    assert await event_count(app, "UserSignedOut") == 1


async def test_wrong_passwords_count_and_a_good_sign_in_resets(
    client: Client, app: web.Application
) -> None:
    """The first wrong password is recorded at once; the next ones within the minute are
    counted in memory, and the sign-in that follows records them first, then itself."""
    user = await create_user(client, {"username": "bob", "password": STRONG})
    for _ in range(3):
        resp, cookie = await sign_in(client, "bob", "Wr0ng!Password")
        assert await error(resp, 401, "PasswordMismatch") == WRONG_CREDENTIALS
        assert cookie == ""
    url = f"{USERS}/{user['id']}"
    assert (await (await client.get(url, headers=ADMIN)).json())["loginAttempts"] == 1
    resp, _ = await sign_in(client, "bob")
    assert (await resp.json())["loginAttempts"] == 0
    assert (await (await client.get(url, headers=ADMIN)).json())["loginAttempts"] == 0
    assert await sign_in_events(app, user["id"]) == [
        ("UserSignInFailed", 1, 1),
        ("UserSignInFailed", 2, 3),
        ("UserSignedIn", None, None),
    ]


async def test_failed_sign_ins_do_not_reveal_whether_an_account_exists(
    client: Client, app: web.Application
) -> None:
    await create_user(client, {"username": "known", "password": STRONG})
    await create_user(client, {"username": "nopassword"})
    await make_account(app, service=True, username="machine")
    timings: dict[str, list[float]] = {}
    bodies: dict[str, set[tuple[int, str, str]]] = {}
    hashes: dict[str, set[int]] = {}
    for name in ("known", "unknown", "nopassword", "machine") * 5:  # 20 failed sign-ins
        computed = app[HASHING].computed
        started = time.perf_counter()
        resp, cookie = await sign_in(client, name, "Wr0ng!Password")
        timings.setdefault(name, []).append(time.perf_counter() - started)
        hashes.setdefault(name, set()).add(app[HASHING].computed - computed)
        body = await resp.json()
        assert (set(body), cookie) == ({"id", "name", "message"}, "")
        bodies.setdefault(name, set()).add((resp.status, body["name"], body["message"]))
    assert set().union(*bodies.values()) == {(401, "PasswordMismatch", WRONG_CREDENTIALS)}
    # Every path checks one argon2 hash, so no account is much faster to refuse than another:
    # the count is the cause, the times (medians, loosely: a busy machine) the effect.
    assert hashes == {name: {1} for name in timings}, hashes
    medians = [statistics.median(t) for t in timings.values()]
    assert max(medians) < 3 * min(medians), timings


async def test_changing_a_password_ends_the_sessions(client: Client) -> None:
    user = await create_user(client, {"username": "bob", "password": STRONG})
    _, cookie = await sign_in(client, "bob")
    new = "N3w!Password#2026"
    resp = await client.post(
        f"{USERS}/{user['id']}/change-password", json={"password": new}, headers=ADMIN
    )
    assert resp.status == 200
    await error(
        await client.get("/api/admin/user", headers=session(cookie)), 401, "AuthenticationRequired"
    )
    resp, _ = await sign_in(client, "bob")
    await error(resp, 401, "PasswordMismatch")
    resp, _ = await sign_in(client, "bob", new)
    assert resp.status == 200


async def test_a_deleted_users_session_stops_at_once(client: Client) -> None:
    user = await create_user(client, {"username": "bob", "password": STRONG, "rootRole": 1})
    _, cookie = await sign_in(client, "bob")
    assert (await client.get(USERS, headers=session(cookie))).status == 200
    assert (await client.delete(f"{USERS}/{user['id']}", headers=ADMIN)).status == 200
    await error(await client.get(USERS, headers=session(cookie)), 401, "AuthenticationRequired")
    resp, _ = await sign_in(client, "bob")
    await error(resp, 401, "PasswordMismatch")


async def test_an_authorization_header_decides_over_a_cookie(client: Client) -> None:
    await create_user(client, {"username": "bob", "password": STRONG, "rootRole": 1})
    _, cookie = await sign_in(client, "bob")
    headers = session(cookie) | {"Authorization": "user:" + "0" * 64}
    await error(await client.get(USERS, headers=headers), 401, "AuthenticationRequired")
    forged = session("x" * 64)
    await error(await client.get(USERS, headers=forged), 401, "AuthenticationRequired")


async def test_a_username_that_looks_like_an_email_cannot_take_over_the_email(
    client: Client,
) -> None:
    """As in Unleash, what looks like an e-mail signs in by e-mail only."""
    await create_user(client, {"email": "alice@example.com", "password": STRONG})
    await create_user(client, {"username": "alice@example.com", "password": "0ther!Password#2026"})
    resp, _ = await sign_in(client, "Alice@Example.com")
    assert (resp.status, (await resp.json())["email"]) == (200, "alice@example.com")
    resp, _ = await sign_in(client, "alice@example.com", "0ther!Password#2026")
    await error(resp, 401, "PasswordMismatch")


async def test_sign_in_bodies_are_checked(client: Client) -> None:
    for body in ({}, {"username": "bob"}, {"username": "", "password": "x"}, [1]):
        resp = await client.post(LOGIN, json=body)
        await error(resp, 400, "ValidationError")
    resp = await client.post(LOGIN, data="username=bob", headers={"Content-Type": "text/plain"})
    await error(resp, 415, "ContentTypeerror")


async def test_concurrent_wrong_passwords_are_all_counted(
    client: Client, app: web.Application
) -> None:
    user = await create_user(client, {"username": "bob", "password": STRONG})
    results = await asyncio.gather(*(sign_in(client, "bob", "Wr0ng!Pass") for _ in range(6)))
    assert {r.status for r, _ in results} == {401}
    assert await app[FAILED_SIGN_INS].flush(app[POOL], everything=True) == 1
    body = await (await client.get(f"{USERS}/{user['id']}", headers=ADMIN)).json()
    assert body["loginAttempts"] == 6
    assert await sign_in_events(app, user["id"]) == [
        ("UserSignInFailed", 1, 1),
        ("UserSignInFailed", 5, 6),
    ]


async def test_a_password_changed_during_the_check_voids_the_sign_in(
    client: Client, app: web.Application, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old password was right when argon2 checked it, but a new one was committed before
    the session could be opened: no session with the old password."""
    user = await create_user(client, {"username": "bob", "password": STRONG})
    hashing = app[HASHING]
    check = hashing.verify
    new = "N3w!Password#2026"

    async def change_meanwhile(password_hash: str | None, password: str) -> bool:
        ok = await check(password_hash, password)
        monkeypatch.setattr(hashing, "verify", check)
        resp = await client.post(
            f"{USERS}/{user['id']}/change-password", json={"password": new}, headers=ADMIN
        )
        assert resp.status == 200
        return ok

    monkeypatch.setattr(hashing, "verify", change_meanwhile)
    resp, cookie = await sign_in(client, "bob")
    await error(resp, 401, "PasswordMismatch")
    assert cookie == ""
    assert await event_count(app, "UserSignedIn") == 0
    resp, _ = await sign_in(client, "bob", new)
    assert resp.status == 200
