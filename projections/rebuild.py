"""Rebuilding read models from the log (replay, verify, past states)."""

from __future__ import annotations

import contextlib
import gc
from typing import TYPE_CHECKING

from projections import writes
from projections.memory import MemoryTables
from projections.registry import ALL, reading
from service import eventstore

if TYPE_CHECKING:
    from collections.abc import Iterator

    from projections.writes import Table
    from service.connections import Conn

READ_BATCH = 5_000
# A rebuild follows a moving head this many times at most (writers faster than it).
FOLLOW_ROUNDS = 10


def names() -> list[str]:
    return [p.name for p in ALL]


def tables() -> list[str]:
    return [t.name for t in table_specs()]


def table_specs() -> list[Table]:
    return [t for p in ALL for t in p.tables]


async def create_scratch(conn: Conn, schema: str, *, indexes: bool = True) -> None:
    """Empty copies of every read-model table: same columns and defaults, and with `indexes`
    its keys and indexes too (without, a bulk load is faster; `add_keys` adds the keys)."""
    like = "INCLUDING ALL" if indexes else "INCLUDING DEFAULTS INCLUDING GENERATED"
    statements = [f"CREATE SCHEMA {schema}"] + [
        f"CREATE TABLE {schema}.{table} (LIKE readmodel.{table} {like})" for table in tables()
    ]
    await conn.execute(";\n".join(statements))  # one round trip (a past state makes these often)


async def add_keys(conn: Conn, schema: str) -> None:
    """Primary keys on scratch tables made without indexes (ON CONFLICT needs them)."""
    for table in table_specs():
        await conn.execute(
            f"ALTER TABLE {schema}.{table.name} ADD PRIMARY KEY ({', '.join(table.key)})"
        )


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """The cyclic garbage collector off while a rebuild holds millions of rows: each of its
    full passes would walk all of them, for no cycle (the rows are plain dicts and tuples)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


async def rebuild(conn: Conn, upto: dict[str, int], after: int = 0) -> int:
    """Apply after < position <= upto[projection] to the tables on the current search_path;
    returns the events read.

    From the start (after = 0) the tables must be empty: the rows are built in memory and
    copied in at the end. Past a position, the writes run as SQL on the rows already there.
    """
    limit = max(upto.values(), default=0)
    if after == 0:
        memory = MemoryTables(table_specs())
        count = await _in_memory(conn, memory, upto, 0, limit)
        await memory.copy_into(conn)
        return count
    count = 0
    async for records in eventstore.read_all(conn, after=after, upto=limit, batch=READ_BATCH):
        await writes.execute(
            conn,
            [
                w
                for record in records
                for projection in reading(type(record.event))
                if record.position is not None and record.position <= upto[projection.name]
                for w in projection.writes(record)
            ],
        )
        count += len(records)
    return count


async def in_memory(
    conn: Conn, position: int, memory: MemoryTables | None = None, after: int = 0
) -> MemoryTables:
    """Every read model as of a position, in memory (none copied anywhere); or, given the
    tables as of `after`, brought forward from there."""
    memory = MemoryTables(table_specs()) if memory is None else memory
    await _in_memory(conn, memory, dict.fromkeys(names(), position), after, position)
    return memory


async def rebuild_to_head(conn: Conn, backlog: int) -> tuple[int, int]:
    """Rebuild every projection from the start into the empty tables on the search path, up
    to a head that moves while it runs: it follows the log in memory until fewer than
    `backlog` events are left to read, then copies. Returns (events read, position reached)."""
    memory = MemoryTables(table_specs())
    done = count = 0
    for _ in range(FOLLOW_ROUNDS):
        head = await eventstore.head(conn)
        if done and head - done <= backlog:
            break
        count += await _in_memory(conn, memory, dict.fromkeys(names(), head), done, head)
        done = head
    await memory.copy_into(conn)
    return count, done


async def _in_memory(
    conn: Conn, memory: MemoryTables, upto: dict[str, int], after: int, limit: int
) -> int:
    count = 0
    with _no_gc():
        async for records in eventstore.read_all(
            conn, after=after, upto=limit, batch=READ_BATCH, prefetch=True
        ):
            for record in records:
                position = record.position
                assert position is not None
                for projection in reading(type(record.event)):
                    if position <= upto[projection.name]:
                        memory.apply(projection.writes(record))
            count += len(records)
    return count
