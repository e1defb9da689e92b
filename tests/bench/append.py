"""Event-store append throughput: transactions/s with 1 and 16 concurrent writers.

Run with `make bench` (or `.venv/bin/python -m tests.bench.append`). Uses BENCH_DATABASE_URL
when set (a server DSN on which we may create databases), else starts the embedded PostgreSQL
in a temporary directory. The server keeps its default durability settings (fsync and
synchronous_commit on): every COMMIT waits for its WAL flush, as in production.

Each transaction mirrors a create: a fresh stream key appended with expected="no-stream".
Prints a markdown table to stdout and writes JSON to tests/bench/out/append.json.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import platform
import shutil
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import asyncpg
import structlog

from eventlog import connections, migrations
from eventlog.privacy import master
from eventlog.privacy.crypto import MasterKey
from eventlog.privacy.keys import Masters
from projections import verify as verification
from service import embedded
from tests.factories import TEST_ACTOR, noted, work
from tests.pg import with_database

if TYPE_CHECKING:
    from collections.abc import Iterator

    from eventlog.codec import DomainEvent

OUT = Path(__file__).resolve().parent / "out" / "append.json"
STREAM_TYPE = "bench"
WARMUP_SECONDS = 2.0
DURABILITY_SETTINGS = (
    "fsync",
    "synchronous_commit",
    "full_page_writes",
    "wal_sync_method",
    "commit_delay",
    "shared_buffers",
    "max_connections",
)


@dataclass(frozen=True)
class Scenario:
    name: str
    writers: int
    events_per_tx: int


SCENARIOS = (
    Scenario("1 writer, 1 event/tx", writers=1, events_per_tx=1),
    Scenario("16 writers, 1 event/tx", writers=16, events_per_tx=1),
    Scenario("16 writers, 10 events/tx", writers=16, events_per_tx=10),
)


@dataclass
class Result:
    scenario: str
    writers: int
    events_per_tx: int
    seconds: float
    transactions: int
    tx_per_s: float
    events_per_s: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    client_cpu_percent: float


@dataclass
class Window:
    """The measured interval; transactions that complete inside it count."""

    start: float
    end: float
    latencies: list[float] = field(default_factory=list)


def percentile(sorted_values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of an ascending list (0.0 when empty)."""
    if not sorted_values:
        return 0.0
    rank = min(max(1, math.ceil(fraction * len(sorted_values))), len(sorted_values))
    return sorted_values[rank - 1]


async def writer(
    conn: asyncpg.Connection, scenario: Scenario, window: Window, counter: list[int]
) -> None:
    """Append fresh streams back to back until the window ends; record in-window latencies."""
    units = work()
    while True:
        begin = time.perf_counter()
        if begin >= window.end:
            return
        first = counter[0]
        counter[0] += scenario.events_per_tx
        events: list[DomainEvent] = [noted(first + i) for i in range(scenario.events_per_tx)]
        # As the service appends: the global section sent with the COMMIT, in one message
        # (a unit of work). No read model handles these events.
        async with units.begin(conn) as uow:
            await uow.append((STREAM_TYPE, uuid.uuid4().hex), events, TEST_ACTOR, new=True)
        done = time.perf_counter()
        if window.start <= done < window.end:
            window.latencies.append(done - begin)


async def run_scenario(
    conns: list[asyncpg.Connection], scenario: Scenario, seconds: float
) -> Result:
    start = time.perf_counter() + WARMUP_SECONDS
    window = Window(start=start, end=start + seconds)
    counter = [1]
    cpu_before: float | None = None

    async def mark_cpu() -> None:
        nonlocal cpu_before
        await asyncio.sleep(max(0.0, window.start - time.perf_counter()))
        cpu_before = time.process_time()

    marker = asyncio.create_task(mark_cpu())
    await asyncio.gather(
        *(writer(conn, scenario, window, counter) for conn in conns[: scenario.writers])
    )
    await marker
    cpu = time.process_time() - (cpu_before or 0.0)
    latencies = sorted(window.latencies)
    count = len(latencies)
    return Result(
        scenario=scenario.name,
        writers=scenario.writers,
        events_per_tx=scenario.events_per_tx,
        seconds=seconds,
        transactions=count,
        tx_per_s=count / seconds,
        events_per_s=count * scenario.events_per_tx / seconds,
        p50_ms=percentile(latencies, 0.50) * 1000,
        p99_ms=percentile(latencies, 0.99) * 1000,
        max_ms=(latencies[-1] if latencies else 0.0) * 1000,
        client_cpu_percent=100 * cpu / seconds,
    )


async def server_info(conn: asyncpg.Connection) -> dict[str, str]:
    info = {"version": str(await conn.fetchval("SELECT version()"))}
    for name in DURABILITY_SETTINGS:
        info[name] = str(await conn.fetchval(f"SHOW {name}"))
    return info


async def verify(conn: asyncpg.Connection) -> dict[str, Any]:
    report = await verification.verify(conn)
    row = await conn.fetchrow("SELECT count(*) AS n, max(position) AS hi FROM events")
    assert row is not None
    return {
        "verify_ok": report.ok,
        "verify_lines": report.lines(),
        "events": int(row["n"]),
        "max_position": int(row["hi"] or 0),
        "positions_dense": row["n"] == (row["hi"] or 0),
    }


async def bench(server_dsn: str, seconds: float) -> dict[str, Any]:
    name = f"bench_append_{os.getpid()}_{int(time.time())}"
    admin = await asyncpg.connect(server_dsn)
    try:
        await admin.execute(f"CREATE DATABASE {name}")
    finally:
        await admin.close()
    dsn = with_database(server_dsn, name)
    try:
        conn = await connections.connect(dsn)
        try:
            await migrations.migrate(conn)
            info = await server_info(conn)
        finally:
            await conn.close()
        # One connection per writer, opened before any timing (what a warm pool hands out).
        conns = [await connections.connect(dsn) for _ in range(max(s.writers for s in SCENARIOS))]
        try:
            results = [await run_scenario(conns, s, seconds) for s in SCENARIOS]
        finally:
            for conn in conns:
                await conn.close()
        conn = await connections.connect(dsn)
        try:
            checks = await verify(conn)
        finally:
            await conn.close()
    finally:
        admin = await asyncpg.connect(server_dsn)
        try:
            await admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        finally:
            await admin.close()
    return {"server": info, "results": [asdict(r) for r in results], "checks": checks}


@contextlib.contextmanager
def server() -> Iterator[tuple[str, str]]:
    """(DSN, label): BENCH_DATABASE_URL, or the embedded PostgreSQL in a throwaway directory."""
    url = os.environ.get("BENCH_DATABASE_URL")
    if url:
        yield url, "BENCH_DATABASE_URL"
        return
    base = Path(tempfile.mkdtemp(prefix="bench-", dir="/tmp"))  # short: the socket lives here
    try:
        with embedded.embedded_postgres(base) as dsn:
            yield dsn, "embedded PostgreSQL (default settings)"
    finally:
        shutil.rmtree(base, ignore_errors=True)


def render(report: dict[str, Any]) -> str:
    srv, checks = report["server"], report["checks"]
    durable = srv["fsync"] == "on" and srv["synchronous_commit"] == "on"
    durability = (
        f"fsync={srv['fsync']}, synchronous_commit={srv['synchronous_commit']}, "
        f"full_page_writes={srv['full_page_writes']}, wal_sync_method={srv['wal_sync_method']}, "
        f"commit_delay={srv['commit_delay']}"
    )
    durability += (
        " (durable, not tuned: every COMMIT waits for its WAL flush, as in production)"
        if durable
        else " (WARNING: commits are not durable; these numbers are NOT what production sees)"
    )
    workload = (
        f"{WARMUP_SECONDS:g} s warm-up, then {report['seconds']:g} s measured per row; one "
        "transaction = a unit of work's append of Noted events to a fresh stream "
        "(expected no-stream)"
    )
    lines = [
        f"## Event store append ({report['started_at']})",
        "",
        f"- machine: nproc={report['nproc']}, {report['platform']}",
        f"- server: {report['server_label']}: {srv['version']}",
        f"- durability: {durability}",
        f"- workload: {workload}",
        "",
        "| scenario | tx/s | events/s | p50 ms | p99 ms | client CPU |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r['scenario']} | {r['tx_per_s']:,.0f} | {r['events_per_s']:,.0f} "
        f"| {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['client_cpu_percent']:.0f}% |"
        for r in report["results"]
    ]
    verify = "OK" if checks["verify_ok"] else "FAILED"
    dense = "yes" if checks["positions_dense"] else "NO"
    events, hi = f"{checks['events']:,}", f"{checks['max_position']:,}"
    lines += [
        "",
        f"- verify: {verify} (positions 1..N, streams, hash chain, read models; {events} events)",
        f"- positions dense: {dense} (count(*) {events}, max(position) {hi})",
    ]
    if not checks["verify_ok"]:
        lines += [f"  - {line}" for line in checks["verify_lines"]]
    return "\n".join(lines)


def main() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    # verify reads the log as the service does, with a master key (these events seal nothing).
    master.install(Masters(MasterKey.parse(MasterKey.generate())))
    seconds = float(os.environ.get("BENCH_SECONDS", "10"))
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    with server() as (dsn, label):
        measured = asyncio.run(bench(dsn, seconds))
    report: dict[str, Any] = {
        "started_at": started_at,
        "nproc": len(os.sched_getaffinity(0)),
        "platform": platform.platform(),
        "server_label": label,
        "seconds": seconds,
        "warmup_seconds": WARMUP_SECONDS,
    } | measured
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(render(report))
    print(f"\nJSON: {OUT}")
    checks = report["checks"]
    if not (checks["verify_ok"] and checks["positions_dense"]):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
