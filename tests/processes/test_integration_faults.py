"""Integrations' delivery under faults, with real processes (docs/integrations.md, "Delivery"):
a receiver down for ten minutes, the service killed with -9 mid-delivery, a receiver that takes
30 s to answer, PostgreSQL restarting, three replicas on one database and the one delivering
killed.

Each test ends by comparing what its receivers got with the log: the delivered
`Unleash-Event-Id`s are exactly the positions of the events the integration subscribes to, first
arrivals in log order, each duplicate the first arrival's body again, none lost. The fault table
(shown with `-s`; with FAULT_TABLE=path set, one JSON line a row appended to that file) gives
scenario, events, delivered, duplicates, lost, and the test's figures.

The changes are flags switched on and off in an environment many at a time (a request switches
a group of flags: an event each), the cheapest way to many events; scenario 3 measures flag
creation, the request its figure is about.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp
import asyncpg
import pytest
from aiohttp import web

from service.addons import delivery
from tests.addons.receiver import Arrival, Receiver
from tests.factories import ADMIN, ADMIN_TOKEN, FEATURES
from tests.harness import Harness, Server, free_port, report, stop

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterable, Sequence

    from tests.pg import Cluster

pytestmark = pytest.mark.process

ADDONS = "/api/admin/addons"
BULK = "/api/admin/projects/default/bulk_features/environments/development/"
TOGGLES = ["feature-environment-enabled", "feature-environment-disabled"]
CREATES = ["feature-created"]
# The delivery's clock runs 60 times the wall clock: ten minutes of an outage in ten seconds.
# The backoff's cap (60 s of that clock, 1 s here) has a receiver that is back tried soon.
TIME_SCALE = "60"
RETRY_MAX_SECONDS = "60"
# What a process that dies can deliver twice: the successes not recorded yet (a batch), and
# the request in flight.
AT_MOST_TWICE = delivery.FLUSH_EVERY + 1
GROUP = 25  # flags switched by one request
SLOW_SECONDS = 30.0


# --- receivers --------------------------------------------------------------------------------


class Gate:
    """A receiver's answer: 503 while shut (the receiver is down), 200 once open; the time of
    each event's first success."""

    def __init__(self, *, shut: bool = False) -> None:
        self.shut = shut
        self.refused: list[int] = []
        self.first: dict[int, float] = {}

    def __call__(self, arrival: Arrival) -> tuple[int, dict[str, str]]:
        if self.shut:
            self.refused.append(arrival.event_id)
            return 503, {}
        self.first.setdefault(arrival.event_id, time.monotonic())
        return 200, {}


@dataclass
class SlowReceiver(Receiver):
    """Its first `slow` requests take SLOW_SECONDS to answer; then it is quick."""

    slow: int = 1

    async def handle(self, request: web.Request) -> web.Response:
        if self.slow > 0:
            self.slow -= 1
            await asyncio.sleep(SLOW_SECONDS)
        return await super().handle(request)


class Hook:
    """A webhook receiver on 127.0.0.1, served in the test's event loop: it can go down (its
    port refuses connections) and come back on the same port."""

    def __init__(self, receiver: Receiver) -> None:
        self.receiver = receiver
        self.port = free_port()
        self.runner: web.AppRunner | None = None
        self.ids: set[int] = set()  # of the deliveries counted so far
        self.counted = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    async def up(self) -> None:
        self.runner = web.AppRunner(self.receiver.app(), access_log=None, shutdown_timeout=0.1)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", self.port).start()

    async def down(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None

    def delivered(self) -> set[int]:
        """The events delivered so far."""
        self._new()
        return self.ids

    def _new(self) -> list[int]:
        """The events of the deliveries since the last look (a receiver gets thousands: each
        arrival is read once)."""
        arrived = self.receiver.delivered
        new = [a.event_id for a in arrived[self.counted :]]
        self.counted = len(arrived)
        self.ids.update(new)
        return new

    async def wait_for(self, expected: Iterable[int], timeout: float) -> float:
        """Until every one of `expected` has been delivered; the seconds that took."""
        started = time.monotonic()
        missing = set(expected) - self.delivered()
        try:
            async with asyncio.timeout(timeout):
                while missing:
                    self.receiver.arrived.clear()
                    await self.receiver.arrived.wait()
                    missing.difference_update(self._new())
        except TimeoutError:
            left = sorted(missing)
            pytest.fail(f"{len(left)} events not delivered within {timeout} s: {left[:5]}")
        return time.monotonic() - started

    async def wait_count(self, count: int, timeout: float = 60) -> None:
        """Until `count` deliveries have succeeded."""
        await self.receiver.wait_for(count, timeout)


@pytest.fixture
async def hooks() -> AsyncIterator[Callable[[Receiver], Hook]]:
    """Receivers the test makes (started with `up`), stopped at its end."""
    made: list[Hook] = []

    def hook(receiver: Receiver) -> Hook:
        made.append(Hook(receiver))
        return made[-1]

    yield hook
    for each in made:
        await each.down()


# --- the service and its changes --------------------------------------------------------------


async def serve(harness: Harness, dsn: str) -> Server:
    return await harness.serve(
        harness.new_dir(),
        DATABASE_URL=dsn,
        INIT_ADMIN_API_TOKENS=ADMIN_TOKEN,
        LOG_LEVEL="warning",
        INTEGRATION_ALLOWED_NETWORKS="127.0.0.0/8",  # the receivers are on loopback
        INTEGRATION_TIME_SCALE=TIME_SCALE,
        INTEGRATION_RETRY_MAX_SECONDS=RETRY_MAX_SECONDS,
    )


async def integrate(http: aiohttp.ClientSession, base: str, url: str, events: list[str]) -> int:
    body = {"provider": "webhook", "enabled": True, "parameters": {"url": url}, "events": events}
    async with http.post(base + ADDONS, json=body, headers=ADMIN) as resp:
        assert resp.status == 201, await resp.text()
        made: dict[str, Any] = await resp.json()
    return int(made["id"])


@dataclass
class Made:
    latencies: list[float] = field(default_factory=list)
    answered: dict[str, float] = field(default_factory=dict)  # each flag's answer, monotonic


async def create_flags(
    http: aiohttp.ClientSession, bases: Sequence[str], names: Iterable[str], concurrency: int
) -> Made:
    """Create the flags, `concurrency` requests at a time, spread over the servers at
    `bases`, each answered 200."""
    pending = iter(names)
    servers = itertools.cycle(bases)
    made = Made()

    async def worker() -> None:
        for name in pending:
            started = time.perf_counter()
            async with http.post(
                next(servers) + FEATURES, json={"name": name}, headers=ADMIN
            ) as resp:
                assert resp.status == 200, (resp.status, await resp.text())
                await resp.read()
            made.latencies.append(time.perf_counter() - started)
            made.answered[name] = time.monotonic()

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return made


class Switches:
    """Groups of GROUP flags switched on and off in `development`, each group by requests of
    its own, one after the other (the groups at once): an event a flag and request."""

    def __init__(self, prefix: str, groups: int) -> None:
        self.groups = [[f"{prefix}-{g}-{n}" for n in range(GROUP)] for g in range(groups)]
        self.on = [False] * groups
        self.switched = 0  # requests answered 200, so far

    async def create(self, http: aiohttp.ClientSession, base: str) -> None:
        await create_flags(http, [base], itertools.chain(*self.groups), concurrency=8)

    async def flip(
        self,
        http: aiohttp.ClientSession,
        bases: Sequence[str],
        rounds: int,
        *,
        refused: tuple[int, ...] = (),
    ) -> int:
        """`rounds` requests a group, spread over `bases`; the requests answered 200 (another
        of `refused` leaves that group as it was)."""
        servers = itertools.cycle(bases)
        before = self.switched

        async def group(number: int) -> None:
            for _ in range(rounds):
                path = BULK + ("off" if self.on[number] else "on")
                body = {"features": self.groups[number]}
                async with http.post(next(servers) + path, json=body, headers=ADMIN) as resp:
                    await resp.read()
                    if resp.status in refused:
                        continue
                    assert resp.status == 200, (resp.status, await resp.text())
                self.on[number] = not self.on[number]
                self.switched += 1

        await asyncio.gather(*(group(n) for n in range(len(self.groups))))
        return self.switched - before


async def subscribed_positions(dsn: str, addon_id: int, kinds: list[str]) -> list[int]:
    """The positions of the events of `kinds` after the integration's creation: what its
    receiver must get, in this order."""
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(
            "SELECT position FROM events WHERE kind = ANY($1::text[]) AND position > ("
            " SELECT position FROM events"
            " WHERE stream_type = 'addon' AND stream_key = $2 AND stream_version = 1)"
            " ORDER BY position",
            kinds,
            str(addon_id),
        )
    finally:
        await conn.close()
    return [row["position"] for row in rows]


async def failed_attempts(dsn: str, addon_id: int, details: str) -> int:
    """The integration's failed attempts recorded so far whose reason is LIKE `details` (the
    deliveries the receiver never saw: no connection)."""
    conn = await asyncpg.connect(dsn)
    try:
        count: int = await conn.fetchval(
            "SELECT count(*) FROM addon_deliveries"
            " WHERE addon_id = $1 AND state = 'failed' AND state_details LIKE $2",
            addon_id,
            details,
        )
    finally:
        await conn.close()
    return count


# --- the fault table --------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    scenario: str
    events: int  # the integration's events in the log
    delivered: int  # distinct events its receiver answered with a 2xx
    duplicates: int  # deliveries of an event already delivered
    lost: int  # events of the log never delivered


def tally(scenario: str, hook: Hook, expected: Sequence[int]) -> Row:
    """What `hook` got against the log's `expected` positions, once asserted that first
    arrivals are in log order, each duplicate is the first arrival's body again and every
    delivery is of an expected event, its position in `Unleash-Event-Id`."""
    first: dict[int, Arrival] = {}
    duplicates = 0
    for arrival in hook.receiver.delivered:
        seen = first.setdefault(arrival.event_id, arrival)
        if seen is not arrival:
            duplicates += 1
            assert arrival.body == seen.body, f"event {arrival.event_id} came again, different"
    order = list(first)
    assert order == sorted(order), "first arrivals out of log order"
    assert all(a.json()["id"] == a.event_id for a in first.values())
    unexpected = set(order) - set(expected)
    assert not unexpected, sorted(unexpected)[:5]
    return Row(scenario, len(expected), len(order), duplicates, len(set(expected) - set(order)))


def record(rows: Sequence[Row], **figures: Any) -> None:
    """The fault table on the test's report, and appended to FAULT_TABLE (JSON lines)."""
    lines = [f"{'scenario':<46} {'events':>6} {'delivered':>9} {'duplicates':>10} {'lost':>4}"]
    lines += [
        f"{r.scenario:<46} {r.events:>6} {r.delivered:>9} {r.duplicates:>10} {r.lost:>4}"
        for r in rows
    ]
    lines.append(", ".join(f"{name} {value}" for name, value in figures.items()))
    report("\n" + "\n".join(lines))
    path = os.environ.get("FAULT_TABLE")
    if path:
        with Path(path).open("a", encoding="utf-8") as table:
            table.writelines(json.dumps(asdict(row) | figures) + "\n" for row in rows)


def p99(latencies: Sequence[float]) -> float:
    return statistics.quantiles(latencies, n=100)[98]


# --- 1. a receiver down for ten minutes -------------------------------------------------------


async def test_a_receiver_down_for_ten_minutes_gets_every_event_in_order_after(
    harness: Harness, dsn: str, hooks: Callable[[Receiver], Hook]
) -> None:
    """Down for 600 s of the delivery's clock (10 s here), answering 503 for the first half and
    refusing connections for the second, while 5,000 changes are made."""
    gate = Gate(shut=True)
    hook = hooks(Receiver(answer=gate))
    await hook.up()
    server = await serve(harness, dsn)
    switches = Switches("down", groups=4)
    async with aiohttp.ClientSession() as http:
        await switches.create(http, server.url)
        addon_id = await integrate(http, server.url, hook.url, TOGGLES)
        started = time.monotonic()
        changes = asyncio.create_task(switches.flip(http, [server.url], rounds=50))
        await asyncio.sleep(5)
        await hook.down()  # now its port refuses connections
        await asyncio.sleep(max(0.0, started + 10 - time.monotonic()))
        refused_connections = await failed_attempts(dsn, addon_id, "The request failed: %")
        gate.shut = False
        await hook.up()
        back = time.monotonic()
        made_meanwhile = switches.switched * GROUP
        assert await changes == 4 * 50
        changed = time.monotonic()
        expected = await subscribed_positions(dsn, addon_id, TOGGLES)
        assert len(expected) == 5000
        await hook.wait_for(expected, timeout=75)
        done = time.monotonic()
    assert await stop(server) == 0
    row = tally("1. receiver down 10 min (503, then refused)", hook, expected)
    record(
        [row],
        outage_s=round(back - started, 1),
        events_made_in_outage=made_meanwhile,
        changes_s=round(changed - started, 1),
        answered_503=len(gate.refused),
        connections_refused=refused_connections,
        all_delivered_after_back_s=round(done - back, 1),
        after_last_change_s=round(done - changed, 1),
    )
    assert gate.refused, "the receiver was not tried while it answered 503"
    assert set(gate.refused) == {expected[0]}  # the first event waited, and nothing after it
    assert refused_connections > 0  # tried while its port refused connections too
    assert (row.lost, row.duplicates) == (0, 0)


# --- 2. kill -9 mid-delivery ------------------------------------------------------------------


async def test_a_service_killed_mid_delivery_loses_nothing_and_resends_the_same(
    harness: Harness, dsn: str, hooks: Callable[[Receiver], Hook]
) -> None:
    """2,000 events wait (the receiver answers 503 while they are made); once it answers, the
    service is killed with -9 a quarter of the way through, and started again."""
    gate = Gate(shut=True)
    hook = hooks(Receiver(answer=gate))
    await hook.up()
    server = await serve(harness, dsn)
    switches = Switches("kill", groups=4)
    async with aiohttp.ClientSession() as http:
        await switches.create(http, server.url)
        addon_id = await integrate(http, server.url, hook.url, TOGGLES)
        assert await switches.flip(http, [server.url], rounds=20) == 4 * 20
        expected = await subscribed_positions(dsn, addon_id, TOGGLES)
        assert len(expected) == 2000
        gate.shut = False
        await hook.wait_count(500)
        server.proc.kill()
        killed = time.monotonic()
        assert server.proc.wait(timeout=10) == -signal.SIGKILL
        at_kill = len(hook.receiver.delivered)
        again = await serve(harness, dsn)
        ready = time.monotonic()
        rest = await hook.wait_for(expected, timeout=60)
    assert await stop(again) == 0
    row = tally("2. kill -9 mid-delivery, restart", hook, expected)
    record(
        [row],
        delivered_at_kill=at_kill,
        restart_s=round(ready - killed, 1),
        rest_delivered_s=round(rest, 1),
    )
    assert at_kill < len(expected)
    assert row.lost == 0
    assert row.duplicates <= AT_MOST_TWICE


# --- 3. a slow receiver -----------------------------------------------------------------------


async def test_a_receiver_taking_30_s_slows_neither_other_integrations_nor_the_api(
    harness: Harness, dsn: str, hooks: Callable[[Receiver], Hook]
) -> None:
    """Flag creation's p99 without and then with integration A, whose receiver takes 30 s to
    answer its first request; integration B's quick receiver gets each event meanwhile."""
    gate = Gate()
    fast = hooks(Receiver(answer=gate))
    slow = hooks(SlowReceiver())
    await fast.up()
    await slow.up()
    server = await serve(harness, dsn)
    async with aiohttp.ClientSession() as http:
        b_id = await integrate(http, server.url, fast.url, CREATES)
        await create_flags(http, [server.url], (f"warm-{n}" for n in range(20)), concurrency=4)
        without = await create_flags(
            http, [server.url], (f"without-{n}" for n in range(200)), concurrency=4
        )
        a_id = await integrate(http, server.url, slow.url, CREATES)
        slow_since = time.monotonic()
        with_slow = await create_flags(
            http, [server.url], (f"with-{n}" for n in range(200)), concurrency=4
        )
        await fast.wait_for(await subscribed_positions(dsn, b_id, CREATES), timeout=10)
        b_done = time.monotonic() - slow_since
        assert slow.receiver.delivered == []  # A still waits for its first answer
        assert b_done < SLOW_SECONDS
        a_expected = await subscribed_positions(dsn, a_id, CREATES)
        await slow.wait_for(a_expected, timeout=SLOW_SECONDS + 30)
    assert await stop(server) == 0
    b_expected = await subscribed_positions(dsn, b_id, CREATES)
    rows = [
        tally("3. B (quick) beside A (30 s)", fast, b_expected),
        tally("3. A, its receiver taking 30 s", slow, a_expected),
    ]
    by_name = {a.json()["featureName"]: a.event_id for a in fast.receiver.delivered}
    lags = [
        max(0.0, gate.first[by_name[name]] - answered)
        for name, answered in with_slow.answered.items()
    ]
    p99_without, p99_with = p99(without.latencies), p99(with_slow.latencies)
    record(
        rows,
        create_p99_ms_without_a=round(p99_without * 1000, 1),
        create_p99_ms_with_a=round(p99_with * 1000, 1),
        b_lag_p99_ms=round(p99(lags) * 1000, 1),
        b_lag_max_ms=round(max(lags) * 1000, 1),
        b_all_delivered_after_s=round(b_done, 1),
    )
    assert all(row.lost == 0 for row in rows)
    assert rows[0].duplicates == rows[1].duplicates == 0
    assert p99_with <= 3 * p99_without + 0.050
    assert max(lags) < 5.0


# --- 4. PostgreSQL restarts -------------------------------------------------------------------


async def test_delivery_resumes_after_postgresql_restarts_and_loses_nothing(
    harness: Harness, cluster: Cluster, hooks: Callable[[Receiver], Hook]
) -> None:
    """PostgreSQL stopped (fast) while events are being made and delivered, started 2 s later;
    then more changes."""
    hook = hooks(Receiver())
    await hook.up()
    dsn = await cluster.create_database()
    server = await serve(harness, dsn)
    switches = Switches("restart", groups=4)
    async with aiohttp.ClientSession() as http:
        await switches.create(http, server.url)
        addon_id = await integrate(http, server.url, hook.url, TOGGLES)
        changes = asyncio.create_task(switches.flip(http, [server.url], rounds=8, refused=(503,)))
        await hook.wait_count(200)
        await asyncio.to_thread(cluster.stop, "fast")
        at_stop = len(hook.receiver.delivered)
        await asyncio.sleep(2)
        await asyncio.to_thread(cluster.start)
        started = time.monotonic()
        switched = await changes
        await switches.flip(http, [server.url], rounds=2, refused=(503,))
        expected = await subscribed_positions(dsn, addon_id, TOGGLES)
        await hook.wait_for(expected, timeout=60)
        done = time.monotonic()
    assert await stop(server) == 0
    row = tally("4. PostgreSQL stopped 2 s mid-stream", hook, expected)
    record(
        [row],
        delivered_at_stop=at_stop,
        requests_refused=4 * 8 - switched,
        all_delivered_after_start_s=round(done - started, 1),
    )
    assert at_stop < len(expected)
    assert row.lost == 0
    assert row.duplicates <= AT_MOST_TWICE


# --- 5. three replicas ------------------------------------------------------------------------


async def holder(dsn: str, addon_id: int) -> str | None:
    """The application name of the connection holding the integration's advisory lock."""
    conn = await asyncpg.connect(dsn)
    try:
        name: str | None = await conn.fetchval(
            "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a USING (pid)"
            " WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1 AND l.objid = $2",
            delivery.LOCK_CLASS,
            addon_id,
        )
    finally:
        await conn.close()
    return name


def named(dsn: str, name: str) -> str:
    """`dsn` with the connections' application name (which asyncpg takes from the URL)."""
    return f"{dsn}{'&' if '?' in dsn else '?'}application_name={name}"


async def test_three_replicas_deliver_each_event_once_and_one_takes_over_from_a_killed_one(
    harness: Harness, dsn: str, hooks: Callable[[Receiver], Hook]
) -> None:
    """500 events made through three replicas: each delivered once. Then the replica that
    delivers is killed with -9 while 1,000 more are made through the other two."""
    gate = Gate()
    hook = hooks(Receiver(answer=gate))
    await hook.up()
    names = [f"replica-{n}" for n in range(3)]
    first = await serve(harness, named(dsn, names[0]))  # the first start sets the database up
    rest = await asyncio.gather(*(serve(harness, named(dsn, name)) for name in names[1:]))
    replicas = dict(zip(names, [first, *rest], strict=True))
    urls = [server.url for server in replicas.values()]
    switches = Switches("replicas", groups=4)
    async with aiohttp.ClientSession() as http:
        await switches.create(http, urls[0])
        addon_id = await integrate(http, urls[1], hook.url, TOGGLES)
        assert await switches.flip(http, urls, rounds=5) == 4 * 5
        calm = await subscribed_positions(dsn, addon_id, TOGGLES)
        await hook.wait_for(calm, timeout=60)
        calm_row = tally("5. three replicas, none dies", hook, calm)
        delivered_calm = len(hook.receiver.delivered)

        held_by = await holder(dsn, addon_id)
        assert held_by in replicas
        others = [server.url for name, server in replicas.items() if name != held_by]
        changes = asyncio.create_task(switches.flip(http, others, rounds=10))
        await hook.wait_count(len(calm) + 200)
        killed = replicas.pop(held_by)
        killed.proc.kill()
        killed_at = time.monotonic()
        at_kill = len(hook.receiver.delivered)
        assert await changes == 4 * 10
        expected = await subscribed_positions(dsn, addon_id, TOGGLES)
        await hook.wait_for(expected, timeout=60)
        resumed_at = min(gate.first[p] for p in expected if gate.first[p] > killed_at)
        taken_by = await holder(dsn, addon_id)
    for server in replicas.values():
        assert await stop(server) == 0
    row = tally("5. three replicas, the holder killed -9", hook, expected)
    takeover = resumed_at - killed_at
    record(
        [calm_row, row],
        delivered_at_kill=at_kill - delivered_calm,
        takeover_s=round(takeover, 2),
        held_by=held_by,
        taken_by=taken_by,
    )
    assert (calm_row.lost, calm_row.duplicates) == (0, 0)
    assert row.lost == 0
    assert row.duplicates <= AT_MOST_TWICE
    assert taken_by in replicas
    assert takeover < 5.0
