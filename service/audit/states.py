"""Whole states of the read models at past instants, rebuilt in memory from the log: written
out table by table (`python -m service state`), or compared (`diff`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec

import eventlog
from projections.entities import PARTS, secret_columns
from projections.memory import MemoryTables, TrackedTables, layouts
from projections.rebuild import in_memory, table_specs
from projections.registry import INLINE
from service.audit.diff import EntityChange, Point, Reading, diff
from service.http.instants import parse_instant

if TYPE_CHECKING:
    from eventlog.connections import Conn

JSON_COLUMNS = """
SELECT c.relname AS table_name, a.attname AS column_name
FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
WHERE c.relnamespace = 'readmodel'::regnamespace AND c.relkind = 'r' AND a.attnum > 0
  AND NOT a.attisdropped AND a.atttypid IN ('jsonb'::regtype, 'json'::regtype)
"""


class Layout(NamedTuple):
    """The live read models' columns: each table's stored columns with their defaults (the
    value of a column no write set), and which hold JSON."""

    columns: dict[str, list[tuple[str, Any]]]
    json_columns: set[tuple[str, str]]


async def layout(conn: Conn) -> Layout:
    names = [t.name for t in table_specs()]
    found = await layouts(conn, [f"readmodel.{n}" for n in names])
    json_columns = {(r["table_name"], r["column_name"]) for r in await conn.fetch(JSON_COLUMNS)}
    return Layout(dict(zip(names, found, strict=True)), json_columns)


async def position(conn: Conn, instant: str | None, name: str) -> int:
    """The position of an instant as a command or route gives it (None: now)."""
    if instant is None:
        return await eventlog.head(conn)
    return await parse_instant(instant, name).position_in(conn)


async def point(conn: Conn, position: int) -> Point:
    return Point(
        position=position,
        recorded_at=await eventlog.time_of(conn, position) if position else None,
    )


async def state(conn: Conn, position: int) -> MemoryTables:
    """Every read model as it was once the event at `position` was applied."""
    return await in_memory(conn, position)


def rows(memory: MemoryTables, table: str, found: Layout) -> list[dict[str, Any]]:
    """A table's rows in key order, every stored column (defaults where no write set one),
    JSON columns as JSON, secret columns left out."""
    hidden = set(secret_columns(table))
    columns = [(c, d) for c, d in found.columns[table] if c not in hidden]
    decoder = msgspec.json.Decoder()
    out = []
    for _, row in sorted(memory.rows[table].items(), key=lambda item: _order(item[0])):
        record = {c: row.get(c, default) for c, default in columns}
        for column, value in record.items():
            if (table, column) in found.json_columns and isinstance(value, str):
                record[column] = decoder.decode(value)
        out.append(record)
    return out


def _order(key: Any) -> tuple[Any, ...]:
    """Keys of mixed kinds (a NULL in a key column) still sort: by type name, then value."""
    parts = key if isinstance(key, tuple) else (key,)
    return tuple((type(p).__name__, p) for p in parts)


async def changes(
    conn: Conn,
    start: int,
    end: int,
    *,
    only: tuple[str, str] | None = None,
    project: str | None = None,
) -> list[EntityChange]:
    """What differs between the states at two positions (start <= end), entity by entity:
    one rebuild up to `end` that remembers, past `start`, each row before its first change."""
    memory = TrackedTables(table_specs())  # the inline read models: what entities are made of
    await in_memory(conn, start, memory, among=INLINE)
    memory.track()
    await in_memory(conn, end, memory, after=start, among=INLINE)
    found = await layout(conn)
    defaults = {table: dict(columns) for table, columns in found.columns.items()}
    assert memory.before is not None
    reading = Reading.of(PARTS, table_specs(), defaults, found.json_columns)
    return diff(memory.before, memory.rows, reading, only=only, project=project)
