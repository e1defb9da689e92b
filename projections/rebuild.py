"""Rebuilding read models from the log into a schema of their own (replay and verify)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from projections.registry import ALL
from service import eventstore

if TYPE_CHECKING:
    from service.connections import Conn


def names() -> list[str]:
    return [p.name for p in ALL]


def tables() -> list[str]:
    return [t for p in ALL for t in p.tables]


async def create_scratch(conn: Conn, schema: str) -> None:
    """Empty copies of every read-model table (same columns, keys and indexes)."""
    await conn.execute(f"CREATE SCHEMA {schema}")
    for table in tables():
        await conn.execute(f"CREATE TABLE {schema}.{table} (LIKE readmodel.{table} INCLUDING ALL)")


async def rebuild(conn: Conn, upto: dict[str, int], after: int = 0) -> int:
    """Apply after < position <= upto[projection] to the tables on the current search_path."""
    count = 0
    limit = max(upto.values(), default=0)
    async for records in eventstore.read_all(conn, after=after, upto=limit):
        for record in records:
            assert record.position is not None
            for projection in ALL:
                if record.position <= upto[projection.name]:
                    await projection.apply(conn, record)
        count += len(records)
    return count
