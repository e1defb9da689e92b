"""Erasure: a person's data key destroyed and a `PersonalDataErased` event appended, in one
transaction. Right away with a deletion, or ERASURE_DELAY_DAYS later by a job that runs on
every replica (due persons are locked with SKIP LOCKED, and an erased key is never erased
twice, so replicas share the work and nothing is recorded twice). The same job compacts the
key table, so that a destroyed key's bytes leave its file."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Final

import asyncpg
import structlog

from eventlog.events.base import Metadata
from eventlog.events.privacy import PersonalDataErased
from eventlog.privacy import keys

if TYPE_CHECKING:
    from collections.abc import Collection

    from eventlog.connections import Conn
    from service.work import UnitOfWork, Work

log = structlog.get_logger("erasure")

JOB: Final = Metadata(actor_id="system", actor_name="erasure", actor_kind="system", source="system")
BATCH: Final = 500  # persons erased per transaction by the job


def batch_stream() -> tuple[str, str]:
    """Where the job's and `erase-user`'s events go (a deletion's go to its own stream)."""
    return ("erasure", str(uuid.uuid4()))


async def erase(  # noqa: PLR0913 - the keys and the event's envelope
    uow: UnitOfWork,
    persons: Collection[int],
    *,
    stream: tuple[str, str],
    metadata: Metadata,
    reason: str,
    now: datetime | None = None,
) -> list[keys.Erased]:
    """Destroy these persons' keys and record it, in the caller's transaction; those already
    erased are left out (nothing recorded twice)."""
    erased = await keys.destroy(uow.conn, persons, now or datetime.now(UTC))
    if erased:
        await uow.append(stream, _erased_events(erased, reason), metadata)
    return erased


async def on_deletion(
    conn: Conn, persons: Collection[int], *, delay_days: int, now: datetime
) -> list[PersonalDataErased]:
    """What a deletion does with the deleted persons' keys, before it appends: destroys them
    now (delay 0) and returns the `PersonalDataErased` events it appends after its own, in the
    same append (its record of them is then written as the placeholder: their keys are gone);
    or sets them to be destroyed when the delay has passed (nothing to append now).

    Before, so that the deletion's transaction enters the log's global section once, at its
    end: the head lock is held for one append and the COMMIT, not for a second append. (Give
    the events' persons to that append as `erased`: their keys need not be read again.)"""
    if delay_days == 0:
        return _erased_events(await keys.destroy(conn, persons, now), "deleted")
    await keys.schedule(conn, persons, now + timedelta(days=delay_days))
    return []


def _erased_events(erased: Collection[keys.Erased], reason: str) -> list[PersonalDataErased]:
    return [
        PersonalDataErased(person_id=e.person_id, reason=reason, had_key=e.had_key) for e in erased
    ]


async def erase_due(pool: asyncpg.Pool, work: Work) -> int:
    """Every erasure that is due, in batches; how many persons were erased."""
    total = 0
    while True:
        async with work.on(pool) as uow:
            now = datetime.now(UTC)
            due = await keys.due(uow.conn, now, BATCH)
            if due:
                erased = await erase(
                    uow, due, stream=batch_stream(), metadata=JOB, reason="delay-ended", now=now
                )
                total += len(erased)
        if len(due) < BATCH:
            return total


COMPACT_LOCK: Final = 0x70696B657973  # one replica at a time rewrites the key table


async def compact_keys(pool: asyncpg.Pool, *, force: bool = False) -> bool:
    """Rewrite the key table when it holds old row versions (destroyed keys' bytes), if no
    other replica is doing it and its lock comes at once; whether it was rewritten."""
    async with pool.acquire() as conn:
        if not await conn.fetchval("SELECT pg_try_advisory_lock($1)", COMPACT_LOCK):
            return False
        try:
            if not force and await keys.dead_rows(conn) == 0:
                return False
            try:
                await keys.compact(conn)
            except asyncpg.LockNotAvailableError:
                return False  # a long reader holds it: next time
            return True
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", COMPACT_LOCK)


async def run(
    pool: asyncpg.Pool,
    stop: asyncio.Event,
    interval: float,
    work: Work,
) -> None:
    """Erase what is due at start, then every `interval` seconds until stopped."""
    while not stop.is_set():
        try:
            if erased := await erase_due(pool, work):
                log.info("personal_data_erased", persons=erased)
            if await compact_keys(pool):
                log.info("personal_keys_compacted")
        except Exception:
            log.exception("erasure_failed")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval)
