"""Personal access tokens of a signed-in user: /api/admin/user/tokens, and how they authenticate."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import asyncpg
import pytest

from eventlog import connections
from service import auth
from service.appkeys import POOL
from service.token_usage import FLUSH_SECONDS, TokenUsage
from tests.factories import (
    ADMIN,
    STRONG,
    USERS,
    create_user,
    error,
    event_count,
    in_days,
    make_account,
    session,
    sign_in,
    work,
)

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

TOKENS = "/api/admin/user/tokens"
PAT_SECRET = re.compile(r"user:[0-9a-f]{64}")


async def signed_in(client: Client, role: int = 3, username: str = "bob") -> dict[str, str]:
    await create_user(client, {"username": username, "password": STRONG, "rootRole": role})
    _, cookie = await sign_in(client, username)
    return session(cookie)


async def new_token(client: Client, headers: dict[str, str], description: str = "t1") -> Any:
    return await client.post(
        TOKENS, json={"description": description, "expiresAt": in_days(30)}, headers=headers
    )


async def test_create_shows_the_secret_once_and_lists_a_hint(
    client: Client, app: web.Application
) -> None:
    me = await signed_in(client)
    resp = await new_token(client, me)
    assert resp.status == 201
    created = await resp.json()
    secret = created.pop("secret")
    assert PAT_SECRET.fullmatch(secret)
    user_id = (await (await client.get("/api/admin/user", headers=me)).json())["user"]["id"]
    hint = f"{secret[:9]}********"
    assert created == {
        "id": created["id"],
        "createdAt": created["createdAt"],
        "seenAt": None,
        "userId": user_id,
        "description": "t1",
        "expiresAt": created["expiresAt"],
    }
    listed = await (await client.get(TOKENS, headers=me)).json()
    assert listed == {"pats": [created | {"secret": hint}]}
    async with app[POOL].acquire() as conn:
        log = await conn.fetchval(
            "SELECT string_agg(data::text || metadata::text, ' ') FROM events"
        )
    assert secret not in log
    assert auth.hash_secret(secret) in log


async def test_a_token_acts_as_its_owner_with_the_owners_role(client: Client) -> None:
    me = await signed_in(client, role=3)
    secret = (await (await new_token(client, me)).json())["secret"]
    for value in (secret, f"Bearer {secret}", f"bearer {secret}"):
        resp = await client.get("/api/admin/user", headers={"Authorization": value})
        assert (await resp.json())["user"]["username"] == "bob"
    pat = {"Authorization": secret}
    assert (await client.get("/api/admin/projects", headers=pat)).status == 200
    resp = await client.post("/api/admin/projects", json={"id": "p", "name": "p"}, headers=pat)
    await error(resp, 403, "NoAccessError")
    # A token may manage its owner's tokens, as a session can.
    assert (await new_token(client, pat, "from a token")).status == 201


async def test_token_rules_in_unleash_order(client: Client, app: web.Application) -> None:
    me = await signed_in(client)
    assert (await new_token(client, me, "dup")).status == 201
    cases: list[tuple[dict[str, Any], int, str, str]] = [
        (
            {"description": "dup", "expiresAt": in_days(1)},
            409,
            "NameExistsError",
            "PAT description already exists.",
        ),
        (
            {"description": "x", "expiresAt": in_days(-1)},
            400,
            "ValidationError",
            "The expiry date should be in future.",
        ),
        (
            {"description": " ", "expiresAt": in_days(1)},
            400,
            "ValidationError",
            "PAT description cannot be empty.",
        ),
        ({"description": "x"}, 400, "ValidationError", "Object missing required field `expiresAt`"),
        (
            {"expiresAt": in_days(1)},
            400,
            "ValidationError",
            "Object missing required field `description`",
        ),
        ({"description": "x", "expiresAt": "soon"}, 400, "ValidationError", "Invalid RFC3339"),
        (
            {"description": "x", "expiresAt": "2099-01-01T00:00:00"},
            400,
            "ValidationError",
            "Expected `datetime` with a timezone",
        ),
    ]
    before = await event_count(app)
    for body, status, name, message in cases:
        resp = await client.post(TOKENS, json=body, headers=me)
        assert (await error(resp, status, name)).startswith(message), body
    assert await event_count(app) == before


async def test_at_most_ten_tokens_even_when_created_at_once(client: Client) -> None:
    me = await signed_in(client)
    responses = await asyncio.gather(*(new_token(client, me, f"t{i}") for i in range(14)))
    assert sorted(r.status for r in responses) == [201] * 10 + [403] * 4
    denied = next(r for r in responses if r.status == 403)
    message = await error(denied, 403, "OperationDeniedError")
    assert message == "Too many PATs (10) already exist for this user."
    # Unleash's order: the expiry is checked before the limit, the limit before the name.
    resp = await client.post(
        TOKENS, json={"description": "t0", "expiresAt": in_days(-1)}, headers=me
    )
    await error(resp, 400, "ValidationError")
    resp = await new_token(client, me, "t0")
    await error(resp, 403, "OperationDeniedError")
    assert len((await (await client.get(TOKENS, headers=me)).json())["pats"]) == 10


async def test_deleted_tokens_stop_at_once_and_others_are_untouched(client: Client) -> None:
    me = await signed_in(client, username="bob")
    other = await signed_in(client, username="eve")
    mine = await (await new_token(client, me)).json()
    theirs = await (await new_token(client, other)).json()
    resp = await client.delete(f"{TOKENS}/{theirs['id']}", headers=me)
    assert await error(resp, 404, "NotFoundError") == "No PAT found."
    assert (await client.get(TOKENS, headers={"Authorization": theirs["secret"]})).status == 200
    resp = await client.delete(f"{TOKENS}/{mine['id']}", headers=me)
    assert (resp.status, await resp.read()) == (200, b"")
    resp = await client.get(TOKENS, headers={"Authorization": mine["secret"]})
    await error(resp, 401, "AuthenticationRequired")
    for token_id in (mine["id"], "abc", "999999"):
        await error(await client.delete(f"{TOKENS}/{token_id}", headers=me), 404, "NotFoundError")


async def test_expired_tokens_and_tokens_of_deleted_users_are_refused(
    client: Client, app: web.Application
) -> None:
    expired = await make_account(
        app, role=1, token_expires_at=datetime.now(UTC) - timedelta(seconds=1)
    )
    await error(await client.get(USERS, headers=expired.headers), 401, "AuthenticationRequired")
    admin = await make_account(app, role=1)
    assert (await client.get(USERS, headers=admin.headers)).status == 200
    assert (await client.delete(f"{USERS}/{admin.id}", headers=ADMIN)).status == 200
    await error(await client.get(USERS, headers=admin.headers), 401, "AuthenticationRequired")
    async with app[POOL].acquire() as conn:
        assert (
            await conn.fetchval(
                "SELECT count(*) FROM personal_access_tokens WHERE user_id = $1", admin.id
            )
            == 0
        )


async def test_only_people_manage_their_own_tokens(client: Client, app: web.Application) -> None:
    machine = await make_account(app, role=1, service=True)
    for headers in (ADMIN, machine.headers):
        for method, path in (("GET", TOKENS), ("POST", TOKENS), ("DELETE", f"{TOKENS}/1")):
            resp = await client.request(method, path, json={}, headers=headers)
            assert await error(resp, 403, "NoAccessError") == "PATs require an authenticated user."
    await error(await client.get(TOKENS), 401, "AuthenticationRequired")


async def test_use_is_recorded_in_batches_not_per_request(
    client: Client, app: web.Application
) -> None:
    me = await signed_in(client)
    token = await (await new_token(client, me)).json()
    pat = {"Authorization": token["secret"]}
    started = asyncio.get_running_loop().time()
    for _ in range(25):
        assert (await client.get("/api/admin/projects", headers=pat)).status == 200
    deadline = asyncio.get_running_loop().time() + 6
    seen = None
    while seen is None and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.2)
        seen = (await (await client.get(TOKENS, headers=me)).json())["pats"][0]["seenAt"]
    assert seen is not None  # visible within a few seconds
    # Not 25 writes: one a flush (every FLUSH_SECONDS) at most, however long the requests took.
    flushes = 2 + int((asyncio.get_running_loop().time() - started) // FLUSH_SECONDS)
    assert 1 <= await event_count(app, "PersonalAccessTokensSeen") <= min(flushes, 24)


async def test_a_flush_that_fails_keeps_its_batch(app: web.Application, dsn: str) -> None:
    usage = TokenUsage(work())
    usage.seen(12345)
    broken = await connections.create_pool(dsn, 1)
    await broken.close()
    with pytest.raises(asyncpg.InterfaceError):
        await usage.flush(broken)
    pool = await connections.create_pool(dsn, 1)
    try:
        assert await usage.flush(pool) == 1  # the batch was kept for this try
        assert await usage.flush(pool) == 0
        assert (
            await pool.fetchval(
                "SELECT count(*) FROM events WHERE type = 'PersonalAccessTokensSeen'"
            )
            == 1
        )
    finally:
        await pool.close()
