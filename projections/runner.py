"""Applying projections: inline in the write transaction, async catch-up, replay and verify."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import asyncpg
import msgspec
import structlog

from projections import ALL, ASYNC, INLINE
from service import eventstore
from service.events import RecordedEvent, UnknownEventType, decode_event

if TYPE_CHECKING:
    from collections.abc import Sequence

    from projections.base import Projection
    from service.db import Conn

log = structlog.get_logger()

POLL_SECONDS = 5.0
# After a wake-up, wait this long so that one catch-up covers a burst of appends.
COALESCE_SECONDS = 0.5
BATCH = 500


async def apply_inline(conn: Conn, records: Sequence[RecordedEvent]) -> None:
    """The eventstore's inline hook: same transaction, before the global section."""
    for record in records:
        for projection in INLINE:
            if projection.wants(record):
                await projection.apply(conn, record)


# --- async projections ------------------------------------------------------------------------

LOCK_CHECKPOINT = """
SELECT position FROM projection_checkpoints WHERE name = $1 FOR UPDATE SKIP LOCKED
"""
SAVE_CHECKPOINT = """
UPDATE projection_checkpoints SET position = $2, updated_at = now() WHERE name = $1
"""


async def catch_up_once(pool: asyncpg.Pool, projection: Projection, batch: int = BATCH) -> int:
    """Apply one batch past the checkpoint, committing writes and checkpoint together.

    Returns the number of events applied; 0 when up to date or another replica owns the row.
    """
    async with pool.acquire() as conn, conn.transaction():
        checkpoint = await conn.fetchval(LOCK_CHECKPOINT, projection.name)
        if checkpoint is None:
            return 0
        applied = 0
        async for records in eventstore.read_all(conn, after=checkpoint, batch=batch):
            for record in records:
                if projection.wants(record):
                    await projection.apply(conn, record)
            last = records[-1].position
            assert last is not None
            await conn.execute(SAVE_CHECKPOINT, projection.name, last)
            applied += len(records)
            break  # one batch per transaction keeps transactions short
        return applied


async def run_async_projections(pool: asyncpg.Pool, dsn: str, stop: asyncio.Event) -> None:
    """Follow the log for every async projection until stop is set.

    Wakes on NOTIFY events (sent by the global section) and polls slowly as a fallback.
    """
    wake = asyncio.Event()
    listener: asyncpg.Connection | None = None
    try:
        listener = await asyncpg.connect(dsn)
        await listener.add_listener("events", lambda *_: wake.set())
    except (OSError, asyncpg.PostgresError):
        log.warning("projection_listen_failed", fallback="poll")
    try:
        while not stop.is_set():
            wake.clear()
            for projection in ASYNC:
                try:
                    while await catch_up_once(pool, projection) and not stop.is_set():
                        pass
                except Exception:  # keep following; the next wake-up or poll retries
                    log.exception("projection_failed", projection=projection.name)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(_first(wake, stop), POLL_SECONDS)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), COALESCE_SECONDS)
    finally:
        if listener is not None:
            await listener.close()


async def _first(*events: asyncio.Event) -> None:
    waiters = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()


# --- replay -------------------------------------------------------------------------------------

REPLAY_LOCK = 0x666C616A  # one replay at a time
REPLAY_SCHEMA = "replay_scratch"


async def replay(conn: Conn) -> int:
    """Rebuild every read model from the log; returns the events applied.

    The long part (every event through the handlers) runs into scratch tables without locks;
    the swap takes the locks writers and runners take, in their order (checkpoint rows, tables,
    then the log head), applies what arrived meanwhile, and copies the tables in.
    """
    await conn.execute("SELECT pg_advisory_lock($1)", REPLAY_LOCK)
    try:
        await conn.execute(f"DROP SCHEMA IF EXISTS {REPLAY_SCHEMA} CASCADE")
        async with conn.transaction():
            await _create_scratch(conn, REPLAY_SCHEMA)
        first = await eventstore.head(conn)
        async with conn.transaction():
            await conn.execute(f"SET LOCAL search_path = {REPLAY_SCHEMA}, public")
            count = await _rebuild(conn, dict.fromkeys(_names(), first))
        async with conn.transaction():
            await conn.execute("SELECT name FROM projection_checkpoints ORDER BY name FOR UPDATE")
            await conn.execute(f"LOCK TABLE {', '.join(_tables())} IN ACCESS EXCLUSIVE MODE")
            last = await conn.fetchval("SELECT position FROM log_head WHERE id = 1 FOR UPDATE")
            await conn.execute(f"SET LOCAL search_path = {REPLAY_SCHEMA}, public")
            count += await _rebuild(conn, dict.fromkeys(_names(), last), after=first)
            await conn.execute("SET LOCAL search_path = readmodel, public")
            for table in _tables():
                await conn.execute(f"TRUNCATE readmodel.{table}")
                columns = ", ".join(await conn.fetchval(STORED_COLUMNS, table))
                copy = (
                    f"INSERT INTO readmodel.{table} ({columns}) "  # noqa: S608 - our constants
                    f"SELECT {columns} FROM {REPLAY_SCHEMA}.{table}"
                )
                await conn.execute(copy)
            for projection in ASYNC:
                await conn.execute(SAVE_CHECKPOINT, projection.name, last)
        return count
    finally:
        await conn.execute(f"DROP SCHEMA IF EXISTS {REPLAY_SCHEMA} CASCADE")
        await conn.execute("SELECT pg_advisory_unlock($1)", REPLAY_LOCK)


# Columns a copy writes: generated ones (users.search_*) are computed by PostgreSQL.
STORED_COLUMNS = """
SELECT array_agg(quote_ident(a.attname) ORDER BY a.attnum) FROM pg_attribute a
WHERE a.attrelid = ('readmodel.' || quote_ident($1))::regclass
  AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
"""


def _names() -> list[str]:
    return [p.name for p in ALL]


def _tables() -> list[str]:
    return [t for p in ALL for t in p.tables]


async def _create_scratch(conn: Conn, schema: str) -> None:
    """Empty copies of every read-model table (same columns, keys and indexes)."""
    await conn.execute(f"CREATE SCHEMA {schema}")
    for table in _tables():
        await conn.execute(f"CREATE TABLE {schema}.{table} (LIKE readmodel.{table} INCLUDING ALL)")


async def _rebuild(conn: Conn, upto: dict[str, int], after: int = 0) -> int:
    """Apply after < position <= upto[projection] to the tables on the current search_path."""
    count = 0
    limit = max(upto.values(), default=0)
    async for records in eventstore.read_all(conn, after=after, upto=limit):
        for record in records:
            assert record.position is not None
            for projection in ALL:
                if record.position <= upto[projection.name] and projection.wants(record):
                    await projection.apply(conn, record)
        count += len(records)
    return count


# --- verify -------------------------------------------------------------------------------------


@dataclass
class Report:
    events: int = 0
    streams: int = 0
    problems: list[str] = field(default_factory=list)
    read_models: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems

    def lines(self) -> list[str]:
        out = [f"events: {self.events}", f"streams: {self.streams}"]
        out += [f"read model {name}: {state}" for name, state in self.read_models.items()]
        out += [f"PROBLEM: {p}" for p in self.problems]
        out.append("verify: OK" if self.ok else f"verify: FAILED ({len(self.problems)} problems)")
        return out


COUNT_POSITIONS = """
SELECT count(*) AS n, coalesce(min(position), 0) AS lo, coalesce(max(position), 0) AS hi,
       (SELECT position FROM log_head WHERE id = 1) AS head
FROM events
"""
BAD_STREAMS = """
SELECT coalesce(e.stream_type, s.stream_type) AS stream_type,
       coalesce(e.stream_key, s.stream_key) AS stream_key, e.n, e.hi, s.version
FROM (SELECT stream_type, stream_key, count(*) AS n, max(stream_version) AS hi,
             min(stream_version) AS lo
      FROM events GROUP BY stream_type, stream_key) e
FULL JOIN streams s ON s.stream_type = e.stream_type AND s.stream_key = e.stream_key
WHERE e.n IS NULL OR e.lo <> 1 OR e.n <> e.hi OR s.version IS DISTINCT FROM e.hi::integer
LIMIT 20
"""
CHAIN = """
SELECT position, type, schema_version, data::text AS data, prev_hash, hash,
       event_canonical(position, stream_type, stream_key, stream_version, event_id, type,
                       schema_version, data, metadata, recorded_at) AS canonical
FROM events ORDER BY position
"""
GENESIS = bytes(32)
MAX_PROBLEMS = 50


async def verify(conn: Conn) -> Report:
    """Check the log and that rebuilt read models equal the live ones, in one snapshot.

    Everything verify builds lives in one transaction that always rolls back.
    """
    report = Report()
    tx = conn.transaction(isolation="repeatable_read")
    await tx.start()
    try:
        await _check_positions(conn, report)
        await _check_streams(conn, report)
        await _check_chain(conn, report)
        try:
            await _check_read_models(conn, report)
        except (UnknownEventType, msgspec.MsgspecError, KeyError) as exc:
            report.problems.append(f"read models could not be rebuilt: {exc!r}")
    finally:
        await tx.rollback()
    return report


async def _check_positions(conn: Conn, report: Report) -> None:
    row = await conn.fetchrow(COUNT_POSITIONS)
    assert row is not None
    report.events = row["n"]
    if row["n"] and (row["lo"] != 1 or row["hi"] != row["n"]):
        report.problems.append(
            f"positions are not 1..N: {row['n']} events span {row['lo']}..{row['hi']}"
        )
    if row["head"] != row["hi"]:
        report.problems.append(f"log head is {row['head']} but the last event is {row['hi']}")


async def _check_streams(conn: Conn, report: Report) -> None:
    report.streams = await conn.fetchval("SELECT count(*) FROM streams")
    for row in await conn.fetch(BAD_STREAMS):
        report.problems.append(
            f"stream {row['stream_type']}/{row['stream_key']}: {row['n']} events, "
            f"last version {row['hi']}, streams table says {row['version']}"
        )


async def _check_chain(conn: Conn, report: Report) -> None:
    previous = GENESIS
    expected_position = 1
    async for row in conn.cursor(CHAIN, prefetch=2000):
        if len(report.problems) >= MAX_PROBLEMS:
            report.problems.append("too many problems; stopped checking the chain")
            return
        position = row["position"]
        if position != expected_position:
            report.problems.append(f"expected position {expected_position}, found {position}")
            expected_position = position
        expected_position += 1
        prev_hash, stored = bytes(row["prev_hash"]), bytes(row["hash"])
        if prev_hash != previous:
            report.problems.append(f"event {position}: prev_hash does not match event before it")
        if hashlib.sha256(prev_hash + row["canonical"].encode()).digest() != stored:
            report.problems.append(f"event {position}: hash does not match its content")
        previous = stored
        try:
            decode_event(row["type"], row["schema_version"], row["data"])
        except (UnknownEventType, msgspec.MsgspecError, KeyError) as exc:
            report.problems.append(f"event {position} ({row['type']}) does not decode: {exc}")


async def _check_read_models(conn: Conn, report: Report) -> None:
    """Rebuild into a scratch schema (same transaction, rolled back) and diff table by table."""
    head = await conn.fetchval("SELECT position FROM log_head WHERE id = 1")
    checkpoints = {
        r["name"]: r["position"]
        for r in await conn.fetch("SELECT name, position FROM projection_checkpoints")
    }
    upto = {p.name: (head if p.mode == "inline" else checkpoints.get(p.name, 0)) for p in ALL}
    await _create_scratch(conn, "verify_scratch")
    await conn.execute("SET LOCAL search_path = verify_scratch, public")
    await _rebuild(conn, upto)
    await conn.execute("SET LOCAL search_path = readmodel, public")
    for projection in ALL:
        for table in projection.tables:
            diff = await conn.fetchval(
                f"SELECT count(*) FROM ((TABLE readmodel.{table} EXCEPT ALL "  # noqa: S608 - ours
                f"TABLE verify_scratch.{table}) UNION ALL (TABLE verify_scratch.{table} "
                f"EXCEPT ALL TABLE readmodel.{table})) d"
            )
            if diff:
                report.problems.append(f"read model {table}: {diff} rows differ from a rebuild")
                report.read_models[table] = "DIFFERS"
            else:
                report.read_models[table] = "matches rebuild"
