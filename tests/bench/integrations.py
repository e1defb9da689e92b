"""Integrations (issue 45): a fixed rate of writes, alone and fanned out to three webhooks.

Run with `make bench` (or `.venv/bin/python -m tests.bench.integrations`). Our service runs as
its own process on a fresh embedded PostgreSQL with INTEGRATION_ALLOWED_NETWORKS=127.0.0.0/8;
three webhook receivers run in one process of their own (this module's `receivers` command:
aiohttp, three ports), each recording every request's (Unleash-Event-Id, arrival time) and
answering 200 at once.

The load is open loop: request i is due at start + i / rate, whether or not earlier ones were
answered (so a stall of the server is not hidden by a client that waits: coordinated omission
does not arise), and its latency is counted from when it was due. Each request switches one of
FLAGS flags' development environment on or off (`POST .../environments/development/on|off`,
in turn), which appends one event. First a run with no integration, then one with three
webhook integrations (one per receiver) subscribed to both event types; each run has WARM_UP
seconds of load before its measured seconds. After the second run the benchmark waits until
every receiver has every event of the log it should have (or nothing arrived for
STALL_SECONDS), then reports each receiver's delivery lag (its arrival time minus the event's
`recorded_at`, the commit's clock), duplicates and events lost, and the lag per window of
commit time (the trend shows whether delivery keeps up, and the sustained rate when not).

BENCH_INTEGRATIONS_RATE (1,000 events a second), BENCH_INTEGRATIONS_SECONDS (30),
BENCH_INTEGRATIONS_DRAIN (600 s at most to wait for deliveries) and BENCH_INTEGRATIONS_BATCH (1:
a flag a request; N: N flags a request through Unleash's bulk route, `POST
/api/admin/projects/default/bulk_features/environments/development/on|off`, so the requests
come at RATE / N a second) change the run; BENCH_INTEGRATIONS_DELIVERY=inline has `serve`
deliver instead of a `deliver` process beside it. Prints markdown
tables; writes JSON to tests/bench/out/integrations.json.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp
import psutil
from aiohttp import web

from eventlog import connections
from tests.bench.append import percentile
from tests.bench.create import ROOT, TOKEN, dsn_of, serving_ours, wait_ready
from tests.bench.machine import FlushProbe, cpu_loop_seconds
from tests.harness import free_port

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Iterator, Sequence

    import asyncpg

OUT = ROOT / "tests" / "bench" / "out" / "integrations.json"
FLAGS = 500  # each flag switched every FLAGS / rate seconds: no two requests on one at once
WARM_UP = 5.0
RECEIVERS = 3
KINDS = ("feature-environment-enabled", "feature-environment-disabled")
SETTINGS = {"INTEGRATION_ALLOWED_NETWORKS": "127.0.0.0/8"}
CONNECTIONS = 256  # the client's connections at most: far more than the rate needs
LATE_SECONDS = 30.0  # how long a run waits for its last answers
STALL_SECONDS = 30.0  # waiting for deliveries ends when nothing arrived for this long
WINDOW_SECONDS = 5.0  # the lag trend's windows of commit time
FEATURES = "/api/admin/projects/default/features"
BULK = "/api/admin/projects/default/bulk_features/environments/development/"
LOG = """
SELECT position, extract(epoch FROM recorded_at)::float8 AS committed
FROM events WHERE kind = ANY($1::text[]) AND position > $2 ORDER BY position
"""
# The WAL's flushes to disk (every process's) and its bytes, cluster-wide: the cluster is the
# benchmark's own. Statistics arrive within a second: near enough for counts over seconds.
WAL = """
SELECT (SELECT coalesce(sum(fsyncs), 0) FROM pg_stat_io WHERE object = 'wal')::bigint AS syncs,
       (SELECT wal_bytes FROM pg_stat_wal)::bigint AS bytes,
       (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()) AS xacts
"""
HEAD = "SELECT coalesce(max(position), 0) FROM events"
LAST_ADDON = "SELECT coalesce(max(position), 0) FROM events WHERE stream_type = 'addon'"


# The receivers (their own process)


def receivers_main(ports: Sequence[int]) -> int:
    """Three webhook receivers in this process: POST records (event id, arrival time) and
    answers 200; GET /arrivals returns them; GET /count their number."""
    with _event_loop() as runner:
        runner.run(_receive(ports))
    return 0


async def _receive(ports: Sequence[int]) -> None:
    runners = []
    for port in ports:
        arrivals: list[tuple[int, float]] = []
        app = web.Application()
        app.router.add_post("/hook", _recorder(arrivals))
        app.router.add_get("/arrivals", _shown(arrivals, everything=True))
        app.router.add_get("/count", _shown(arrivals, everything=False))
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        runners.append(runner)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    print("ready", flush=True)
    await stop.wait()
    for runner in runners:
        await runner.cleanup()


def _recorder(arrivals: list[tuple[int, float]]) -> Any:
    async def record(request: web.Request) -> web.Response:
        arrivals.append((int(request.headers["Unleash-Event-Id"]), time.time()))
        return web.Response(text="ok")

    return record


def _shown(arrivals: list[tuple[int, float]], *, everything: bool) -> Any:
    async def show(_request: web.Request) -> web.Response:
        if everything:
            return web.json_response(arrivals)
        return web.json_response({"count": len(arrivals), "ids": len({i for i, _ in arrivals})})

    return show


class _Receivers:
    """The receivers' process, started and stopped by the benchmark."""

    def __init__(self) -> None:
        self.ports = [free_port() for _ in range(RECEIVERS)]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.bench.integrations", "receivers", *map(str, self.ports)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            self.proc.kill()
            raise RuntimeError(f"the receivers did not start: {line!r}")

    def url(self, port: int, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{port}{path}"

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


# The load


@dataclass
class Sample:
    due: float  # seconds after the run's start
    latency_ms: float  # from when the request was due to its answer
    service_ms: float  # from when the client began it
    status: int  # 0: no answer (a connection error)


@dataclass
class Run:
    name: str
    rate: float
    seconds: float
    started: float  # wall clock (time.time()) of the first measured request's due time
    ended: float
    load_average: float
    cpu_loop_s: float
    samples: list[Sample] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=dict)  # share of one core, by process
    machine_busy: float = 0.0  # share of both cores busy
    flushes: str = ""
    unanswered: int = 0  # still unanswered LATE_SECONDS after the last was due
    wal_syncs: int = 0  # PostgreSQL's WAL flushes meanwhile (warm-up included)
    wal_mb: float = 0.0
    transactions: int = 0  # committed in the database meanwhile (warm-up included)


@dataclass
class Writes:
    run: str
    requests: int
    answered_per_s: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    service_p99_ms: float
    non_2xx: int
    errors: int


def writes_of(run: Run) -> Writes:
    measured = [s for s in run.samples if s.due >= 0]
    latencies = sorted(s.latency_ms for s in measured)
    service = sorted(s.service_ms for s in measured)
    answered = [s for s in measured if s.status]
    return Writes(
        run=run.name,
        requests=len(measured),
        answered_per_s=len(answered) / run.seconds,
        p50_ms=percentile(latencies, 0.50),
        p99_ms=percentile(latencies, 0.99),
        max_ms=latencies[-1] if latencies else 0.0,
        service_p99_ms=percentile(service, 0.99),
        non_2xx=sum(1 for s in answered if not 200 <= s.status < 300),
        errors=len(measured) - len(answered) + run.unanswered,
    )


class Load:
    """Open-loop switches of FLAGS flags' development environment, one request each due at
    start + i / rate; `offset` carries on where the last run left off (on, then off)."""

    def __init__(self, base: str, session: aiohttp.ClientSession, batch: int = 1) -> None:
        self.base = base
        self.session = session
        self.batch = batch
        self.offset = 0

    async def run(self, run: Run, pids: dict[str, Callable[[], list[int]]]) -> None:
        loop = asyncio.get_running_loop()
        total = int(run.rate * (WARM_UP + run.seconds))
        start = loop.time() + 0.05
        measured_from = start + WARM_UP
        run.started = time.time() + (measured_from - loop.time())
        pending: set[asyncio.Task[None]] = set()
        cpu = _Cpu(pids)
        probe = FlushProbe(Path("/tmp"))
        for i in range(total):
            due = start + i / run.rate
            if due >= measured_from and not cpu.started:
                cpu.start()
                probe.start()
            delay = due - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            task = asyncio.create_task(self._one(self.offset + i, due, measured_from, run))
            pending.add(task)
            task.add_done_callback(pending.discard)
        run.cpu, run.machine_busy = cpu.stop()
        run.ended = time.time()
        probe.stop()
        run.flushes = probe.between().text()
        if pending:
            _done, late = await asyncio.wait(pending, timeout=LATE_SECONDS)
            for task in late:  # unanswered: counted as errors (no sample, no status)
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)
            run.unanswered = len(late)
        self.offset += total

    async def _one(self, i: int, due: float, measured_from: float, run: Run) -> None:
        loop = asyncio.get_running_loop()
        began = loop.time()
        status = 0
        try:
            path, body = _flip(i, self.batch)
            async with self.session.post(self.base + path, json=body) as response:
                await response.read()
                status = response.status
        except (aiohttp.ClientError, OSError):
            pass
        done = loop.time()
        run.samples.append(
            Sample(due - measured_from, (done - due) * 1000, (done - began) * 1000, status)
        )


def _flip(i: int, batch: int) -> tuple[str, dict[str, list[str]] | None]:
    """Request i: one flag switched (batch 1), or `batch` flags at once through Unleash's bulk
    route, an event each."""
    if batch == 1:
        flag, turn = i % FLAGS, i // FLAGS
        action = "on" if turn % 2 == 0 else "off"
        return f"{FEATURES}/bench-{flag}/environments/development/{action}", None
    groups = FLAGS // batch
    group, turn = i % groups, i // groups
    action = "on" if turn % 2 == 0 else "off"
    names = [f"bench-{group * batch + n}" for n in range(batch)]
    return f"{BULK}{action}", {"features": names}


class _Cpu:
    """CPU time of named groups of processes over the measured seconds, and the machine's."""

    def __init__(self, pids: dict[str, Callable[[], list[int]]]) -> None:
        self.pids = pids
        self.groups: dict[str, list[psutil.Process]] = {}
        self.started = False
        self.before: dict[str, dict[int, float]] = {}
        self.machine: Any = None
        self.at = 0.0
        self.waited = 0.0

    def _times(self) -> dict[str, dict[int, float]]:
        """CPU seconds by group and process (a process gone is left out)."""
        own = os.times()
        times = {"benchmark client": {os.getpid(): own.user + own.system}}
        for name, processes in self.groups.items():
            times[name] = {}
            for process in processes:
                with contextlib.suppress(psutil.NoSuchProcess):
                    used = process.cpu_times()
                    times[name][process.pid] = used.user + used.system
        return times

    def _waits(self) -> float:
        """Seconds the service's threads were ready to run but waited for a CPU (the kernel's
        schedstat): CPU starvation by the other processes on the machine."""
        total = 0
        for process in self.groups.get("service", []):
            for task in Path(f"/proc/{process.pid}/task").glob("*/schedstat"):
                with contextlib.suppress(OSError, ValueError, IndexError):
                    total += int(task.read_text().split()[1])
        return total / 1e9

    def start(self) -> None:
        """The processes are found now (PostgreSQL's backends are there once warmed up)."""
        self.started = True
        self.groups = {
            name: [psutil.Process(p) for p in find()] for name, find in self.pids.items()
        }
        self.before = self._times()
        self.waited = self._waits()
        self.machine = psutil.cpu_times()
        self.at = time.monotonic()

    def stop(self) -> tuple[dict[str, float], float]:
        took = time.monotonic() - self.at
        # Processes started meanwhile count from 0: asyncpg replaces a pool's connection
        # after 50,000 queries, so PostgreSQL's backends change during a long run.
        for name, find in self.pids.items():
            known = {process.pid for process in self.groups[name]}
            for pid in find():
                if pid not in known:
                    with contextlib.suppress(psutil.NoSuchProcess):
                        self.groups[name].append(psutil.Process(pid))
                        self.before[name][pid] = 0.0
        after = self._times()
        machine = psutil.cpu_times()
        idle = (machine.idle - self.machine.idle) + (machine.iowait - self.machine.iowait)
        total = sum(machine) - sum(self.machine)
        # A process that ended meanwhile is counted in neither (its last seconds are lost).
        shares = {
            name: round(
                sum(
                    used - self.before[name][pid]
                    for pid, used in after[name].items()
                    if pid in self.before[name]
                )
                / took,
                3,
            )
            for name in after
        }
        shares["service waiting for a CPU"] = round((self._waits() - self.waited) / took, 3)
        return shares, round(1 - idle / total, 3) if total else 0.0


# Deliveries


@dataclass
class Delivery:
    receiver: int
    expected: int
    received: int  # requests
    unique: int
    duplicates: int
    lost: int
    in_order: bool
    lag_p50_ms: float
    lag_p99_ms: float
    lag_max_ms: float
    during_load_per_s: float  # events that arrived during the measured seconds, a second
    last_arrival_after_load_s: float


@dataclass
class Window:
    committed_from_s: float  # seconds after the measured start (commit time)
    events: int
    lag_p50_ms: float
    lag_max_ms: float  # over the three receivers


def deliveries_of(
    log: dict[int, float], arrivals: Sequence[Sequence[tuple[int, float]]], run: Run
) -> tuple[list[Delivery], list[Window]]:
    rows = []
    lags: dict[int, list[float]] = {position: [] for position in log}
    for number, arrived in enumerate(arrivals, start=1):
        first: dict[int, float] = {}
        order: list[int] = []
        for event_id, at in arrived:
            if event_id not in first:
                first[event_id] = at
                order.append(event_id)
        own = sorted((first[p] - committed) * 1000 for p, committed in log.items() if p in first)
        for position, committed in log.items():
            if position in first:
                lags[position].append((first[position] - committed) * 1000)
        during = sum(1 for _, at in arrived if run.started <= at <= run.ended)
        rows.append(
            Delivery(
                receiver=number,
                expected=len(log),
                received=len(arrived),
                unique=len(first),
                duplicates=len(arrived) - len(first),
                lost=sum(1 for p in log if p not in first),
                in_order=order == sorted(order),
                lag_p50_ms=percentile(own, 0.50),
                lag_p99_ms=percentile(own, 0.99),
                lag_max_ms=own[-1] if own else 0.0,
                during_load_per_s=during / (run.ended - run.started),
                last_arrival_after_load_s=max((at for _, at in arrived), default=0.0) - run.ended,
            )
        )
    windows: dict[int, list[float]] = {}
    counts: dict[int, int] = {}
    for position, committed in log.items():
        index = math.floor((committed - run.started) / WINDOW_SECONDS)
        counts[index] = counts.get(index, 0) + 1
        windows.setdefault(index, []).extend(lags[position])
    trend = []
    for index in sorted(windows):
        values = sorted(windows[index])
        trend.append(
            Window(
                committed_from_s=index * WINDOW_SECONDS,
                events=counts[index],
                lag_p50_ms=percentile(values, 0.50),
                lag_max_ms=values[-1] if values else 0.0,
            )
        )
    return rows, trend


@dataclass
class Drain:
    """After the load: delivery alone, as fast as it goes."""

    seconds: float
    delivered: int  # requests the three receivers got meanwhile
    service_cpu_s: float
    wal_syncs: int  # PostgreSQL's WAL flushes meanwhile
    wal_mb: float
    transactions: int

    @property
    def per_s(self) -> float:
        return self.delivered / self.seconds if self.seconds else 0.0

    @property
    def cpu_ms_per_delivery(self) -> float:
        return self.service_cpu_s * 1000 / self.delivered if self.delivered else 0.0

    @property
    def service_busy(self) -> float:
        """The service's share of one core: near 1, delivery waits for the CPU; well under
        it, for the answers and the database."""
        return self.service_cpu_s / self.seconds if self.seconds else 0.0


async def wait_for_deliveries(
    session: aiohttp.ClientSession,
    receivers: _Receivers,
    expected: int,
    *,
    drain: float,
    pid: int,
    conn: asyncpg.Connection,
) -> Drain:
    """Until every receiver has `expected` events (or nothing came for STALL_SECONDS, or
    `drain` seconds passed), with the delivering process's CPU time and the commits meanwhile."""
    service = psutil.Process(pid)
    wal = await conn.fetchrow(WAL)
    cpu_before = sum(service.cpu_times()[:2])
    started = time.monotonic()
    last, moved, first = -1, started, None
    while time.monotonic() - started < drain:
        counts = await _counts(session, receivers)
        first = sum(counts) if first is None else first
        if min(counts) >= expected:
            break
        if sum(counts) != last:
            last, moved = sum(counts), time.monotonic()
        elif time.monotonic() - moved > STALL_SECONDS:
            break
        await asyncio.sleep(0.5)
    took = time.monotonic() - started
    cpu = sum(service.cpu_times()[:2]) - cpu_before
    delivered = sum(await _counts(session, receivers)) - (first or 0)
    syncs, mb, transactions = _wal_since(wal, await conn.fetchrow(WAL))
    return Drain(took, delivered, cpu, syncs, mb, transactions)


async def _counts(session: aiohttp.ClientSession, receivers: _Receivers) -> list[int]:
    counts = []
    for port in receivers.ports:
        async with session.get(receivers.url(port, "/count")) as response:
            counts.append(int((await response.json())["ids"]))
    return counts


# The benchmark


async def prepare(base: str, session: aiohttp.ClientSession) -> None:
    """FLAGS flags, each switched on and off once (the first switch on also adds the default
    strategy: from then on every switch is one event)."""
    queue = list(range(FLAGS))

    async def worker() -> None:
        while queue:
            flag = queue.pop()
            name = f"bench-{flag}"
            for method, path, body in (
                ("POST", FEATURES, {"name": name}),
                ("POST", f"{FEATURES}/{name}/environments/development/on", None),
                ("POST", f"{FEATURES}/{name}/environments/development/off", None),
            ):
                async with session.request(method, base + path, json=body) as response:
                    text = await response.text()
                    assert response.status in {200, 201}, (path, response.status, text)

    await asyncio.gather(*(worker() for _ in range(16)))


async def integrate(base: str, session: aiohttp.ClientSession, receivers: _Receivers) -> None:
    for port in receivers.ports:
        body = {
            "provider": "webhook",
            "enabled": True,
            "parameters": {"url": receivers.url(port)},
            "events": list(KINDS),
        }
        async with session.post(base + "/api/admin/addons", json=body) as response:
            text = await response.text()
            assert response.status == 201, (response.status, text)


async def settled(conn: asyncpg.Connection) -> None:
    """Until the log's head has not moved for a second: a request the client gave up on may
    still be committed by the server."""
    head, since = None, time.monotonic()
    while time.monotonic() - since < 1.0:
        now = await conn.fetchval(HEAD)
        if now != head:
            head, since = now, time.monotonic()
        await asyncio.sleep(0.2)


def _wal_since(
    before: asyncpg.Record | None, after: asyncpg.Record | None
) -> tuple[int, float, int]:
    """WAL flushes, WAL MB and transactions (statements outside one count one each)."""
    assert before is not None
    assert after is not None
    return (
        after["syncs"] - before["syncs"],
        round((after["bytes"] - before["bytes"]) / 2**20, 1),
        after["xacts"] - before["xacts"],
    )


def new_run(name: str, rate: float, seconds: float) -> Run:
    return Run(
        name=name,
        rate=rate,
        seconds=seconds,
        started=0.0,
        ended=0.0,
        load_average=os.getloadavg()[0],
        cpu_loop_s=round(cpu_loop_seconds(), 3),
    )


async def bench(
    base: str, dsn: str, pids: dict[str, Callable[[], list[int]]], receivers: _Receivers
) -> dict[str, Any]:
    rate = float(os.environ.get("BENCH_INTEGRATIONS_RATE", "1000"))
    seconds = float(os.environ.get("BENCH_INTEGRATIONS_SECONDS", "30"))
    drain = float(os.environ.get("BENCH_INTEGRATIONS_DRAIN", "600"))
    batch = int(os.environ.get("BENCH_INTEGRATIONS_BATCH", "1"))
    assert FLAGS % batch == 0, f"BENCH_INTEGRATIONS_BATCH must divide {FLAGS}"
    headers = {"Authorization": TOKEN, "Content-Type": "application/json"}
    connector = aiohttp.TCPConnector(limit=CONNECTIONS)
    async with aiohttp.ClientSession(headers=headers, connector=connector) as session:
        await prepare(base, session)
        load = Load(base, session, batch)
        conn = await connections.connect(dsn)
        try:
            alone = new_run("no integration", rate / batch, seconds)
            _say(f"the run with no integration (service pid {pids['service']()[0]})")
            wal = await conn.fetchrow(WAL)
            await load.run(alone, pids)
            alone.wal_syncs, alone.wal_mb, alone.transactions = _wal_since(
                wal, await conn.fetchrow(WAL)
            )
            await settled(conn)
            await integrate(base, session, receivers)
            await asyncio.sleep(2.5)  # a replica claims new integrations every second
            after = await conn.fetchval(LAST_ADDON)
            fanned = new_run("three webhooks", rate / batch, seconds)
            _say("the run with three webhooks")
            wal = await conn.fetchrow(WAL)
            await load.run(fanned, pids)
            fanned.wal_syncs, fanned.wal_mb, fanned.transactions = _wal_since(
                wal, await conn.fetchrow(WAL)
            )
            await settled(conn)
            log = {r["position"]: r["committed"] for r in await conn.fetch(LOG, list(KINDS), after)}
            _say(f"waiting for {len(log):,} events at each receiver")
            waited = await wait_for_deliveries(
                session,
                receivers,
                len(log),
                drain=drain,
                pid=pids.get("delivery", pids["service"])()[0],
                conn=conn,
            )
        finally:
            await conn.close()
        arrivals = []
        for port in receivers.ports:
            async with session.get(receivers.url(port, "/arrivals")) as response:
                arrivals.append([(int(i), float(at)) for i, at in await response.json()])
    rows, trend = deliveries_of(log, arrivals, fanned)
    return {
        "runs": [alone, fanned],
        "writes": [writes_of(alone), writes_of(fanned)],
        "deliveries": rows,
        "trend": trend,
        "drain": waited,
        "events": len(log),
    }


def report(result: dict[str, Any]) -> None:
    runs: list[Run] = result["runs"]
    writes: list[Writes] = result["writes"]
    for run in runs:
        cpu = ", ".join(f"{name} {share:.0%}" for name, share in run.cpu.items())
        print(
            f"{run.name}: {run.rate:,.0f} requests/s for {run.seconds:g} s after {WARM_UP:g} s "
            "of warm-up; "
            f"load average {run.load_average:.1f} at its start, CPU loop {run.cpu_loop_s:.2f} s; "
            f"CPU (of one core): {cpu}; machine {run.machine_busy:.0%} busy; {run.flushes}; "
            f"over the load's whole time: WAL {run.wal_syncs:,} flushes, {run.wal_mb:,.1f} MB, "
            f"{run.transactions:,} transactions"
        )
    print()
    print(
        "| run | requests | answered/s | p50 ms | p99 ms | max ms | p99 from its start ms "
        "| non-2xx | errors |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for w in writes:
        print(
            f"| {w.run} | {w.requests:,} | {w.answered_per_s:,.0f} | {w.p50_ms:.1f} "
            f"| {w.p99_ms:.1f} | {w.max_ms:,.0f} | {w.service_p99_ms:.1f} | {w.non_2xx} "
            f"| {w.errors} |"
        )
    print()
    drain: Drain = result["drain"]
    print(
        f"{result['events']:,} events to deliver to each receiver. After the load: "
        f"{drain.delivered:,} deliveries in {drain.seconds:.1f} s ({drain.per_s:,.0f}/s "
        f"over the three), the delivering process's CPU {drain.service_cpu_s:.1f} s "
        f"({drain.service_busy:.0%} of one core; {drain.cpu_ms_per_delivery:.2f} ms a delivery), "
        f"WAL {drain.wal_syncs:,} flushes, {drain.wal_mb:,.1f} MB, "
        f"{drain.transactions:,} transactions"
    )
    print()
    print(
        "| receiver | expected | requests | unique | duplicates | lost | in order "
        "| lag p50 ms | lag p99 ms | lag max ms | arrived/s during the load "
        "| last arrival after the load s |"
    )
    print("|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|")
    for d in result["deliveries"]:
        print(
            f"| {d.receiver} | {d.expected:,} | {d.received:,} | {d.unique:,} | {d.duplicates} "
            f"| {d.lost} | {'yes' if d.in_order else 'no'} | {d.lag_p50_ms:,.0f} "
            f"| {d.lag_p99_ms:,.0f} | {d.lag_max_ms:,.0f} | {d.during_load_per_s:,.0f} "
            f"| {d.last_arrival_after_load_s:.1f} |"
        )
    print()
    print("| committed at s | events | lag p50 ms | lag max ms |")
    print("|---:|---:|---:|---:|")
    for w in result["trend"]:
        print(
            f"| {w.committed_from_s:g} | {w.events:,} | {w.lag_p50_ms:,.0f} | {w.lag_max_ms:,.0f} |"
        )


@contextlib.contextmanager
def delivering(env: dict[str, str]) -> Iterator[int]:
    """A `deliver` process beside the service, on its embedded PostgreSQL: yields its pid."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "service", "deliver"],
        cwd=ROOT,
        env=env | {"PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_ready(f"http://127.0.0.1:{port}/health")
        yield proc.pid
    finally:
        proc.terminate()
        proc.wait(10)


def main(argv: list[str]) -> int:
    if argv[:1] == ["receivers"]:
        return receivers_main([int(port) for port in argv[1:]])
    # process: serve with INTEGRATION_DELIVERY=false beside a `deliver` process (a core of its
    # own); inline: serve delivers in its own event loop.
    apart = os.environ.get("BENCH_INTEGRATIONS_DELIVERY", "process") == "process"
    settings = SETTINGS | ({"INTEGRATION_DELIVERY": "false"} if apart else {})
    receivers = _Receivers()
    env: dict[str, str] = {}
    try:
        with (
            serving_ours(env, check_verify=True, settings=settings) as (base, pid),
            delivering(env) if apart else contextlib.nullcontext(pid) as deliverer,
        ):
            dsn = dsn_of(env)
            data_dir = env["DATA_DIR"]
            pids: dict[str, Callable[[], list[int]]] = {
                "service": lambda: [pid],
                "PostgreSQL": lambda: _postgres(data_dir),
                "receivers": lambda: [receivers.proc.pid],
            }
            if apart:
                pids["delivery"] = lambda: [deliverer]
            _say(f"delivery: {'a deliver process' if apart else 'in serve'}")
            with _event_loop() as runner:
                result = runner.run(_stoppable(bench(base, dsn, pids, receivers)))
    finally:
        receivers.stop()
    report(result)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    for run in result["runs"]:
        run.samples = []  # the raw latencies stay out of the JSON
    OUT.write_text(json.dumps({k: _plain(v) for k, v in result.items()}, indent=2))
    lost = sum(d.lost for d in result["deliveries"])
    return 1 if lost else 0


async def _stoppable(work: Coroutine[Any, Any, dict[str, Any]]) -> dict[str, Any]:
    """`work`, cancelled by SIGINT or SIGTERM (the service and the receivers are stopped on
    the way out)."""
    task = asyncio.current_task()
    assert task is not None
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, task.cancel)
    return await work


def _say(what: str) -> None:
    """Progress, on stderr: when each part starts (to attach a profiler to it, say)."""
    print(f"{time.strftime('%H:%M:%S')} {what}", file=sys.stderr, flush=True)


def _postgres(data_dir: str) -> list[int]:
    """The embedded PostgreSQL's processes: the postmaster whose command line names the data
    directory, and its children."""
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info["cmdline"] or []
        if any(data_dir in part for part in cmdline) and "postgres" in " ".join(cmdline):
            return [process.pid, *(child.pid for child in process.children(recursive=True))]
    return []


def _plain(value: Any) -> Any:
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, Drain):
        return asdict(value) | {
            "per_s": value.per_s,
            "cpu_ms": value.cpu_ms_per_delivery,
            "service_busy": value.service_busy,
        }
    if hasattr(value, "__dataclass_fields__"):
        return asdict(value)
    return value


def _event_loop() -> asyncio.Runner:
    """The service's event loop (uvloop) where it is installed, for the client as well."""
    try:
        import uvloop  # noqa: PLC0415 - optional at run time

        return asyncio.Runner(loop_factory=uvloop.new_event_loop)
    except ImportError:
        return asyncio.Runner()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
