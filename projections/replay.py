"""`replay`: rebuild every read model from the log, aside, then swap it in."""

from __future__ import annotations

import asyncio
import random
from typing import TYPE_CHECKING

import asyncpg

from projections.follower import SAVE_CHECKPOINT
from projections.rebuild import create_scratch, names, rebuild, tables
from projections.registry import ASYNC
from service import eventstore

if TYPE_CHECKING:
    from service.connections import Conn

REPLAY_LOCK = 0x666C616A  # one replay at a time
REPLAY_SCHEMA = "replay_scratch"
# The swap waits at most this long for each lock, far below PostgreSQL's deadlock check (1 s):
# writers take read-model tables in their own order, so the swap must be the one that yields.
SWAP_LOCK_TIMEOUT = "100ms"
SWAP_ATTEMPTS = 100  # about 15 s of writers holding what the swap needs, then give up


class ReplayBusy(Exception):
    """The swap could not take its locks: writers held them every time it tried."""


# Columns a copy writes: generated ones (users.search_*) are computed by PostgreSQL.
STORED_COLUMNS = """
SELECT array_agg(quote_ident(a.attname) ORDER BY a.attnum) FROM pg_attribute a
WHERE a.attrelid = ('readmodel.' || quote_ident($1))::regclass
  AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
"""


async def replay(conn: Conn) -> int:
    """Rebuild every read model from the log; returns the events applied.

    The long part (every event through the handlers) runs into scratch tables without locks;
    the swap (`_swap`) then takes the locks and copies the tables in.
    """
    await conn.execute("SELECT pg_advisory_lock($1)", REPLAY_LOCK)
    try:
        await conn.execute(f"DROP SCHEMA IF EXISTS {REPLAY_SCHEMA} CASCADE")
        async with conn.transaction():
            await create_scratch(conn, REPLAY_SCHEMA)
        first = await eventstore.head(conn)
        async with conn.transaction():
            await conn.execute(f"SET LOCAL search_path = {REPLAY_SCHEMA}, public")
            count = await rebuild(conn, dict.fromkeys(names(), first))
        count += await _swap(conn, first)
        return count
    finally:
        await conn.execute(f"DROP SCHEMA IF EXISTS {REPLAY_SCHEMA} CASCADE")
        await conn.execute("SELECT pg_advisory_unlock($1)", REPLAY_LOCK)


async def _swap(conn: Conn, first: int) -> int:
    """Take the locks writers and runners take (checkpoint rows, every read-model table, the
    log head), apply what arrived since `first`, copy the tables in. A lock not granted at once
    rolls the swap back and it tries again a moment later, so no writer ever deadlocks with it.
    """
    for _ in range(SWAP_ATTEMPTS):
        try:
            async with conn.transaction():
                await conn.execute(f"SET LOCAL lock_timeout = '{SWAP_LOCK_TIMEOUT}'")
                await conn.execute(
                    "SELECT name FROM projection_checkpoints ORDER BY name FOR UPDATE"
                )
                await conn.execute(f"LOCK TABLE {', '.join(tables())} IN ACCESS EXCLUSIVE MODE")
                last = await eventstore.lock_head(conn)
                await conn.execute("SET LOCAL lock_timeout = 0")
                await conn.execute(f"SET LOCAL search_path = {REPLAY_SCHEMA}, public")
                count = await rebuild(conn, dict.fromkeys(names(), last), after=first)
                await conn.execute("SET LOCAL search_path = readmodel, public")
                for table in tables():
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
        except asyncpg.LockNotAvailableError:
            await asyncio.sleep(random.uniform(0.05, 0.25))  # noqa: S311 - not for secrets
    raise ReplayBusy(
        f"replay could not lock the read models in {SWAP_ATTEMPTS} tries; writers held them"
    )
