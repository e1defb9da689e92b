"""Sign-in abuse against the real service, a subprocess: a burst of concurrent attempts keeps
its memory bounded (argon2 a few at a time) and leaves other requests' latency alone."""

from __future__ import annotations

import asyncio
import statistics
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import aiohttp
import psutil
import pytest

from tests.factories import ADMIN_TOKEN, STRONG, create_user
from tests.harness import client

if TYPE_CHECKING:
    from tests.harness import Harness
    from tests.pg import PgServer

pytestmark = pytest.mark.process

ATTEMPTS = 16
MAX_RSS = 200 * 1024**2
MAX_HEALTH_P99 = 0.25  # seconds: argon2 on the loop would hold it a whole check, 16 queued


@dataclass
class Burst:
    statuses: list[int]
    peak_rss: int  # bytes, of the service's process alone
    health: list[float]  # seconds, sequential GET /health during the burst
    seconds: float

    @property
    def health_p99(self) -> float:
        return statistics.quantiles(self.health, n=100, method="inclusive")[98]

    def __str__(self) -> str:
        return (
            f"{len(self.statuses)} concurrent sign-ins in {self.seconds:.2f} s: peak RSS "
            f"{self.peak_rss / 1024**2:.0f} MB; /health p50 "
            f"{statistics.median(self.health) * 1000:.1f} ms, p99 {self.health_p99 * 1000:.1f} "
            f"ms, max {max(self.health) * 1000:.1f} ms over {len(self.health)} calls"
        )


async def burst(url: str, pid: int, attempts: int = ATTEMPTS) -> Burst:
    """`attempts` wrong passwords at once, each from its own address (X-Forwarded-For, one
    trusted proxy), while RSS is sampled and /health is called one call after another."""
    process = psutil.Process(pid)
    peak = process.memory_info().rss
    health: list[float] = []
    connector = aiohttp.TCPConnector(limit=0, force_close=True)
    async with (
        aiohttp.ClientSession(connector=connector) as attackers,
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as prober,
    ):

        async def attempt(i: int) -> int:
            body = {"username": "bob", "password": f"Wr0ng!Password#{i}"}
            headers = {"X-Forwarded-For": f"198.51.100.{i + 1}"}
            async with attackers.post(f"{url}/auth/simple/login", json=body, headers=headers) as r:
                return r.status

        async def sample() -> None:
            nonlocal peak
            while True:
                peak = max(peak, process.memory_info().rss)
                await asyncio.sleep(0.01)

        async def probe() -> None:
            while True:
                started = time.perf_counter()
                async with prober.get(f"{url}/health") as resp:
                    assert resp.status == 200
                    await resp.read()
                health.append(time.perf_counter() - started)

        started = time.perf_counter()
        watchers = [asyncio.create_task(sample()), asyncio.create_task(probe())]
        try:
            statuses = await asyncio.gather(*(attempt(i) for i in range(attempts)))
        finally:
            for task in watchers:
                task.cancel()
            await asyncio.gather(*watchers, return_exceptions=True)
        return Burst(list(statuses), peak, health, time.perf_counter() - started)


async def serve_for_burst(harness: Harness, pg18: PgServer) -> tuple[str, int]:
    """The service on a fresh database with the user bob, one trusted proxy and limits that
    let the burst through: its URL and pid."""
    server = await harness.serve(
        harness.new_dir(),
        DATABASE_URL=await pg18.new_database(),
        INIT_ADMIN_API_TOKENS=ADMIN_TOKEN,
        TRUSTED_PROXY_HOPS="1",
        LOGIN_RATE_LIMIT_PER_ADDRESS="1000",
        LOGIN_RATE_LIMIT_PER_ACCOUNT="1000",
    )
    async with client(server.url) as http:
        await create_user(http, {"username": "bob", "password": STRONG})
    return server.url, server.proc.pid


async def test_sixteen_concurrent_sign_ins_keep_memory_and_latency_bounded(
    harness: Harness, pg18: PgServer
) -> None:
    url, pid = await serve_for_burst(harness, pg18)
    result = await burst(url, pid)
    print(f"\npassword_hash_concurrency=1: {result}")  # noqa: T201 - the figures, with -s
    assert result.statuses == [401] * ATTEMPTS  # every attempt got through and was refused
    assert len(result.health) >= 20
    assert result.peak_rss < MAX_RSS, str(result)
    assert result.health_p99 < MAX_HEALTH_P99, str(result)
