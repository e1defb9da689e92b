"""Async projections: follow the log past their checkpoint, on NOTIFY or a slow poll."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

import structlog

import eventlog
from eventlog import connections
from eventlog.logs import Throttled
from eventlog.notify import RELISTEN_POLL_SECONDS, Listener, first_set
from projections import writes
from projections.rebuild import reading_of
from projections.registry import ASYNC

if TYPE_CHECKING:
    import asyncpg

    from eventlog.connections import Conn
    from projections.base import Projection

log = structlog.get_logger()

POLL_SECONDS = 5.0
# After a wake-up, wait this long so that one catch-up covers a burst of appends.
COALESCE_SECONDS = 0.5
BATCH = 500

LOCK_CHECKPOINT = """
SELECT position FROM projection_checkpoints WHERE name = $1 FOR UPDATE SKIP LOCKED
"""
SAVE_CHECKPOINT = """
UPDATE projection_checkpoints SET position = $2, updated_at = now() WHERE name = $1
"""
CHECKPOINTS = "SELECT name, position FROM projection_checkpoints WHERE name = ANY($1::text[])"


async def catch_up_once(pool: asyncpg.Pool, projection: Projection, batch: int = BATCH) -> int:
    """Apply one batch past the checkpoint, committing writes and checkpoint together.

    Returns the number of events applied; 0 when up to date or another replica owns the row.
    """
    async with pool.acquire() as conn, conn.transaction():
        checkpoint = await conn.fetchval(LOCK_CHECKPOINT, projection.name)
        if checkpoint is None:
            return 0
        # Only what the projection reads (rebuild.reading_of): each import's users, say, are
        # neither sent nor opened for activity_daily, which reads metadata and erasures only.
        records, upto = await eventlog.read_next(conn, checkpoint, reading_of((projection,)), batch)
        if upto <= checkpoint:
            return 0
        await writes.execute(conn, [w for r in records for w in projection.writes(r)])
        await conn.execute(SAVE_CHECKPOINT, projection.name, upto)
        return len(records)  # one batch per transaction keeps transactions short


async def projection_lags(conn: Conn) -> dict[str, int]:
    """Events each async projection is behind the log's head (for the metrics). The checkpoints
    are read before the head, which only grows: a lag is never below 0."""
    rows = await conn.fetch(CHECKPOINTS, [projection.name for projection in ASYNC])
    head = await eventlog.head(conn)
    return {row["name"]: head - row["position"] for row in rows}


async def run_async_projections(pool: asyncpg.Pool, dsn: str, stop: asyncio.Event) -> None:
    """Follow the log for every async projection until stop is set.

    Wakes on NOTIFY (sent by every append) and polls slowly as a fallback. When the LISTEN
    connection is lost (the database restarted), it is opened again with backoff, and until it
    is, the log is polled every RELISTEN_POLL_SECONDS so that no read model falls behind by more.
    """
    wake = asyncio.Event()
    listener = Listener(dsn, wake)
    try:
        while not stop.is_set():
            wake.clear()
            if not listener.open and await listener.reopen():
                wake.set()  # appended while nobody listened: catch up now
            failed = False
            for projection in ASYNC:
                try:
                    while await catch_up_once(pool, projection) and not stop.is_set():
                        pass
                except Exception as exc:  # keep following; the next wake-up or poll retries
                    failed = True
                    if connections.is_unavailable(exc):
                        _unavailable.warning(projection=projection.name, error=type(exc).__name__)
                    else:
                        log.exception("projection_failed", projection=projection.name)
            quick = not listener.open or failed
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    first_set(wake, stop), RELISTEN_POLL_SECONDS if quick else POLL_SECONDS
                )
            if listener.open and not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), COALESCE_SECONDS)
    finally:
        await listener.close()


_unavailable = Throttled("projection_database_unavailable", every=10.0)
