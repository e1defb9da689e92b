"""A rolling update acted out with the image (`make deploy-test`): what Kubernetes does with
the Deployment in deploy/, with containers on one host.

Three replicas of the image run on one PostgreSQL behind tests/containers/proxy.py, which acts
as the Service (probes /ready, retries nothing). Under a steady mixed load at concurrency 16
(creates, clones and user creates; searches and token listings), each replica is replaced in
turn: start a new one, wait until the proxy sees it ready, SIGTERM the old one (its /ready
turns 503 for SHUTDOWN_DRAIN_SECONDS while it still serves, then it finishes its requests and
exits 0). Every replica reads the same PII master key from a mounted file, as from the
Deployment's Secret. No request may fail, every acknowledged write must be there afterwards and
`verify` must pass. Before that, the migration Job's command (with no master key, as the Job) is
started three times at once on an empty database: each migration is applied once.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import random
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import aiohttp
import asyncpg
import pytest

from eventlog import migrations
from tests.containers.podman import ROOT, Container, image, run_once, start_job, unique_name
from tests.containers.test_image import master_key_file
from tests.harness import free_port, report
from tests.pg import Cluster

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = [pytest.mark.container, pytest.mark.timeout(600)]

ADMIN = "*:*.rollout-test-admin-secret-0123456789abcdef"
CONCURRENCY = 16
DRAIN_SECONDS = 3  # the proxy probes every 0.5 s: it stops sending long before the drain ends
SHUTDOWN_TIMEOUT = 10
SETTLE_SECONDS = 3  # load before the first replacement and after the last
KINDS = ("create", "clone", "user", "search", "tokens")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """Not conftest's `cluster`: one server for the module, and no skip without PostgreSQL 15
    (a container test fails rather than pass without running)."""
    pg = Cluster()
    try:
        yield pg
    finally:
        pg.destroy()


async def test_the_migration_job_started_three_times_at_once_applies_each_migration_once(
    cluster: Cluster,
) -> None:
    name = image()
    env = {"DATABASE_URL": await cluster.create_database("race")}
    jobs = [start_job(name, "migrate", env=env) for _ in range(3)]
    outputs = [job.communicate(timeout=120) for job in jobs]
    assert [job.returncode for job in jobs] == [0, 0, 0], outputs
    applied = [
        json.loads(line)["migration"]
        for out, _ in outputs
        for line in out.splitlines()
        if line.startswith("{") and json.loads(line).get("event") == "migration_applied"
    ]
    expected = [f"{m.version:04d}_{m.name}" for m in migrations.load_migrations()]
    assert sorted(applied) == expected, applied  # each once, by one of the three
    conn = await asyncpg.connect(cluster.dsn("race"))
    try:
        rows = await conn.fetch("SELECT version FROM schema_migrations ORDER BY version")
    finally:
        await conn.close()
    assert [r["version"] for r in rows] == list(range(1, len(expected) + 1))


@dataclass
class Load:
    """Concurrent clients through the proxy; what was acknowledged, and what failed."""

    url: str
    account: int
    seed: str
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    counts: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    emails: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    serial: Iterator[int] = field(default_factory=itertools.count)

    async def client(self, number: int) -> None:
        rng = random.Random(number)
        async with aiohttp.ClientSession(
            headers={"Authorization": ADMIN}, timeout=aiohttp.ClientTimeout(total=30)
        ) as session:
            while not self.stop.is_set():
                await self.one(session, rng)

    async def one(self, session: aiohttp.ClientSession, rng: random.Random) -> None:
        kind = rng.choices(KINDS, weights=[3, 2, 2, 3, 2])[0]
        n = next(self.serial)
        features = f"{self.url}/api/admin/projects/default/features"
        body: Any
        if kind == "create":
            name, method, path, body, want = (
                f"roll.{n}",
                "POST",
                features,
                {"name": f"roll.{n}"},
                200,
            )
        elif kind == "clone":
            name, method, want = f"roll.copy.{n}", "POST", 200
            path, body = f"{features}/{self.seed}/clone", {"name": name}
        elif kind == "user":
            name, method, want = f"roll{n}@example.com", "POST", 201
            path, body = f"{self.url}/api/admin/user-admin", {"email": name, "rootRole": 3}
        elif kind == "search":
            name, method, want, body = "", "GET", 200, None
            path = f"{self.url}/api/admin/user-admin/search?q=roll{rng.randint(1, 999)}"
        else:
            name, method, want, body = "", "GET", 200, None
            path = f"{self.url}/api/admin/service-account/{self.account}/token"
        began = time.monotonic()
        try:
            async with session.request(method, path, json=body) as resp:
                text = await resp.text()
                status = resp.status
        except (aiohttp.ClientError, TimeoutError) as exc:
            self.failures.append(f"{kind} {method} {path}: {type(exc).__name__}: {exc}")
            return
        self.latencies.append(time.monotonic() - began)
        self.counts[kind] += 1
        if status != want:
            self.failures.append(f"{kind} {method} {path}: {status} {text[:300]}")
        elif kind in {"create", "clone"}:
            self.flags.append(name)
        elif kind == "user":
            self.emails.append(name)


async def proxy_call(port: int, method: str, path: str, body: Any = None) -> Any:
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, f"http://127.0.0.1:{port}{path}", json=body) as resp,
    ):
        assert resp.status == 200
        return await resp.json()


@dataclass
class Rollout:
    """Replicas of the image behind the proxy, replaced one by one as a Deployment does."""

    image: str
    env: dict[str, str]
    volumes: tuple[str, ...]
    proxy_port: int
    boxes: list[Container] = field(default_factory=list)
    current: list[Container] = field(default_factory=list)
    stops: list[tuple[int, float]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.proxy_port}"

    async def add(self) -> Container:
        """A new replica: started, ready, then in the proxy's rotation."""
        box = Container(
            unique_name("flagstore-replica"),
            free_port(),
            ("serve", "--no-migrate"),
            self.env,
            self.volumes,
        )
        self.boxes.append(box)
        box.start(self.image)
        await box.wait_ready()
        self.current.append(box)
        await self.publish()
        deadline = time.monotonic() + 30
        while not (await proxy_call(self.proxy_port, "GET", "/_proxy/state"))[box.url]["ready"]:
            assert time.monotonic() < deadline, f"{box.name} never entered the rotation"
            await asyncio.sleep(0.1)
        return box

    async def retire(self, box: Container) -> None:
        """podman stop: SIGTERM, SIGKILL after the grace period (Kubernetes:
        terminationGracePeriodSeconds = drain + timeout + 10); then out of the endpoints."""
        grace = DRAIN_SECONDS + SHUTDOWN_TIMEOUT + 10
        self.stops.append(await asyncio.to_thread(box.stop, grace))
        self.current.remove(box)
        await self.publish()

    async def publish(self) -> None:
        await proxy_call(self.proxy_port, "PUT", "/_proxy/backends", [b.url for b in self.current])

    async def seed(self) -> int:
        """A service account (for the token listings) and the flag that clones copy."""
        async with aiohttp.ClientSession(headers={"Authorization": ADMIN}) as admin:
            async with admin.post(
                f"{self.url}/api/admin/service-account",
                json={"username": "rollout-bot", "rootRole": 1},
            ) as resp:
                assert resp.status == 201, await resp.text()
                account: int = (await resp.json())["id"]
            features = f"{self.url}/api/admin/projects/default/features"
            async with admin.post(features, json={"name": "roll.seed"}) as resp:
                assert resp.status == 200, await resp.text()
        return account


async def stored_writes(dsn: str) -> tuple[set[str], set[str]]:
    """Flag names and user e-mails in the read models, after the rollout."""
    conn = await asyncpg.connect(dsn)
    try:
        flags = {r["name"] for r in await conn.fetch("SELECT name FROM readmodel.features")}
        emails = {r["email"] for r in await conn.fetch("SELECT email FROM readmodel.users")}
    finally:
        await conn.close()
    return flags, emails


async def test_a_rolling_update_under_load_fails_no_request_and_loses_no_write(
    cluster: Cluster, tmp_path: Path
) -> None:
    name = image()
    dsn = await cluster.create_database()
    job = run_once(name, "migrate", env={"DATABASE_URL": dsn})
    assert job.returncode == 0, job.stderr
    key = master_key_file(tmp_path / "secrets")  # the same in every replica
    env = {
        "DATABASE_URL": dsn,
        "INIT_ADMIN_API_TOKENS": ADMIN,
        "SHUTDOWN_DRAIN_SECONDS": str(DRAIN_SECONDS),
        "SHUTDOWN_TIMEOUT_SECONDS": str(SHUTDOWN_TIMEOUT),
        "DB_POOL_SIZE": "5",
        **key.env,
    }
    rollout = Rollout(name, env, (key.volume,), free_port())
    proxy = subprocess.Popen(
        [sys.executable, "-m", "tests.containers.proxy", str(rollout.proxy_port)], cwd=ROOT
    )
    try:
        old = [await rollout.add() for _ in range(3)]
        load = Load(rollout.url, await rollout.seed(), "roll.seed")
        clients = [asyncio.create_task(load.client(i)) for i in range(CONCURRENCY)]
        began = time.monotonic()
        await asyncio.sleep(SETTLE_SECONDS)
        for previous in old:
            await rollout.add()
            await rollout.retire(previous)
        rollout_seconds = time.monotonic() - began - SETTLE_SECONDS
        await asyncio.sleep(SETTLE_SECONDS)
        load.stop.set()
        await asyncio.gather(*clients)
        load_seconds = time.monotonic() - began
        state = await proxy_call(rollout.proxy_port, "GET", "/_proxy/state")

        total = sum(load.counts.values())
        lat = sorted(load.latencies)
        report(
            f"\nrollout: {total} requests in {load_seconds:.1f} s ({total / load_seconds:.0f}/s) "
            f"at concurrency {CONCURRENCY}, {dict(load.counts)}; rollout of 3 replicas took "
            f"{rollout_seconds:.1f} s; failed {len(load.failures)}; old replicas stopped "
            f"(exit code, seconds) {[(c, round(s, 2)) for c, s in rollout.stops]}; p50 "
            f"{lat[len(lat) // 2] * 1000:.0f} ms, p99 {lat[int(len(lat) * 0.99)] * 1000:.0f} ms; "
            f"requests per new replica {[b['requests'] for b in state.values()]}"
        )
        assert load.failures == [], load.failures[:20]
        assert [code for code, _ in rollout.stops] == [0, 0, 0]
        assert all(s < DRAIN_SECONDS + SHUTDOWN_TIMEOUT + 7 for _, s in rollout.stops)
        assert all(b["requests"] > 0 for b in state.values()), state  # the new ones served
        assert min(load.counts[kind] for kind in KINDS) > 0, load.counts

        flags, emails = await stored_writes(dsn)
        assert set(load.flags) <= flags, sorted(set(load.flags) - flags)[:10]
        assert set(load.emails) <= emails, sorted(set(load.emails) - emails)[:10]
        verified = run_once(
            name, "verify", env={"DATABASE_URL": dsn, **key.env}, volumes=(key.volume,)
        )
        assert verified.returncode == 0, verified.stdout + verified.stderr
    finally:
        proxy.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proxy.wait(timeout=10)
        for box in rollout.boxes:
            box.remove()
