"""LISTEN/NOTIFY on the log: every append notifies NOTIFY_CHANNEL with its last position, and a
`Listener` wakes its follower then (the async projections, the client API's feed), keeping its
connection open again with backoff whenever it is lost."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Final

import asyncpg
import structlog

from eventlog import connections

log = structlog.get_logger()

NOTIFY_CHANNEL: Final = "events"  # every append notifies it with the last position

# While not listening, look at the log this often (and try to listen again, with backoff).
RELISTEN_POLL_SECONDS = 0.25
BACKOFF_FIRST_SECONDS = 0.25
BACKOFF_MAX_SECONDS = 5.0


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
            await conn.add_listener(NOTIFY_CHANNEL, self._notified)
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
