"""Async projections: follow the log past their checkpoint, on NOTIFY or a slow poll."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING

import asyncpg
import structlog

from projections import writes
from projections.rebuild import reading_of
from projections.registry import ASYNC
from service import connections, eventstore
from service.logs import Throttled

if TYPE_CHECKING:
    from projections.base import Projection
    from service.connections import Conn

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
        records, upto = await eventstore.read_next(
            conn, checkpoint, reading_of((projection,)), batch
        )
        if upto <= checkpoint:
            return 0
        await writes.execute(conn, [w for r in records for w in projection.writes(r)])
        await conn.execute(SAVE_CHECKPOINT, projection.name, upto)
        return len(records)  # one batch per transaction keeps transactions short


async def projection_lags(conn: Conn) -> dict[str, int]:
    """Events each async projection is behind the log's head (for the metrics). The checkpoints
    are read before the head, which only grows: a lag is never below 0."""
    rows = await conn.fetch(CHECKPOINTS, [projection.name for projection in ASYNC])
    head = await eventstore.head(conn)
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


# While not listening, look at the log this often (and try to listen again, with backoff).
RELISTEN_POLL_SECONDS = 0.25
BACKOFF_FIRST_SECONDS = 0.25
BACKOFF_MAX_SECONDS = 5.0
_unavailable = Throttled("projection_database_unavailable", every=10.0)


class Listener:
    """The LISTEN connection: opened at start, and again, with backoff, whenever it is lost."""

    def __init__(self, dsn: str, wake: asyncio.Event) -> None:
        self.dsn = dsn
        self.wake = wake
        self.conn: asyncpg.Connection | None = None
        self.attempts = 0
        self.next_attempt = 0.0
        self.lost_at: float | None = time.monotonic()

    @property
    def open(self) -> bool:
        return self.conn is not None and not self.conn.is_closed()

    async def reopen(self) -> bool:
        """Try to listen again if the backoff allows; True when listening anew."""
        now = time.monotonic()
        if self.conn is not None:  # lost since the last look
            self.conn.terminate()
            self.conn = None
            self.lost_at = now
            log.warning("projection_listen_lost", retry_in=BACKOFF_FIRST_SECONDS)
        if now < self.next_attempt:
            return False
        self.attempts += 1
        try:
            conn = await asyncpg.connect(self.dsn, timeout=connections.CONNECT_TIMEOUT)
            await conn.add_listener(eventstore.NOTIFY_CHANNEL, self._notified)
        except Exception as exc:
            if not connections.is_unavailable(exc) and not isinstance(exc, asyncpg.PostgresError):
                raise
            delay = min(BACKOFF_MAX_SECONDS, BACKOFF_FIRST_SECONDS * 2 ** (self.attempts - 1))
            self.next_attempt = now + delay
            # Each attempt while the backoff grows, then one line a minute.
            if delay < BACKOFF_MAX_SECONDS or self.attempts % 12 == 0:
                log.warning(
                    "projection_listen_failed",
                    attempt=self.attempts,
                    retry_in=delay,
                    error=type(exc).__name__,
                )
            return False
        conn.add_termination_listener(self._lost)
        self.conn = conn
        log.info(
            "projection_listening",
            attempts=self.attempts,
            down_seconds=round(now - (self.lost_at or now), 3),
        )
        self.attempts = 0
        self.next_attempt = 0.0
        self.lost_at = None
        return True

    def _notified(self, *_args: object) -> None:
        self.wake.set()

    def _lost(self, _conn: object) -> None:
        self.wake.set()  # the loop notices the closed connection and listens again

    async def close(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.conn.close(), 1.0)
            self.conn = None


async def first_set(*events: asyncio.Event) -> None:
    """Returns once any of these events is set."""
    waiters = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
