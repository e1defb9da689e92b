"""`replay`: rebuild every read model from the log, aside, then swap it in."""

from __future__ import annotations

import asyncio
import os
import random
import sys
import time
from typing import TYPE_CHECKING, NamedTuple

import asyncpg
import msgspec
import structlog

import eventlog
from eventlog import connections
from eventlog.connections import set_search_path
from eventlog.privacy import master
from projections.follower import SAVE_CHECKPOINT
from projections.rebuild import (
    add_keys,
    create_scratch,
    names,
    rebuild,
    rebuild_to_head,
    table_specs,
    tables,
)
from projections.registry import ASYNC, GROUPS
from projections.worker import DSN_VARIABLE

if TYPE_CHECKING:
    from eventlog.connections import Conn
    from projections.writes import Table

log = structlog.get_logger()

REPLAY_LOCK = 0x666C616A  # one replay at a time
REPLAY_SCHEMA = "replay_scratch"
# The swap waits at most this long for each lock, far below PostgreSQL's deadlock check (1 s):
# writers take read-model tables in their own order, so the swap must be the one that yields.
SWAP_LOCK_TIMEOUT = "100ms"
SWAP_ATTEMPTS = 100  # about 15 s of writers holding what the swap needs, then give up


class ReplayBusy(Exception):
    """The swap could not take its locks: writers held them every time it tried."""


# Columns an INSERT writes: generated ones (users.search_*) are computed by PostgreSQL.
STORED_COLUMNS = """
SELECT array_agg(quote_ident(a.attname) ORDER BY a.attnum) FROM pg_attribute a
WHERE a.attrelid = ('readmodel.' || quote_ident($1))::regclass
  AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
"""
# Events still to apply after which the catch-up moves under the swap's locks.
SWAP_BACKLOG = 1_000
# A log this long, or longer, is rebuilt by one process per group of projections: below,
# starting them costs more than it saves.
PARALLEL_FROM = 100_000


async def replay(conn: Conn, dsn: str | None = None) -> int:
    """Rebuild every read model from the log; returns the events applied.

    1. Without locks: every event is applied in memory and copied into scratch tables, which
       then get their keys; writers go on meanwhile. A log of PARALLEL_FROM events or more,
       given the `dsn` to connect with, is rebuilt by one process per group of projections
       (registry.GROUPS, projections/worker.py), up to the head as it was; a smaller one here,
       following the head until fewer than SWAP_BACKLOG events are left.
    2. Without locks: the events appended meanwhile are applied to the scratch tables as SQL.
    3. `_swap`, under locks that stop writers (not readers) for its duration: the last events,
       then each live table is made equal to its rebuild by deleting the rows that differ and
       inserting the missing ones: when the read models were right, nothing is written.
    """
    await conn.execute("SELECT pg_advisory_lock($1)", REPLAY_LOCK)
    try:
        await conn.execute(f"DROP SCHEMA IF EXISTS {REPLAY_SCHEMA} CASCADE")
        async with conn.transaction():
            await create_scratch(conn, REPLAY_SCHEMA, indexes=False)
        started = time.perf_counter()
        head = await eventlog.head(conn)
        if dsn is not None and head >= PARALLEL_FROM:
            count, done, workers = await _in_workers(dsn, head), head, len(GROUPS)
            rebuilt = time.perf_counter()
            await _keys_in_parallel(dsn)
        else:
            async with conn.transaction():
                await conn.execute(set_search_path(REPLAY_SCHEMA))
                count, done = await rebuild_to_head(conn, SWAP_BACKLOG)
                rebuilt = time.perf_counter()
                await add_keys(conn, REPLAY_SCHEMA)
            workers = 0
        keyed = time.perf_counter()
        head = await eventlog.head(conn)
        if head - done > 0:
            async with conn.transaction():
                await conn.execute(set_search_path(REPLAY_SCHEMA))
                count += await rebuild(conn, dict.fromkeys(names(), head), after=done)
            done = head
        caught_up = time.perf_counter()
        swapped = await _swap(conn, done)
        log.info(
            "replay_done",
            events=count + swapped.events,
            workers=workers,
            rebuild_seconds=round(rebuilt - started, 3),
            keys_seconds=round(keyed - rebuilt, 3),
            catch_up_seconds=round(caught_up - keyed, 3),
            swap_seconds=round(swapped.seconds, 3),
            swap_attempts=swapped.attempts,
            rows_rewritten=swapped.rows,
        )
        return count + swapped.events
    finally:
        await conn.execute(f"DROP SCHEMA IF EXISTS {REPLAY_SCHEMA} CASCADE")
        await conn.execute("SELECT pg_advisory_unlock($1)", REPLAY_LOCK)


async def _in_workers(dsn: str, upto: int) -> int:
    """Each group of projections rebuilt up to `upto` by a process of its own, at once;
    returns the events the log holds up to there. Any failure stops the others."""
    env = os.environ | {DSN_VARIABLE: dsn} | master.for_worker()
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "projections.worker",
            REPLAY_SCHEMA,
            str(group),
            str(upto),
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        for group in range(len(GROUPS))
    ]
    try:
        outputs = await asyncio.gather(*(p.communicate() for p in procs))
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    for proc, (out, err) in zip(procs, outputs, strict=True):
        if proc.returncode != 0:
            raise WorkerFailed(
                f"a rebuild worker failed ({proc.returncode}): {err.decode()[-2000:]}"
            )
        log.info("replay_worker_done", **msgspec.json.decode(out.splitlines()[-1]))
    return upto


async def _keys_in_parallel(dsn: str, connections_used: int = 2) -> None:
    """The scratch tables' keys, made on a few connections at once (the largest first)."""
    specs = sorted(table_specs(), key=lambda t: KEY_ORDER.get(t.name, len(KEY_ORDER)))
    shares = [specs[i::connections_used] for i in range(connections_used)]

    async def make(share: list[Table]) -> None:
        conn = await connections.connect(dsn)
        try:
            await add_keys(conn, REPLAY_SCHEMA, share)
        finally:
            await conn.close()

    await asyncio.gather(*(make(share) for share in shares))


# The tables with the most rows at a million events, their keys taking the longest.
KEY_ORDER = {
    name: n
    for n, name in enumerate(
        ("feature_environments", "feature_strategies", "features", "feature_tags", "sessions")
    )
}


class WorkerFailed(Exception):
    """A process of a parallel rebuild did not finish; nothing was swapped in."""


class Swapped(NamedTuple):
    events: int  # applied under the locks
    seconds: float  # the locks held, in the attempt that succeeded: writers waited this long
    attempts: int
    rows: int  # live rows deleted or inserted to match the rebuild (0 when they were right)


async def _swap(conn: Conn, done: int) -> Swapped:
    """Take the locks writers and runners take (checkpoint rows, every read-model table in
    EXCLUSIVE mode, which lets plain reads go on, the log head), apply what arrived since
    `done`, and bring each live table to its rebuild. A lock not granted at once rolls the swap
    back and it tries again a moment later, so no writer ever deadlocks with it.
    """
    for attempt in range(1, SWAP_ATTEMPTS + 1):
        try:
            async with conn.transaction():
                await conn.execute(f"SET LOCAL lock_timeout = '{SWAP_LOCK_TIMEOUT}'")
                await conn.execute(
                    "SELECT name FROM projection_checkpoints ORDER BY name FOR UPDATE"
                )
                await conn.execute(f"LOCK TABLE {', '.join(tables())} IN EXCLUSIVE MODE")
                last = await eventlog.lock_head(conn)
                locked = time.perf_counter()
                await conn.execute("SET LOCAL lock_timeout = 0")
                await conn.execute(set_search_path(REPLAY_SCHEMA))
                count = await rebuild(conn, dict.fromkeys(names(), last), after=done)
                await conn.execute(set_search_path("readmodel"))
                rows = sum([await _converge(conn, table) for table in table_specs()])
                for projection in ASYNC:
                    await conn.execute(SAVE_CHECKPOINT, projection.name, last)
            return Swapped(count, time.perf_counter() - locked, attempt, rows)
        except asyncpg.LockNotAvailableError:
            await asyncio.sleep(random.uniform(0.05, 0.25))  # noqa: S311 - not for secrets
    raise ReplayBusy(
        f"replay could not lock the read models in {SWAP_ATTEMPTS} tries; writers held them"
    )


async def _converge(conn: Conn, table: Table) -> int:
    """Delete the live rows the rebuild does not have as they are, insert the rebuilt rows the
    live table then lacks. Both sides have the same columns in the same order (LIKE)."""
    live, scratch = f"readmodel.{table.name}", f"{REPLAY_SCHEMA}.{table.name}"
    key = ", ".join(table.key)
    columns = ", ".join(await conn.fetchval(STORED_COLUMNS, table.name))
    # Our constants only: table and column names from the registry and the catalog.
    deleted = await conn.execute(
        f"DELETE FROM {live} WHERE ({key}) IN "  # noqa: S608
        f"(SELECT {key} FROM (TABLE {live} EXCEPT TABLE {scratch}) d)"
    )
    inserted = await conn.execute(
        f"INSERT INTO {live} ({columns}) SELECT {columns} "  # noqa: S608
        f"FROM (TABLE {scratch} EXCEPT TABLE {live}) d"
    )
    return int(deleted.split()[-1]) + int(inserted.split()[-1])
