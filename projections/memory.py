"""Read-model writes applied to rows in memory, then copied into empty tables in bulk.

A rebuild from the start (replay, verify, a past state) has no rows to read back, so it needs
no round trip per event: every write lands in a dict keyed by the table's primary key, and each
table goes to PostgreSQL in one binary COPY at the end. The semantics are those of the SQL in
`projections.writes` (ON CONFLICT on the primary key, equality matches, greatest() ignoring
NULL); `verify` compares the two.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

from projections.writes import Count, Delete, Greatest, Insert, Table, Update

if TYPE_CHECKING:
    from collections.abc import Iterable

    from eventlog.connections import Conn
    from projections.writes import Write

Key = Any  # a one-column key's value, or the tuple of a wider key's values
Row = dict[str, Any]

# The stored columns of some tables (on the search path, or qualified) and their defaults, as
# SQL text; `table_number` is the table's index in the array, from 0.
COLUMNS = """
SELECT t.number - 1 AS table_number, a.attname AS name,
       pg_get_expr(d.adbin, d.adrelid) AS default_sql
FROM unnest($1::text[]) WITH ORDINALITY AS t(name, number)
JOIN pg_attribute a ON a.attrelid = to_regclass(t.name)
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
ORDER BY t.number, a.attnum
"""


class MemoryTables:
    """Rows of every table by primary key, with secondary indexes built on first use."""

    def __init__(self, tables: Iterable[Table]) -> None:
        self.tables = {t.name: t for t in tables}
        self.rows: dict[str, dict[Key, Row]] = {name: {} for name in self.tables}
        # A row's key: its value for a one-column key, else the tuple of values.
        self._key = {t.name: operator.itemgetter(*t.key) for t in self.tables.values()}
        # (table, columns) -> column values -> keys of the rows holding them
        self._indexes: dict[str, dict[tuple[str, ...], dict[Key, dict[Key, None]]]] = {
            name: {} for name in self.tables
        }

    def apply(self, writes: Iterable[Write]) -> None:
        for write in writes:  # `type() is` tests: a rebuild applies millions of writes
            if type(write) is Insert:
                self._insert(*write)
            elif type(write) is Count:
                self._count(*write)
            elif type(write) is Update:
                for key in self._find(write.table, write.where):
                    self._set(write.table.name, key, write.values)
            elif type(write) is Delete:
                for key in self._find(write.table, write.where):
                    self._remove(write.table.name, key)

    def _insert(self, table: Table, values: Row, update: tuple[str, ...]) -> None:
        key = self._key[table.name](values)
        rows = self.rows[table.name]
        if key not in rows:
            rows[key] = dict(values)
            self._index(table.name, key, rows[key])
        elif update:
            self._set(table.name, key, {c: values[c] for c in update})

    def _count(self, table: Table, values: Row, counter: str, guard: str) -> None:
        key = self._key[table.name](values)
        row = self.rows[table.name].get(key)
        if row is None:
            # Indexed like any new row: an Update that picks rows by other columns finds it.
            self.rows[table.name][key] = {**values, counter: 1}
            self._index(table.name, key, self.rows[table.name][key])
        elif row[guard] < values[guard]:
            self._set(table.name, key, {**values, counter: row[counter] + 1})

    def _set(self, name: str, key: Key, values: Row) -> None:
        row = self.rows[name][key]
        indexed = any(c in values for columns in self._indexes[name] for c in columns)
        if indexed:
            self._unindex(name, key, row)
        for column, value in values.items():
            row[column] = (
                _greatest(row.get(column), value) if isinstance(value, Greatest) else value
            )
        if indexed:
            self._index(name, key, row)

    def _remove(self, name: str, key: Key) -> None:
        self._unindex(name, key, self.rows[name].pop(key))

    def _find(self, table: Table, where: Row) -> list[Key]:
        rows = self.rows[table.name]
        if all(c in where for c in table.key):
            key = self._key[table.name](where)
            row = rows.get(key)
            matches = row is not None and all(row.get(c) == v for c, v in where.items())
            return [key] if matches else []
        columns = tuple(sorted(where))
        index = self._indexes[table.name].get(columns)
        if index is None:
            index = self._indexes[table.name][columns] = {}
            for key, row in rows.items():
                index.setdefault(tuple(row.get(c) for c in columns), {})[key] = None
        return list(index.get(tuple(where[c] for c in columns), {}))

    def _index(self, name: str, key: Key, row: Row) -> None:
        for columns, index in self._indexes[name].items():
            index.setdefault(tuple(row.get(c) for c in columns), {})[key] = None

    def _unindex(self, name: str, key: Key, row: Row) -> None:
        for columns, index in self._indexes[name].items():
            holders = index.get(tuple(row.get(c) for c in columns))
            if holders is not None:
                holders.pop(key, None)

    async def copy_into(self, conn: Conn, schema: str | None = None) -> None:
        """COPY every table into the empty table of that name (in `schema`, else the first
        on the search path), columns the writes never set taking the table's defaults."""
        filled = {name: rows for name, rows in self.rows.items() if rows}
        found = await layouts(conn, [f"{schema}.{n}" if schema else n for n in filled])
        for (name, rows), layout in zip(filled.items(), found, strict=True):
            names = [column for column, _ in layout]
            values = [default for _, default in layout]
            records = [tuple(map(row.get, names, values)) for row in rows.values()]
            await conn.copy_records_to_table(
                name, records=records, columns=names, schema_name=schema
            )


async def layouts(conn: Conn, tables: list[str]) -> list[list[tuple[str, Any]]]:
    """The stored columns of each table (on the search path, or qualified), in order, with
    their default values: one catalog query and one evaluation of the defaults for all."""
    if not tables:
        return []
    columns = await conn.fetch(COLUMNS, tables)
    defaults = await _defaults(conn, [c["default_sql"] for c in columns])
    found: list[list[tuple[str, Any]]] = [[] for _ in tables]
    for column, default in zip(columns, defaults, strict=True):
        found[column["table_number"]].append((column["name"], default))
    return found


def _greatest(old: Any, new: Greatest) -> Any:
    """PostgreSQL's greatest(): NULL arguments are ignored."""
    if old is None or new.value is None:
        return new.value if old is None else old
    return max(old, new.value)


async def _defaults(conn: Conn, expressions: list[str | None]) -> list[Any]:
    """Evaluate the columns' DEFAULT expressions once (constants in our migrations)."""
    listed = [e or "NULL" for e in expressions]
    row = await conn.fetchrow(f"SELECT {', '.join(listed)}")
    assert row is not None
    return list(row.values())


class TrackedTables(MemoryTables):
    """Memory tables that, once `track` is called, remember every row as it was before its
    first change since then (None: the row did not exist): what a diff compares."""

    def __init__(self, tables: Iterable[Table]) -> None:
        super().__init__(tables)
        self.before: dict[tuple[str, Key], Row | None] | None = None

    def track(self) -> None:
        self.before = {}

    def _remember(self, name: str, key: Key) -> None:
        if self.before is not None and (name, key) not in self.before:
            row = self.rows[name].get(key)
            self.before[(name, key)] = None if row is None else dict(row)

    def _insert(self, table: Table, values: Row, update: tuple[str, ...]) -> None:
        self._remember(table.name, self._key[table.name](values))
        super()._insert(table, values, update)

    def _count(self, table: Table, values: Row, counter: str, guard: str) -> None:
        self._remember(table.name, self._key[table.name](values))
        super()._count(table, values, counter, guard)

    def _set(self, name: str, key: Key, values: Row) -> None:
        self._remember(name, key)
        super()._set(name, key, values)

    def _remove(self, name: str, key: Key) -> None:
        self._remember(name, key)
        super()._remove(name, key)
