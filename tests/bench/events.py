"""Searching the event log at 1,000,000 events, one request at a time: ours and the reference.

Run with `make bench` (or `.venv/bin/python -m tests.bench.events`). Our service runs as its own
process on a fresh embedded PostgreSQL; `tests.bench.biglog` appends BENCH_EVENTS_EVENTS events
(default 1,000,000) to its log. With BENCH_REFERENCE=1 the reference server
(../shared/reference/setup.sh --fresh) gets the same events in its own `events` table: each of
ours copied with Unleash's type name, project, flag, environment, author and time (its API is
far too slow to make a million). Then every query kind below is asked
BENCH_EVENTS_REQUESTS times (default 200) after 20 warm-ups, one request after another, of
`GET /api/admin/search/events`: p50, p99 and max in milliseconds, and the `total` answered;
then the same of Unleash's older `POST /api/admin/events/search` (POSTED_QUERIES) and of
`GET /api/admin/event-creators` (issue 43).
Query kinds with `{flag}` or `{position}` take a random flag or log position each time; the
cursor (`before`) is ours alone. Writes JSON to tests/bench/out/events.json.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp

from eventlog import connections
from tests.bench.append import percentile
from tests.bench.biglog import generate
from tests.bench.create import REFERENCE_TOKEN, TOKEN, dsn_of, serving_ours, serving_reference

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    import asyncpg

OUT = Path(__file__).resolve().parent / "out" / "events.json"
SEARCH = "/api/admin/search/events"
WARM_UP = 20
# (name, query, ours only)
QUERIES: list[tuple[str, str, bool]] = [
    ("newest 50", "limit=50", False),
    ("a common type", "type=IS:feature-strategy-add", False),
    ("a rare type", "type=IS:user-deleted", False),
    ("type and project", "type=IS:feature-created&project=IS:project-7", False),
    ("two types", "type=IS_ANY_OF:feature-tagged,feature-environment-enabled", False),
    ("one flag", "feature=IS:{flag}", False),
    ("one author", "createdBy=IS:1", False),
    ("author and type", "createdBy=IS:-42&type=IS:feature-archived", False),
    ("today (the whole log)", "from=IS:{today}&to=IS:{today}", False),
    ("page 21 of a type", "type=IS:feature-strategy-add&offset=1000", False),
    ("cursor: a type before a position", "type=IS:feature-strategy-add&before={position}", True),
    ("cursor: 100 after a position", "after={position}&limit=100", True),
]
# Unleash's older search (POST, one value a filter; issue 43), the same search underneath:
# (name, body; `{flag}` a random flag each time).
POSTED = "/api/admin/events/search"
POSTED_QUERIES: list[tuple[str, dict[str, Any]]] = [
    ("POST: newest 100", {}),
    ("POST: a common type", {"type": "feature-strategy-add"}),
    ("POST: type and project", {"type": "feature-created", "project": "project-7"}),
    ("POST: one flag", {"feature": "{flag}"}),
    ("POST: one flag's text", {"feature": "{flag}", "query": "rollout"}),
    ("POST: page 11 of a type", {"type": "feature-tagged", "offset": 1000}),
]
CREATORS = "/api/admin/event-creators"
# Our column of each stored type's Unleash name, for the reference's copy of the log.
COPY_LOG = """
SELECT kind AS type, metadata ->> 'actor_name' AS created_by, recorded_at AS created_at,
       data, project,
       CASE WHEN stream_type = 'feature' THEN stream_key END AS feature_name,
       data ->> 'environment' AS environment, actor_user_id AS created_by_user_id,
       true AS announced
FROM events WHERE position > 3 ORDER BY position
"""
REFERENCE_COLUMNS = (
    "type",
    "created_by",
    "created_at",
    "data",
    "project",
    "feature_name",
    "environment",
    "created_by_user_id",
    "announced",
)


async def measure(base: str, token: str, query: str, requests: int, pick: Any) -> dict[str, Any]:
    latencies: list[float] = []
    totals: set[int] = set()
    async with aiohttp.ClientSession(headers={"Authorization": token}) as session:
        for n in range(WARM_UP + requests):
            url = f"{base}{SEARCH}?{query.format(**pick())}"
            started = time.perf_counter()
            async with session.get(url) as response:
                body = await response.read()
                assert response.status == 200, (url, response.status, body[:300])
            if n >= WARM_UP:
                latencies.append((time.perf_counter() - started) * 1000)
                totals.add(json.loads(body)["total"])
    latencies.sort()
    return {
        "p50_ms": round(percentile(latencies, 0.50), 1),
        "p99_ms": round(percentile(latencies, 0.99), 1),
        "max_ms": round(latencies[-1], 1),
        "total": min(totals) if len(totals) == 1 else f"{min(totals)}-{max(totals)}",
    }


async def measure_other(
    base: str, token: str, body: dict[str, Any] | None, requests: int, pick: Any
) -> dict[str, Any]:
    """POST /api/admin/events/search with this body (its `{...}` filled each time), or with
    None GET /api/admin/event-creators; the total is `totalEvents`, or the creators."""
    latencies: list[float] = []
    totals: set[int] = set()
    async with aiohttp.ClientSession(headers={"Authorization": token}) as session:
        for n in range(WARM_UP + requests):
            picked = pick()
            started = time.perf_counter()
            if body is None:
                response = await session.get(f"{base}{CREATORS}")
            else:
                filled = {
                    k: v.format(**picked) if isinstance(v, str) else v for k, v in body.items()
                }
                response = await session.post(f"{base}{POSTED}", json=filled)
            async with response:
                raw = await response.read()
                assert response.status == 200, (body, response.status, raw[:300])
            if n >= WARM_UP:
                latencies.append((time.perf_counter() - started) * 1000)
                found = json.loads(raw)
                totals.add(len(found) if body is None else found["totalEvents"])
    latencies.sort()
    return {
        "p50_ms": round(percentile(latencies, 0.50), 1),
        "p99_ms": round(percentile(latencies, 0.99), 1),
        "max_ms": round(latencies[-1], 1),
        "total": min(totals) if len(totals) == 1 else f"{min(totals)}-{max(totals)}",
    }


@contextlib.asynccontextmanager
async def connected(dsn: str) -> AsyncIterator[asyncpg.Connection]:
    conn = await connections.connect(dsn)
    try:
        yield conn
    finally:
        await conn.close()


async def copy_to_reference(ours: str, reference: str) -> int:
    """Our log into the reference's events table, row for row (its type names and columns)."""
    async with connected(ours) as source, connected(reference) as target:
        await target.execute("SET search_path = public")
        rows = [tuple(r) for r in await source.fetch(COPY_LOG)]
        # Already announced (else Unleash's scheduler replays a million of them to its
        # listeners), and without its per-row statistics trigger, which a bulk load would run
        # a million times: the table as a long-running install would hold it.
        await target.execute("ALTER TABLE events DISABLE TRIGGER USER")
        try:
            await target.copy_records_to_table("events", records=rows, columns=REFERENCE_COLUMNS)
        finally:
            await target.execute("ALTER TABLE events ENABLE TRIGGER USER")
        await target.execute("VACUUM ANALYZE events")
        return len(rows)


async def bench() -> dict[str, Any]:
    events = int(os.environ.get("BENCH_EVENTS_EVENTS", "1000000"))
    requests = int(os.environ.get("BENCH_EVENTS_REQUESTS", "200"))
    rng = random.Random(7)
    env: dict[str, str] = {}
    report: dict[str, Any] = {"requests": requests, "ours": {}, "reference": {}}
    with serving_ours(env) as (base, _pid):
        dsn = dsn_of(env)
        async with connected(dsn) as conn:
            started = time.perf_counter()
            report["events"] = await generate(conn, events)
            report["generate_seconds"] = round(time.perf_counter() - started, 1)
            await conn.execute("VACUUM ANALYZE events")
            # Flags from all over the log (a sample of the pages that hold their creation).
            flags = [
                r[0]
                for r in await conn.fetch(
                    "SELECT stream_key FROM events TABLESAMPLE SYSTEM (5) "
                    "WHERE type = 'FeatureCreated' LIMIT 2000"
                )
            ]
            head = int(await conn.fetchval("SELECT position FROM log_head"))
            today = (await conn.fetchval("SELECT max(recorded_at) FROM events")).date()

        def pick() -> dict[str, Any]:
            return {
                "flag": rng.choice(flags),
                "position": rng.randint(1, head),
                "today": today,
            }

        for name, query, _ in QUERIES:
            report["ours"][name] = await measure(base, TOKEN, query, requests, pick)
            print(f"ours {name}: {report['ours'][name]}", file=sys.stderr)
        for name, body in [*POSTED_QUERIES, ("event-creators", None)]:
            report["ours"][name] = await measure_other(base, TOKEN, body, requests, pick)
            print(f"ours {name}: {report['ours'][name]}", file=sys.stderr)
        if os.environ.get("BENCH_REFERENCE") == "1":
            with serving_reference() as (ref_base, _ref_pid):
                ref_dsn = re.sub(r"^postgres://", "postgresql://", reference_dsn())
                report["reference_rows"] = await copy_to_reference(dsn, ref_dsn)
                for name, query, ours_only in QUERIES:
                    if ours_only:
                        continue
                    found = await measure(ref_base, REFERENCE_TOKEN, query, requests, pick)
                    report["reference"][name] = found
                    print(f"reference {name}: {found}", file=sys.stderr)
                for name, body in [*POSTED_QUERIES, ("event-creators", None)]:
                    found = await measure_other(ref_base, REFERENCE_TOKEN, body, requests, pick)
                    report["reference"][name] = found
                    print(f"reference {name}: {found}", file=sys.stderr)
    return report


def reference_dsn() -> str:
    ref_dir = Path(os.environ.get("UNLEASH_REF_DIR", "/tmp/unleash-ref"))
    setup = (ref_dir / "env").read_text() if (ref_dir / "env").exists() else ""
    found = re.search(r"DATABASE_URL=(\S+)", setup)
    return found[1] if found else "postgres://unleash:unleash@127.0.0.1:5433/unleash"


def render(report: dict[str, Any]) -> str:
    head = (
        "| query | ours p50 ms | ours p99 ms | ours max ms | total | reference p50 ms "
        "| reference p99 ms | reference total |\n|---|---:|---:|---:|---:|---:|---:|---:|"
    )
    rows = []
    cells = [(name, query) for name, query, _ in QUERIES]
    cells += [(name, f"POST {POSTED} {json.dumps(body)}") for name, body in POSTED_QUERIES]
    cells.append(("event-creators", f"GET {CREATORS}"))
    for name, query in cells:
        if name not in report["ours"]:
            continue
        ours = report["ours"][name]
        ref = report["reference"].get(name, {})
        rows.append(
            f"| {name} (`{query}`) | {ours['p50_ms']} | {ours['p99_ms']} | {ours['max_ms']} "
            f"| {ours['total']} | {ref.get('p50_ms', '-')} | {ref.get('p99_ms', '-')} "
            f"| {ref.get('total', '-')} |"
        )
    return "\n".join([head, *rows])


def main() -> None:
    report = asyncio.run(bench())
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(report, indent=2, default=str))
    print(f"log: {report['events']:,} events generated in {report['generate_seconds']} s")
    print(render(report))


if __name__ == "__main__":
    main()
