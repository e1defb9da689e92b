"""Rebuilding read models from the log (replay, verify, past states)."""

from __future__ import annotations

import contextlib
import functools
import gc
from typing import TYPE_CHECKING

import eventlog
from eventlog import Reading
from projections import writes
from projections.memory import MemoryTables
from projections.registry import ALL, reading

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from eventlog.connections import Conn
    from eventlog.events.base import Event
    from projections.base import Projection, Writes
    from projections.registry import Group
    from projections.writes import Table

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
        f"CREATE UNLOGGED TABLE {schema}.{table} (LIKE readmodel.{table} {like})"
        for table in tables()
    ]
    await conn.execute(";\n".join(statements))  # one round trip (a past state makes these often)


async def add_keys(conn: Conn, schema: str, specs: Iterable[Table] | None = None) -> None:
    """Primary keys on scratch tables made without indexes (ON CONFLICT needs them), and
    their statistics (the swap compares them with the live tables)."""
    for table in table_specs() if specs is None else specs:
        await conn.execute(
            f"ALTER TABLE {schema}.{table.name} ADD PRIMARY KEY ({', '.join(table.key)})"
        )
        await conn.execute(f"ANALYZE {schema}.{table.name}")


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


@functools.cache
def reading_of(among: tuple[Projection, ...], shard: int = 0, shards: int = 1) -> Reading:
    """What a rebuild of these projections reads of the log: the types they handle (all when
    one handles every type), the event and the metadata only when one of them reads it; and
    only one shard of the streams, which the projections must allow (`by_stream`)."""
    # Without the event, its type is not read either: such a projection must handle them all.
    assert all(p.reads_event or p.handles is None for p in among)
    assert shards == 1 or all(p.by_stream for p in among)
    handled = [p.handles for p in among]
    types = (
        None
        if any(h is None for h in handled)
        else tuple(sorted({t.type_name() for h in handled if h is not None for t in h}))
    )
    some = [p.reads_event for p in among if isinstance(p.reads_event, frozenset)]
    return Reading(
        types=types,
        events=any(p.reads_event for p in among),
        event_types=(
            None
            if any(p.reads_event is True for p in among)
            else tuple(sorted({t.type_name() for s in some for t in s}))
        ),
        metadata=any(p.reads_metadata for p in among),
        shard=shard,
        shards=shards,
    )


async def rebuild(
    conn: Conn, upto: dict[str, int], after: int = 0, among: tuple[Projection, ...] = ALL
) -> int:
    """Apply after < position <= upto[projection] to the tables on the current search_path
    (of the projections `among`); returns the events read.

    From the start (after = 0) the tables must be empty: the rows are built in memory and
    copied in at the end. Past a position, the writes run as SQL on the rows already there.
    """
    limit = max((upto[p.name] for p in among), default=0)
    if after == 0:
        memory = MemoryTables([t for p in among for t in p.tables])
        count = await _in_memory(conn, memory, upto, 0, limit, among=among)
        await memory.copy_into(conn)
        return count
    count = 0
    async for records in eventlog.read_all(conn, after=after, upto=limit, batch=READ_BATCH):
        await writes.execute(
            conn,
            [
                w
                for record in records
                for projection in reading(type(record.event), among)
                if record.position is not None and record.position <= upto[projection.name]
                for w in projection.writes(record)
            ],
        )
        count += len(records)
    return count


async def rebuild_group(conn: Conn, group: Group, upto: int) -> int:
    """The tables of a group of projections on the search path, from the start up to a
    position, for its shard of the streams: built in memory and copied in (a sharded group
    adds its rows to those of the other shards). What one process of a parallel replay does
    (projections/worker.py); returns the events read."""
    among = group.projections
    memory = MemoryTables([t for p in among for t in p.tables])
    source = reading_of(among, group.shard, group.shards)
    upto_each = {p.name: upto for p in among}
    count = await _in_memory(conn, memory, upto_each, 0, upto, among=among, source=source)
    await memory.copy_into(conn)
    return count


async def in_memory(
    conn: Conn,
    position: int,
    memory: MemoryTables | None = None,
    after: int = 0,
    among: tuple[Projection, ...] = ALL,
) -> MemoryTables:
    """The read models of `among` as of a position, in memory (none copied anywhere); or,
    given the tables as of `after`, brought forward from there."""
    memory = MemoryTables([t for p in among for t in p.tables]) if memory is None else memory
    await _in_memory(conn, memory, {p.name: position for p in among}, after, position, among=among)
    return memory


async def rebuild_to_head(conn: Conn, backlog: int) -> tuple[int, int]:
    """Rebuild every projection from the start into the empty tables on the search path, up
    to a head that moves while it runs: it follows the log in memory until fewer than
    `backlog` events are left to read, then copies. Returns (events read, position reached)."""
    memory = MemoryTables(table_specs())
    done = count = 0
    for _ in range(FOLLOW_ROUNDS):
        head = await eventlog.head(conn)
        if done and head - done <= backlog:
            break
        count += await _in_memory(conn, memory, dict.fromkeys(names(), head), done, head, among=ALL)
        done = head
    await memory.copy_into(conn)
    return count, done


async def _in_memory(  # noqa: PLR0913 - a rebuild's parts
    conn: Conn,
    memory: MemoryTables,
    upto: dict[str, int],
    after: int,
    limit: int,
    *,
    among: tuple[Projection, ...],
    source: Reading | None = None,
) -> int:
    count = 0
    # Event type -> (writes, last position) of the projections reading it: looked up once
    # per type, not once per event (hashing every event's type is a real share of a large rebuild).
    targets: dict[type[Event], list[tuple[Writes, int]]] = {}
    apply = memory.apply
    with _no_gc():
        read = source or reading_of(among)
        async for records in eventlog.read_log(conn, after, limit, read, READ_BATCH):
            for record in records:
                kind = type(record.event)
                found = targets.get(kind)
                if found is None:
                    found = targets[kind] = [(p.writes, upto[p.name]) for p in reading(kind, among)]
                position = record.position
                assert position is not None
                for write, last in found:
                    if position <= last:
                        apply(write(record))
            count += len(records)
    return count
