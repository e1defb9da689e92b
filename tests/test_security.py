"""Security of accounts: every admin route declares its permission and is walked here; no
secret or password leaks into events, read models, logs or later answers; tokens are found by
hash; read models of accounts rebuild identically."""

from __future__ import annotations

import io
import json
import re
from typing import TYPE_CHECKING, Any

import pytest

from projections.replay import replay
from projections.verify import verify
from service import auth
from service.app import ROUTES
from service.appkeys import POOL
from service.logs import configure_logging
from tests import factories
from tests.conftest import ADMIN, ADMIN_TOKEN, AiohttpClient
from tests.test_features import error
from tests.test_pats import in_days
from tests.test_sessions import session, sign_in
from tests.test_users import STRONG, USERS, create_user, make_account

if TYPE_CHECKING:
    import asyncpg
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    from service.connections import Conn

    Client = TestClient[Any, Any]

PUBLIC_ROUTES = {
    ("GET", "/health"),
    ("HEAD", "/health"),
    ("GET", "/ready"),
    ("HEAD", "/ready"),
    ("POST", "/auth/simple/login"),
    ("POST", "/logout"),
}


def test_every_route_outside_the_public_few_is_an_admin_route_with_a_permission() -> None:
    public = {(r.method, r.path) for r in ROUTES if r.permission == auth.PUBLIC}
    assert public == PUBLIC_ROUTES
    for route in ROUTES:
        if (route.method, route.path) not in PUBLIC_ROUTES:
            assert route.path.startswith("/api/admin/"), route
    held = {auth.ADMIN, auth.OWN_ACCOUNT} | {
        p for r in auth.ROOT_ROLES.values() for p in r.permissions
    }
    # Every permission a route asks for is held by some principal, or only implied by ADMIN.
    admin_only = {r.permission for r in ROUTES} - held - {auth.PUBLIC}
    assert admin_only == {auth.DELETE_PROJECT}


async def api_token(client: Client, token_type: str) -> dict[str, str]:
    body = {"tokenName": token_type, "type": token_type}
    resp = await client.post("/api/admin/api-tokens", json=body, headers=ADMIN)
    return {"Authorization": (await resp.json())["secret"]}


async def test_walk_the_route_table_with_every_kind_of_principal(
    client: Client, app: web.Application
) -> None:
    """Each admin route, called by each principal, gets 401/403 exactly when the route table
    says so. Path parameters are placeholders: past auth, 404 or 400 are fine."""
    principals: dict[str, tuple[dict[str, str], frozenset[str] | None]] = {
        "nobody": ({}, None),
        "client token": (await api_token(client, "client"), frozenset()),
        "frontend token": (await api_token(client, "frontend"), frozenset()),
        "admin token": (ADMIN, auth.ADMIN_PERMISSIONS),
    }
    for role in auth.ROOT_ROLES.values():
        person = await make_account(app, role=role.id)
        principals[f"{role.name} user"] = (person.headers, role.permissions | {auth.OWN_ACCOUNT})
        machine = await make_account(app, role=role.id, service=True)
        principals[f"{role.name} service account"] = (machine.headers, role.permissions)
    walked = 0
    for route in ROUTES:
        if route.permission == auth.PUBLIC:
            continue
        path = re.sub(r"\{[^}]+\}", "placeholder", route.path)
        for who, (headers, permissions) in principals.items():
            resp = await client.request(route.method, path, json={}, headers=headers)
            if permissions is None:
                expected = 401
            elif route.permission == auth.OWN_ACCOUNT:
                expected = 0 if auth.OWN_ACCOUNT in permissions else 403
            else:
                allowed = auth.ADMIN in permissions or route.permission in permissions
                expected = 0 if allowed else 403
            if expected:
                assert resp.status == expected, (route, who, await resp.text())
            else:
                assert resp.status not in {401, 403}, (route, who, await resp.text())
            walked += 1
    assert walked > 300


async def test_no_secret_or_password_leaks(
    app: web.Application, aiohttp_client: AiohttpClient
) -> None:
    logs = io.StringIO()
    configure_logging("json", "debug", logs)
    client = await aiohttp_client(app)
    secrets: dict[str, str] = {"admin token": ADMIN_TOKEN}
    answers: list[str] = []  # every answer except the one that created a secret

    async def call(method: str, path: str, **kwargs: Any) -> Any:
        resp = await client.request(method, path, **kwargs)
        answers.append(json.dumps(dict(resp.headers)) + await resp.text())
        return resp

    # Passwords: set at creation, wrong, changed.
    secrets["password"] = STRONG
    user = await create_user(client, {"username": "bob", "password": STRONG, "rootRole": 1})
    secrets["wrong password"] = "Wr0ng!Password#1"
    await call(
        "POST",
        "/auth/simple/login",
        json={"username": "bob", "password": secrets["wrong password"]},
    )
    resp, cookie = await sign_in(client, "bob")
    secrets["session cookie"] = cookie
    me = session(cookie)
    # Tokens of every kind, each created once and then used.
    resp = await client.post(
        "/api/admin/user/tokens", json={"description": "d", "expiresAt": in_days(1)}, headers=me
    )
    secrets["personal access token"] = (await resp.json())["secret"]
    resp = await client.post(
        "/api/admin/service-account", json={"username": "sa", "rootRole": 1}, headers=ADMIN
    )
    account_id = (await resp.json())["id"]
    resp = await client.post(
        f"/api/admin/service-account/{account_id}/token",
        json={"description": "d", "expiresAt": in_days(1)},
        headers=ADMIN,
    )
    secrets["service account token"] = (await resp.json())["secret"]
    secrets["client token"] = (await api_token(client, "client"))["Authorization"]
    for headers in (
        me,
        {"Authorization": secrets["personal access token"]},
        {"Authorization": secrets["service account token"]},
        ADMIN,
    ):
        for path in (
            "/api/admin/user",
            "/api/admin/user/tokens",
            "/api/admin/api-tokens",
            f"/api/admin/service-account/{account_id}/token",
            USERS,
        ):
            await call("GET", path, headers=headers)
    await call("GET", "/api/admin/projects", headers={"Authorization": secrets["client token"]})
    secrets["new password"] = "N3w!Password#2026"
    await call(
        "POST",
        f"{USERS}/{user['id']}/change-password",
        json={"password": secrets["new password"]},
        headers=ADMIN,
    )
    await call("POST", "/logout", headers=me, allow_redirects=False)
    await app[POOL].fetchval("SELECT 1")
    async with app[POOL].acquire() as conn:
        stored = await everything_stored(conn)
    places = {"logs": logs.getvalue(), "stored": stored, "answers": "\n".join(answers)}
    assert len(places["logs"].splitlines()) >= 25
    for what, secret in secrets.items():
        for where, text in places.items():
            assert secret not in text, f"the {what} is in the {where}"
    # What is stored instead: hashes of tokens and cookies, argon2id of passwords.
    assert auth.hash_secret(secrets["service account token"]) in stored
    assert auth.hash_secret(secrets["session cookie"]) in stored
    assert "$argon2id$" in stored


async def everything_stored(conn: Conn) -> str:
    """The event log and every read-model and reporting row, as text."""
    parts = [await conn.fetchval("SELECT string_agg(e::text, ' ') FROM events e")]
    tables = await conn.fetch(
        "SELECT table_schema, table_name FROM information_schema.tables "
        "WHERE table_schema IN ('readmodel', 'reporting', 'public')"
    )
    for table in tables:
        ident = f'"{table["table_schema"]}"."{table["table_name"]}"'
        parts.append(await conn.fetchval(f"SELECT string_agg(t::text, ' ') FROM {ident} t"))
    return " ".join(p for p in parts if p)


@pytest.mark.parametrize(
    ("query", "index"),
    [
        (auth.RESOLVE_API_TOKEN, "api_tokens_secret_hash_key"),
        (auth.RESOLVE_PAT, "personal_access_tokens_secret_hash_key"),
        (auth.RESOLVE_SESSION, "sessions_pkey"),
    ],
)
async def test_credentials_are_found_by_one_index_lookup_of_their_hash(
    conn: asyncpg.Connection, query: str, index: str
) -> None:
    await conn.execute("SET enable_seqscan = off")  # tiny tables: ask what the plan can use
    plan = "\n".join(r[0] for r in await conn.fetch("EXPLAIN " + query, "0" * 64))
    assert f"Index Scan using {index}" in plan


async def test_a_token_that_differs_in_one_character_is_refused(
    client: Client, app: web.Application
) -> None:
    person = await make_account(app, role=1)
    assert (await client.get(USERS, headers=person.headers)).status == 200
    secret = person.secret
    for forged in (
        secret.upper(),
        secret[:-1],
        secret + "0",
        secret[:-1] + ("1" if secret[-1] != "1" else "2"),
        f" {secret} x",
    ):
        await error(
            await client.get(USERS, headers={"Authorization": forged}),
            401,
            "AuthenticationRequired",
        )


async def test_account_read_models_rebuild_identically(any_conn: asyncpg.Connection) -> None:
    from datetime import UTC, datetime, timedelta  # noqa: PLC0415

    from service.users.events import (  # noqa: PLC0415  # noqa: PLC0415
        PersonalAccessTokensSeen,
        TokenUse,
        UserSignedIn,
        UserSignInFailed,
    )

    people = [await factories.account(any_conn, role=r) for r in (1, 2, 3)]
    machine = await factories.account(any_conn, role=1, service=True)
    now = datetime.now(UTC)
    await factories.append(
        any_conn,
        [
            UserSignInFailed(user_id=people[0].id, attempted_at=now, login_attempts=1),
            UserSignedIn(
                user_id=people[0].id,
                seen_at=now,
                session_hash="ab" * 32,
                session_expires_at=now + timedelta(hours=48),
            ),
        ],
        stream=("user", str(people[0].id)),
    )
    await factories.append(
        any_conn,
        [
            PersonalAccessTokensSeen(
                seen=[TokenUse(token_id=1, seen_at=now), TokenUse(token_id=4, seen_at=now)]
            )
        ],
        stream=("token-usage", "personal-access-tokens"),
    )
    tables = ("users", "user_passwords", "personal_access_tokens", "sessions")
    before = {
        t: [tuple(r) for r in await any_conn.fetch(f"SELECT * FROM {t} ORDER BY 1")] for t in tables
    }
    assert len(before["users"]) == 4
    assert machine.id in [row[0] for row in before["users"]]
    await replay(any_conn)
    after = {
        t: [tuple(r) for r in await any_conn.fetch(f"SELECT * FROM {t} ORDER BY 1")] for t in tables
    }
    assert after == before
    report = await verify(any_conn)
    assert report.problems == []
