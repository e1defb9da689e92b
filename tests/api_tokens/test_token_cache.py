"""Client and frontend tokens' principals are cached per process (auth.CachedTokens), so that
an SDK's poll costs no database round trip; a revoked or expired token must still stop working
at once on the replica that revoked it, and within milliseconds on the others. Admin tokens are
never cached."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from service import auth
from service.app import create_app
from service.appkeys import POOL
from service.auth import CachedTokens, Principal
from tests import factories
from tests.clientapi import token
from tests.conftest import ServiceTestServer, resolve_with_test_principals
from tests.factories import ADMIN

if TYPE_CHECKING:
    import asyncpg
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    from service.settings import Settings
    from tests.conftest import AiohttpClient

    Client = TestClient[Any, Any]

FEATURES = "/api/client/features"


async def status(client: Client, secret: str) -> int:
    return (await client.get(FEATURES, headers={"Authorization": secret})).status


async def test_a_revoked_token_is_refused_at_once(client: Client, app: web.Application) -> None:
    secret = await token(client)
    assert [await status(client, secret) for _ in range(3)] == [200, 200, 200]  # cached now
    resp = await client.delete(f"/api/admin/api-tokens/{secret}", headers=ADMIN)
    assert resp.status == 200
    assert await status(client, secret) == 401
    # An unknown token is never cached: one created now works at once.
    again = await token(client)
    assert await status(client, again) == 200
    assert await app[POOL].fetchval("SELECT count(*) FROM api_tokens WHERE type = 'client'") == 1


async def test_a_token_revoked_by_another_replica_is_refused_within_milliseconds(
    client: Client, settings: Settings, dsn: str, aiohttp_client: AiohttpClient
) -> None:
    other = await aiohttp_client(
        ServiceTestServer(create_app(settings, dsn, resolver=resolve_with_test_principals))
    )
    secret = await token(client)
    assert [await status(other, secret) for _ in range(3)] == [200, 200, 200]  # cached there
    assert (await client.delete(f"/api/admin/api-tokens/{secret}", headers=ADMIN)).status == 200
    revoked = time.monotonic()
    # Told by the feed (the log's NOTIFY), well before the cache's own time limit.
    while await status(other, secret) == 200:
        assert time.monotonic() - revoked < auth.CACHED_SECONDS / 2, "still accepted"
        await asyncio.sleep(0.005)


async def test_an_expired_token_is_refused_from_its_expiry(client: Client) -> None:
    expires = datetime.now(UTC) + timedelta(seconds=1.5)
    secret = (await factories.api_token(client, name="brief", expiresAt=expires.isoformat()))[
        "secret"
    ]
    assert await status(client, secret) == 200  # cached now
    await asyncio.sleep(max((expires - datetime.now(UTC)).total_seconds(), 0) + 0.05)
    assert await status(client, secret) == 401


# --- the cache alone ----------------------------------------------------------------------------


class Lookups:
    """A resolver that counts its calls; `gate`, when set, holds each lookup until released."""

    def __init__(self, principal: Principal | None) -> None:
        self.principal = principal
        self.calls = 0
        self.gate: asyncio.Event | None = None

    async def __call__(self, _pool: asyncpg.Pool, _token: str) -> Principal | None:
        self.calls += 1
        if self.gate is not None:
            await self.gate.wait()
        return self.principal


def api_token(expires_at: datetime | None = None) -> Principal:
    return Principal(
        kind="api-token",
        id="api-token:1",
        name="sdk",
        permissions=frozenset({auth.CLIENT}),
        environment="development",
        expires_at=expires_at,
    )


POOL_ANY: Any = None


async def test_a_known_api_token_is_looked_up_once_until_forgotten() -> None:
    lookups = Lookups(api_token())
    cache = CachedTokens(lookups)
    assert [await cache(POOL_ANY, "*:development.s") for _ in range(3)] == [api_token()] * 3
    assert lookups.calls == 1
    cache.forget()
    await cache(POOL_ANY, "*:development.s")
    assert lookups.calls == 2
    await cache(POOL_ANY, "*:development.other")  # another secret, another entry
    assert lookups.calls == 3


async def test_entries_live_their_seconds_and_never_past_the_tokens_expiry() -> None:
    lookups = Lookups(api_token())
    # Half a second, so that two calls one after the other fall within it on a busy machine.
    cache = CachedTokens(lookups, seconds=0.5)
    await cache(POOL_ANY, "s")
    await cache(POOL_ANY, "s")
    assert lookups.calls == 1
    await asyncio.sleep(0.6)
    await cache(POOL_ANY, "s")
    assert lookups.calls == 2
    expiring = Lookups(api_token(datetime.now(UTC) + timedelta(seconds=0.5)))
    cache = CachedTokens(expiring, seconds=60)
    await cache(POOL_ANY, "s")
    await cache(POOL_ANY, "s")
    assert expiring.calls == 1
    await asyncio.sleep(0.6)
    expiring.principal = None  # the database now refuses it: expired
    assert await cache(POOL_ANY, "s") is None
    assert expiring.calls == 2


async def test_unknown_tokens_pats_and_people_always_go_to_the_database() -> None:
    unknown = Lookups(None)
    cache = CachedTokens(unknown)
    assert [await cache(POOL_ANY, "nope") for _ in range(2)] == [None, None]
    assert unknown.calls == 2
    person = Principal(kind="user", id="user:1", name="p", permissions=frozenset())
    pats = Lookups(person)
    cache = CachedTokens(pats)
    for secret in ("user:abc", "user:abc", "a-test-principal", "a-test-principal"):
        await cache(POOL_ANY, secret)
    assert pats.calls == 4


async def test_admin_tokens_always_go_to_the_database() -> None:
    """Another replica's deletion of one must hold here from its commit on, before the feed
    brings the news (tests/processes/test_revocation.py)."""
    admin = Principal(
        kind="api-token", id="api-token:2", name="admin", permissions=auth.ADMIN_PERMISSIONS
    )
    lookups = Lookups(admin)
    cache = CachedTokens(lookups)
    assert [await cache(POOL_ANY, "*:*.s") for _ in range(3)] == [admin] * 3
    assert lookups.calls == 3
    lookups.principal = None  # deleted
    assert await cache(POOL_ANY, "*:*.s") is None


async def test_a_lookup_under_way_while_the_cache_is_emptied_is_not_kept() -> None:
    """Revoked meanwhile: the lookup may have read the token before its deletion."""
    lookups = Lookups(api_token())
    lookups.gate = asyncio.Event()
    cache = CachedTokens(lookups)
    pending = asyncio.create_task(cache(POOL_ANY, "s"))
    await asyncio.sleep(0)
    cache.forget()
    lookups.gate.set()
    assert await pending == api_token()  # this request was already under way
    await cache(POOL_ANY, "s")
    assert lookups.calls == 2  # but its answer was not kept
