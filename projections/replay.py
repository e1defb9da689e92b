"""`replay`: rebuild every read model from the log, aside, then swap it in."""

from __future__ import annotations

from typing import TYPE_CHECKING

from projections.follower import SAVE_CHECKPOINT
from projections.rebuild import create_scratch, names, rebuild, tables
from projections.registry import ASYNC
from service import eventstore

if TYPE_CHECKING:
    from service.connections import Conn

REPLAY_LOCK = 0x666C616A  # one replay at a time
REPLAY_SCHEMA = "replay_scratch"
# Columns a copy writes: generated ones (users.search_*) are computed by PostgreSQL.
STORED_COLUMNS = """
SELECT array_agg(quote_ident(a.attname) ORDER BY a.attnum) FROM pg_attribute a
WHERE a.attrelid = ('readmodel.' || quote_ident($1))::regclass
  AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
"""


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
            await create_scratch(conn, REPLAY_SCHEMA)
        first = await eventstore.head(conn)
        async with conn.transaction():
            await conn.execute(f"SET LOCAL search_path = {REPLAY_SCHEMA}, public")
            count = await rebuild(conn, dict.fromkeys(names(), first))
        async with conn.transaction():
            await conn.execute("SELECT name FROM projection_checkpoints ORDER BY name FOR UPDATE")
            await conn.execute(f"LOCK TABLE {', '.join(tables())} IN ACCESS EXCLUSIVE MODE")
            last = await eventstore.lock_head(conn)
            await conn.execute(f"SET LOCAL search_path = {REPLAY_SCHEMA}, public")
            count += await rebuild(conn, dict.fromkeys(names(), last), after=first)
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
    finally:
        await conn.execute(f"DROP SCHEMA IF EXISTS {REPLAY_SCHEMA} CASCADE")
        await conn.execute("SELECT pg_advisory_unlock($1)", REPLAY_LOCK)
