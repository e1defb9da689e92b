"""Retention of what SDKs report: hourly counts older than CLIENT_METRICS_RETENTION_DAYS, and
SDK instances not heard from for as long, deleted by a job on every replica (rows are taken
with SKIP LOCKED in batches, so replicas share the work and no statement runs long). Unleash
keeps its hourly metrics 48 hours and its instances two days."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Final

import structlog

if TYPE_CHECKING:
    import asyncpg

log = structlog.get_logger("telemetry")

INTERVAL: Final = 3600.0  # seconds between two runs
BATCH: Final = 10_000  # rows a statement deletes
# $1: days kept. Each deletes one batch of what is older.
DELETE_OLD_COUNTS = """
DELETE FROM telemetry.client_metrics_hourly WHERE ctid = ANY(ARRAY(
    SELECT ctid FROM telemetry.client_metrics_hourly
    WHERE hour < now() - make_interval(days => $1) LIMIT $2 FOR UPDATE SKIP LOCKED))
"""
DELETE_OLD_INSTANCES = """
DELETE FROM telemetry.client_instances WHERE ctid = ANY(ARRAY(
    SELECT ctid FROM telemetry.client_instances
    WHERE last_seen < now() - make_interval(days => $1) LIMIT $2 FOR UPDATE SKIP LOCKED))
"""


async def delete_expired(pool: asyncpg.Pool, days: int, batch: int = BATCH) -> int:
    """Delete what is older than `days`, a batch a statement; the rows deleted."""
    deleted = 0
    for statement in (DELETE_OLD_COUNTS, DELETE_OLD_INSTANCES):
        while True:
            async with pool.acquire() as conn:
                status = await conn.execute(statement, days, batch)
            count = int(status.rpartition(" ")[2])
            deleted += count
            if count < batch:
                break
    return deleted


async def run(pool: asyncpg.Pool, stop: asyncio.Event, days: int) -> None:
    """Delete what has expired at start, then every INTERVAL seconds until stopped."""
    while not stop.is_set():
        try:
            if deleted := await delete_expired(pool, days):
                log.info("telemetry_expired", rows=deleted, days=days)
        except Exception:
            log.exception("telemetry_retention_failed")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), INTERVAL)
