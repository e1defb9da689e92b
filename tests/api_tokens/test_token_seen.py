"""An API token's `seenAt`: its last use, recorded in batches (service.token_usage) as requests
authenticate with it, whatever its kind; null for a token never used; never moved back by a
replica's older batch; the same after a rebuild of the read models."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import asyncpg
import pytest

from eventlog import connections
from projections.verify import verify
from service.appkeys import POOL, TOKEN_USAGE
from service.token_usage import TokenUsage
from tests.factories import ADMIN, api_token, event_count, ok, work

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

TOKENS = "/api/admin/api-tokens"


async def listed(client: Client) -> dict[str, Any]:
    """The token list by name."""
    return {
        t["tokenName"]: t for t in (await ok(await client.get(TOKENS, headers=ADMIN)))["tokens"]
    }


def usage_of(app: web.Application) -> TokenUsage:
    recorder = app[TOKEN_USAGE]
    assert isinstance(recorder, TokenUsage)
    return recorder


async def test_a_token_used_shows_seen_at_after_the_flush_and_one_never_used_null(
    client: Client, app: web.Application
) -> None:
    sdk = await api_token(client, name="sdk")
    browser = await api_token(client, "frontend", name="browser")
    scripts = await api_token(client, "admin", name="scripts")
    await api_token(client, name="idle")
    before = datetime.now(UTC)
    for path, token in (
        ("/api/client/features", sdk),
        ("/api/frontend", browser),
        ("/api/admin/projects", scripts),
    ):
        await ok(await client.get(path, headers={"Authorization": token["secret"]}), 200)
    after = datetime.now(UTC)
    await usage_of(app).flush(app[POOL])
    tokens = await listed(client)
    for name in ("sdk", "browser", "scripts"):
        seen = tokens[name]["seenAt"]
        assert seen is not None, name
        assert before <= datetime.fromisoformat(seen) <= after, name
    assert tokens["idle"]["seenAt"] is None
    assert await event_count(app, "ApiTokensSeen") >= 1
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok  # a rebuild of the read models gives the same


async def test_the_answer_that_creates_a_token_says_it_was_never_seen(client: Client) -> None:
    assert (await api_token(client, name="new"))["seenAt"] is None


async def test_an_older_batch_does_not_move_seen_at_back(
    client: Client, app: web.Application
) -> None:
    """Two replicas saw the token; the one that saw it last flushes first."""
    token = await api_token(client, name="sdk")
    first, last = TokenUsage(work()), TokenUsage(work())
    first.seen(token["id"], "api-token")
    await asyncio.sleep(0.001)  # the clock moves on between the two uses
    last.seen(token["id"], "api-token")
    assert await last.flush(app[POOL]) == 1
    latest = (await listed(client))["sdk"]["seenAt"]
    assert await first.flush(app[POOL]) == 1
    async with app[POOL].acquire() as conn:
        batches = [
            json.loads(data)["seen"]
            for data in await conn.fetchval(
                "SELECT array_agg(data::text ORDER BY position) FROM events"
                " WHERE type = 'ApiTokensSeen' AND data @> $1::jsonb",
                json.dumps({"seen": [{"token_id": token["id"]}]}),
            )
        ]
        assert (await verify(conn)).ok
    times = [datetime.fromisoformat(seen[0]["seen_at"]) for seen in batches]
    assert len(times) == 2
    assert times[1] < times[0]  # the older time was flushed after the later one
    assert (await listed(client))["sdk"]["seenAt"] == latest
    assert datetime.fromisoformat(latest) == times[0]


async def test_a_flush_writes_both_kinds_and_one_that_fails_keeps_them(
    app: web.Application, dsn: str
) -> None:
    usage = TokenUsage(work())
    usage.seen(12345)  # a personal access token, as the users' tokens have always been
    usage.seen(777, "api-token")
    broken = await connections.create_pool(dsn, 1)
    await broken.close()
    with pytest.raises(asyncpg.InterfaceError):
        await usage.flush(broken)
    pool = await connections.create_pool(dsn, 1)
    try:
        assert await usage.flush(pool) == 2  # both batches were kept for this try
        assert await usage.flush(pool) == 0
        rows = await pool.fetch(
            "SELECT stream_key, type, data::text FROM events"
            " WHERE stream_type = 'token-usage' ORDER BY position"
        )
    finally:
        await pool.close()
    found = {(r["stream_key"], r["type"]): json.loads(r["data"])["seen"] for r in rows}
    assert set(found) == {
        ("personal-access-tokens", "PersonalAccessTokensSeen"),
        ("api-tokens", "ApiTokensSeen"),
    }
    assert [
        u["token_id"] for u in found[("personal-access-tokens", "PersonalAccessTokensSeen")]
    ] == [12345]
    assert [u["token_id"] for u in found[("api-tokens", "ApiTokensSeen")]] == [777]
