"""`replay` over a large mixed log, with creates running against the service meanwhile.

Run with `make bench` (or `.venv/bin/python -m tests.bench.replay`). The service runs as its own
process on a fresh embedded PostgreSQL (default durability); `tests.bench.biglog` appends
BENCH_REPLAY_EVENTS events (default 1,000,000) to its log without inline projections. Then:

1. a first `replay` builds the empty read models (every row is inserted by the swap: "cold");
2. two more `replay` runs with nothing else running: the rate replay reaches with the read
   models right;
3. two more, each while a client creates flags through the API at concurrency
   BENCH_REPLAY_WRITERS (default 4), one request after another per writer: the latency of the
   creates while it runs (and the rate replay keeps with them taking their share of the CPU).

Each `replay` is the CLI (`python -m service replay`), and its `replay_done` log line gives the
phases: rebuild (memory and COPY), keys, catch-up, and the swap, whose locks stop writers.
Unleash has no replay; there is no reference row. Writes JSON to tests/bench/out/replay.json.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import aiohttp

from eventlog import connections
from tests.bench.append import percentile
from tests.bench.biglog import generate
from tests.bench.create import ROOT, TOKEN, dsn_of, serving_ours

OUT = Path(__file__).resolve().parent / "out" / "replay.json"


def run_replay(env: dict[str, str]) -> dict[str, Any]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "service", "replay"],
        cwd=ROOT,
        env=env | {"LOG_FORMAT": "json"},
        capture_output=True,
        text=True,
        check=True,
    )
    seconds = time.perf_counter() - started
    lines = [
        json.loads(line)
        for line in done.stdout.splitlines() + done.stderr.splitlines()
        if line.startswith("{")
    ]
    phases = next(line for line in lines if line.get("event") == "replay_done")
    return {"seconds": round(seconds, 2), "events_per_s": round(phases["events"] / seconds)} | {
        k: phases[k]
        for k in (
            "events",
            "workers",
            "rebuild_seconds",
            "keys_seconds",
            "catch_up_seconds",
            "swap_seconds",
            "swap_attempts",
            "rows_rewritten",
        )
    }


async def creates_during(base: str, writers: int, replay: asyncio.Future[Any]) -> dict[str, Any]:
    """Writers create flags one after another until the replay is over."""
    latencies: list[float] = []
    errors = 0
    headers = {"Authorization": TOKEN, "Content-Type": "application/json"}

    async def writer(session: aiohttp.ClientSession) -> None:
        nonlocal errors
        while not replay.done():
            body = {"name": f"during-replay-{uuid.uuid4().hex[:12]}"}
            started = time.perf_counter()
            async with session.post(
                f"{base}/api/admin/projects/default/features", json=body, headers=headers
            ) as response:
                await response.read()
                if response.status != 200:
                    errors += 1
            latencies.append((time.perf_counter() - started) * 1000)

    async with aiohttp.ClientSession() as session:
        await asyncio.gather(*(writer(session) for _ in range(writers)))
    latencies.sort()
    return {
        "creates": len(latencies),
        "errors": errors,
        "p50_ms": round(percentile(latencies, 0.50), 1),
        "p99_ms": round(percentile(latencies, 0.99), 1),
        "max_ms": round(latencies[-1], 1) if latencies else None,
    }


async def measured(base: str, env: dict[str, str], writers: int) -> dict[str, Any]:
    replay = asyncio.get_running_loop().run_in_executor(None, run_replay, env)
    load = await creates_during(base, writers, replay)
    return await replay | load


async def bench() -> dict[str, Any]:
    events = int(os.environ.get("BENCH_REPLAY_EVENTS", "1000000"))
    writers = int(os.environ.get("BENCH_REPLAY_WRITERS", "4"))
    env: dict[str, str] = {}
    with serving_ours(env) as (base, _pid):
        dsn = dsn_of(env)
        conn = await connections.connect(dsn)
        try:
            started = time.perf_counter()
            appended = await generate(conn, events)
            generated = time.perf_counter() - started
        finally:
            await conn.close()
        cold = run_replay(env)
        alone = [run_replay(env) for _ in range(2)]
        runs = [await measured(base, env, writers) for _ in range(2)]
    return {
        "events": appended,
        "generate_seconds": round(generated, 1),
        "writers": writers,
        "cold": cold,
        "alone": alone,
        "runs": runs,
    }


def render(report: dict[str, Any]) -> str:
    head = (
        "| run | events | seconds | events/s | rebuild s | keys s | catch-up s | swap s "
        "| rows rewritten | creates | p50 ms | p99 ms | max ms | errors |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    rows = []
    for name, r in (
        [("cold (empty read models)", report["cold"])]
        + [("alone", r) for r in report["alone"]]
        + [(f"with {report['writers']} writers", r) for r in report["runs"]]
    ):
        rows.append(
            f"| {name} | {r['events']:,} | {r['seconds']} | {r['events_per_s']:,} "
            f"| {r['rebuild_seconds']} | {r['keys_seconds']} | {r['catch_up_seconds']} "
            f"| {r['swap_seconds']} | {r['rows_rewritten']:,} | {r.get('creates', '-')} "
            f"| {r.get('p50_ms', '-')} | {r.get('p99_ms', '-')} | {r.get('max_ms', '-')} "
            f"| {r.get('errors', '-')} |"
        )
    return "\n".join([head, *rows])


def main() -> None:
    report = asyncio.run(bench())
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(report, indent=2))
    print(f"log: {report['events']:,} events generated in {report['generate_seconds']} s")
    print(render(report))


if __name__ == "__main__":
    main()
