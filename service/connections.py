"""Connections: the pool the service answers from, and single connections for commands."""

from __future__ import annotations

import asyncpg
from asyncpg.pool import PoolConnectionProxy

# A plain connection or one borrowed from the pool: the code paths accept both.
Conn = asyncpg.Connection | PoolConnectionProxy

SEARCH_PATH = "readmodel, public"


async def _keep_session(_conn: asyncpg.Connection) -> None:
    """Pool connections carry no session state to undo: code that takes advisory locks, LISTENs
    or SETs for the session does so on a connection of its own, and pooled work stays inside
    transactions (which asyncpg still rolls back if one is left open). Skipping asyncpg's
    default reset query saves a round trip on every release (docs/benchmarks.md)."""


async def create_pool(dsn: str, size: int) -> asyncpg.Pool:
    pool = await asyncpg.create_pool(
        dsn,
        min_size=min(2, size),
        max_size=size,
        server_settings={"search_path": SEARCH_PATH, "application_name": "flagstore"},
        reset=_keep_session,
    )
    assert pool is not None
    return pool


async def connect(dsn: str) -> asyncpg.Connection:
    return await asyncpg.connect(dsn, server_settings={"search_path": SEARCH_PATH})
