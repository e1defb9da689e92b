"""Read-model writes as data, and the SQL that carries them out.

A projection maps one recorded event to a list of writes (pure, no I/O). Two interpreters run
them: `execute` below turns them into SQL on the tables of the current search_path (the write
transaction, the async follower, the short catch-up of a replay), and `projections.memory`
applies them to rows in memory for a rebuild from the start, which it then copies in bulk.
Both follow PostgreSQL's semantics for these few shapes, and `verify` compares their results.
"""

from __future__ import annotations

import functools
import itertools
import re
from typing import TYPE_CHECKING, Any, Final, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Iterable

    from eventlog.connections import Conn


class Table(NamedTuple):
    """A read-model table: its unqualified name and primary key columns; `keyed_only` when its
    key is its one unique constraint (tests/eventlog/test_projections.py checks it against the
    schema), so that writes to different rows of it can run in either order (`execute`)."""

    name: str
    key: tuple[str, ...]
    keyed_only: bool = False


class Greatest(NamedTuple):
    """As an update value: the larger of the column and this value; NULL loses (greatest())."""

    value: Any


class Insert(NamedTuple):
    """Insert a row; when its key is taken, overwrite the `update` columns (none: keep it)."""

    table: Table
    values: dict[str, Any]
    update: tuple[str, ...] = ()


class Update(NamedTuple):
    """Set columns of the rows whose columns equal `where` (never NULL)."""

    table: Table
    where: dict[str, Any]
    values: dict[str, Any]


class Delete(NamedTuple):
    """Delete the rows whose columns equal `where` (never NULL)."""

    table: Table
    where: dict[str, Any]


class Count(NamedTuple):
    """A counter row: insert it with `counter` = 1, or add 1 and overwrite the other columns,
    but only for a `guard` value above the row's (so the same event never counts twice)."""

    table: Table
    values: dict[str, Any]
    counter: str
    guard: str


Write = Insert | Update | Delete | Count
# (Named tuples: a rebuild makes millions of these, and a tuple is the cheapest to make.)


def _columns(names: Iterable[str]) -> str:
    return ", ".join(names)


@functools.cache
def _insert_sql(table: Table, columns: tuple[str, ...], update: tuple[str, ...]) -> str:
    params = ", ".join(f"${i}" for i in range(1, len(columns) + 1))
    conflict = (
        "DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in update)
        if update
        else "DO NOTHING"
    )
    # Names are the projections' constants; values go as $n parameters.
    return (
        f"INSERT INTO {table.name} ({_columns(columns)}) VALUES ({params}) "  # noqa: S608
        f"ON CONFLICT ({_columns(table.key)}) {conflict}"
    )


@functools.cache
def _update_sql(table: Table, columns: tuple[tuple[str, bool], ...], where: tuple[str, ...]) -> str:
    sets = ", ".join(
        f"{c} = greatest({c}, ${i})" if greatest else f"{c} = ${i}"
        for i, (c, greatest) in enumerate(columns, start=1)
    )
    return f"UPDATE {table.name} SET {sets} WHERE {_where(where, len(columns))}"  # noqa: S608


@functools.cache
def _delete_sql(table: Table, where: tuple[str, ...]) -> str:
    return f"DELETE FROM {table.name} WHERE {_where(where, 0)}"  # noqa: S608 - our names


@functools.cache
def _delete_any_sql(table: Table, column: str) -> str:
    """Deletes of rows by one column's values, as one statement: $1 the values (an array of
    the column's type, as PostgreSQL infers it); deletes commute, so their order is moot."""
    return f"DELETE FROM {table.name} WHERE {column} = ANY($1)"  # noqa: S608 - our names


@functools.cache
def _count_sql(table: Table, columns: tuple[str, ...], counter: str, guard: str) -> str:
    params = ", ".join(f"${i}" for i in range(1, len(columns) + 1))
    others = [c for c in columns if c not in table.key]
    sets = ", ".join(
        [f"{counter} = {table.name}.{counter} + 1"] + [f"{c} = excluded.{c}" for c in others]
    )
    return (
        f"INSERT INTO {table.name} ({_columns(columns)}, {counter}) VALUES ({params}, 1) "  # noqa: S608
        f"ON CONFLICT ({_columns(table.key)}) DO UPDATE SET {sets} "
        f"WHERE {table.name}.{guard} < excluded.{guard}"
    )


def _where(columns: tuple[str, ...], offset: int) -> str:
    return " AND ".join(f"{c} = ${offset + i}" for i, c in enumerate(columns, start=1))


def render(write: Write) -> tuple[str, tuple[Any, ...]]:
    """The statement and its arguments; one statement text per shape, so asyncpg prepares
    each shape once per connection."""
    match write:
        case Insert(table, values, update):
            return _insert_sql(table, tuple(values), update), tuple(values.values())
        case Update(table, where, values):
            shape = tuple((c, isinstance(v, Greatest)) for c, v in values.items())
            args = [v.value if isinstance(v, Greatest) else v for v in values.values()]
            return _update_sql(table, shape, tuple(where)), (*args, *where.values())
        case Delete(table, where):
            return _delete_sql(table, tuple(where)), tuple(where.values())
        case Count(table, values, counter, guard):
            return _count_sql(table, tuple(values), counter, guard), tuple(values.values())
    raise AssertionError(write)  # pragma: no cover - the union is closed


async def execute(conn: Conn, writes: Iterable[Write]) -> None:
    """Run writes in order, in as few round trips as their shapes allow (`statements`)."""
    for sql, rows in statements(writes):
        if len(rows) > 1:
            await conn.executemany(sql, rows)
        else:
            await conn.execute(sql, *rows[0])


def statements(writes: Iterable[Write]) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """What `execute` sends, in order: each statement with its rows (several: one pipelined
    executemany). A write joins an earlier run of its shape when every write after that run
    commutes with it (`_Run.commutes`); a run's counts of one row go as one (`_counted`), and
    a run's deletes by one column as one (`_delete_any_sql`); single writes next to each
    other, each on another table, go together as one statement (`_together`). An async
    projection's batch of events is then a few statements, not one or two per event, and a
    batch of deleted accounts one."""
    runs: list[tuple[str, str, list[tuple[Any, ...]]]] = []  # (statement, table, rows)
    for run in _runs(writes):
        first = run.writes[0]
        if type(first) is Count:
            sql, rows = _counted(run.writes)
        elif type(first) is Delete and len(run.rows) > 1 and len(first.where) == 1:
            sql, rows = _delete_any_sql(first.table, *first.where), [([r[0] for r in run.rows],)]
        else:
            sql, rows = run.sql, run.rows
        runs.append((sql, first.table.name, rows))
    out: list[tuple[str, list[tuple[Any, ...]]]] = []
    single: list[tuple[str, tuple[Any, ...]]] = []
    tables: set[str] = set()
    for sql, table, rows in runs:
        if len(rows) > 1 or table in tables:
            out.extend(_joined(single))
            single, tables = [], set()
        if len(rows) > 1:
            out.append((sql, rows))
        else:
            single.append((sql, rows[0]))
            tables.add(table)
    out.extend(_joined(single))
    return out


def _selects(write: Write) -> dict[str, Any]:
    """The columns whose values pick the rows a write may touch."""
    if type(write) is Insert or type(write) is Count:
        return {c: write.values[c] for c in write.table.key}
    assert type(write) is Update or type(write) is Delete
    return write.where


def _changes(write: Write) -> frozenset[str]:
    """The columns a write may change in a row that is there already (a Delete: none that
    another write could then find the row by; the row is gone)."""
    match write:
        case Insert(_, _, update):
            return frozenset(update)
        case Count(table, values, counter, _):  # its key picks the row: never changed
            return frozenset(values).difference(table.key) | {counter}
        case Update(_, _, values):
            return frozenset(values)
    return frozenset()


class _Run:
    """Writes of one statement shape (so of one table), and what tells whether another write
    can be moved past them: the columns every one of them picks its rows by, with the values
    they take, and the columns any of them changes."""

    def __init__(self, sql: str, write: Write, args: tuple[Any, ...]) -> None:
        self.sql = sql
        self.writes: list[Write] = []
        self.rows: list[tuple[Any, ...]] = []
        self.picked: dict[str, set[Any]] | None = None
        self.changed: set[str] = set()
        self.add(write, args)

    def add(self, write: Write, args: tuple[Any, ...]) -> None:
        self.writes.append(write)
        self.rows.append(args)
        self.changed |= _changes(write)
        selects = _selects(write)
        if self.picked is None:
            self.picked = {c: set() for c in selects}
        for column in list(self.picked):
            try:
                self.picked[column].add(selects[column])
            except (KeyError, TypeError):  # not picked by this one, or not hashable: unusable
                del self.picked[column]

    def commutes(self, write: Write) -> bool:
        """Whether `write` gives the same rows run before these writes as after them: on
        another table; or, on a table whose key is its one unique constraint, picking its rows
        by a column that each of these picks by, with a value none of them has, and that
        neither it nor these change (so their rows are apart, before and after)."""
        table = self.writes[0].table
        if write.table.name != table.name:
            return True
        if not table.keyed_only or self.picked is None:
            return False
        changed = self.changed | _changes(write)
        for column, value in _selects(write).items():
            values = self.picked.get(column)
            if values is None or column in changed or value is None:
                continue
            try:
                if value not in values:
                    return True
            except TypeError:
                continue
        return False


def _runs(writes: Iterable[Write]) -> list[_Run]:
    """The writes in runs of one shape, in an order that gives the same rows as theirs."""
    runs: list[_Run] = []
    for write in writes:
        sql, args = render(write)
        for run in reversed(runs):
            if run.sql == sql:
                run.add(write, args)
                break
            if not run.commutes(write):
                runs.append(_Run(sql, write, args))
                break
        else:
            runs.append(_Run(sql, write, args))
    return runs


def _counted(counts: list[Write]) -> tuple[str, list[tuple[Any, ...]]]:
    """A run of Counts as statements: as they are, or, when some count the same row (and
    its table's rows are apart by key), one statement a row that counts the guards above the
    row's: what the Counts one after another give while their guards rise."""
    first = counts[0]
    assert type(first) is Count
    table, columns, counter, guard = first.table, tuple(first.values), first.counter, first.guard
    by_key: dict[tuple[Any, ...], list[Count]] = {}
    rows: list[tuple[Any, ...]] = []
    for count in counts:
        assert type(count) is Count
        by_key.setdefault(tuple(count.values[c] for c in table.key), []).append(count)
        rows.append(tuple(count.values.values()))
    guards = {key: [c.values[guard] for c in group] for key, group in by_key.items()}
    if (
        len(by_key) == len(counts)
        or not table.keyed_only
        or not all(type(g) is int for gs in guards.values() for g in gs)
        or not all(a < b for gs in guards.values() for a, b in itertools.pairwise(gs))
    ):
        return _count_sql(table, columns, counter, guard), rows
    merged = [(*group[-1].values.values(), guards[key]) for key, group in by_key.items()]
    return _counts_sql(table, columns, counter, guard), merged


@functools.cache
def _counts_sql(table: Table, columns: tuple[str, ...], counter: str, guard: str) -> str:
    """Count's statement for several events of one row: $n + 1 their guards, rising."""
    params = ", ".join(f"${i}" for i in range(1, len(columns) + 1))
    guards = f"${len(columns) + 1}::bigint[]"
    others = [c for c in columns if c not in table.key]
    added = f"(SELECT count(*) FROM unnest({guards}) AS g(v) WHERE g.v > {table.name}.{guard})"  # noqa: S608
    sets = ", ".join(
        [f"{counter} = {table.name}.{counter} + {added}"] + [f"{c} = excluded.{c}" for c in others]
    )
    return (
        f"INSERT INTO {table.name} ({_columns(columns)}, {counter}) "  # noqa: S608 - our names
        f"VALUES ({params}, cardinality({guards})) "
        f"ON CONFLICT ({_columns(table.key)}) DO UPDATE SET {sets} "
        f"WHERE {table.name}.{guard} < excluded.{guard}"
    )


def _joined(single: list[tuple[str, tuple[Any, ...]]]) -> list[tuple[str, list[tuple[Any, ...]]]]:
    if len(single) <= 1:
        return [(sql, [args]) for sql, args in single]
    return [
        (_together(tuple(sql for sql, _ in single)), [tuple(a for _, args in single for a in args)])
    ]


_PARAMETER: Final = re.compile(r"\$(\d+)")


def _renumbered(sql: str, offset: int) -> str:
    return _PARAMETER.sub(lambda m: f"${int(m[1]) + offset}", sql)


@functools.cache
def _together(statements: tuple[str, ...]) -> str:
    """Writes on different tables as one statement: all but the last as data-modifying WITH
    parts, their parameters numbered on. PostgreSQL runs the parts on one snapshot; since no
    two touch the same table (and no read-model table has a trigger or a foreign key), that is
    what running them one after another does, in one round trip instead of several."""
    parts: list[str] = []
    offset = 0
    for sql in statements:
        parts.append(_renumbered(sql, offset))
        offset += max((int(n) for n in _PARAMETER.findall(sql)), default=0)
    *first, last = parts
    withs = ", ".join(f"w{i} AS ({sql})" for i, sql in enumerate(first))
    return f"WITH {withs} {last}"
