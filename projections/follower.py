"""Async projections: follow the log past their checkpoint, on NOTIFY or a slow poll."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

import asyncpg
import structlog

from projections.registry import ASYNC
from service import eventstore

if TYPE_CHECKING:
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


async def catch_up_once(pool: asyncpg.Pool, projection: Projection, batch: int = BATCH) -> int:
    """Apply one batch past the checkpoint, committing writes and checkpoint together.

    Returns the number of events applied; 0 when up to date or another replica owns the row.
    """
    async with pool.acquire() as conn, conn.transaction():
        checkpoint = await conn.fetchval(LOCK_CHECKPOINT, projection.name)
        if checkpoint is None:
            return 0
        async for records in eventstore.read_all(conn, after=checkpoint, batch=batch):
            for record in records:
                await projection.apply(conn, record)
            last = records[-1].position
            assert last is not None
            await conn.execute(SAVE_CHECKPOINT, projection.name, last)
            return len(records)  # one batch per transaction keeps transactions short
        return 0


async def run_async_projections(pool: asyncpg.Pool, dsn: str, stop: asyncio.Event) -> None:
    """Follow the log for every async projection until stop is set.

    Wakes on NOTIFY events (sent by the global section) and polls slowly as a fallback.
    """
    wake = asyncio.Event()
    listener: asyncpg.Connection | None = None
    try:
        listener = await asyncpg.connect(dsn)
        await listener.add_listener(eventstore.NOTIFY_CHANNEL, lambda *_: wake.set())
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
