"""The log as the audit reads it: searches by Unleash's event filters (each walked through the
index of one filter, in position order), times and positions, and a stream's history."""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING, Final

import msgspec

from eventlog import mapper, reads
from eventlog.codec import RecordedEvent

if TYPE_CHECKING:
    from collections.abc import Sequence

    import asyncpg

    from eventlog.connections import Conn
    from eventlog.privacy import seal

LOG_COLUMNS = """
position, stream_type, stream_key, stream_version, event_id, type, schema_version,
data::text AS data, metadata::text AS metadata, recorded_at, encode(hash, 'hex') AS hash, kind,
project, actor_user_id
"""
# Events of some streams up to a version each, of some types, in log order.
STREAM_HISTORY = (
    f"SELECT {LOG_COLUMNS} "  # noqa: S608 - our column list
    "FROM unnest($1::text[], $2::text[], $3::integer[]) AS s(stream_type, stream_key, upto) "
    "JOIN events e USING (stream_type, stream_key) "
    "WHERE e.stream_version <= s.upto AND e.type = ANY($4::text[]) ORDER BY e.position"
)
# The import batch that brought a user in, before a position (UsersImported is rare: kind index).
IMPORT_OF_USER = (
    f"SELECT {LOG_COLUMNS} FROM events "  # noqa: S608 - our column list
    "WHERE kind = 'UsersImported' AND position < $2 "
    "AND data -> 'users' @> jsonb_build_array(jsonb_build_object('user_id', $1::bigint)) "
    "ORDER BY position DESC LIMIT 1"
)

# Every distinct author of the log, in id order, by a skip scan of its index of authors
# (events_actor_position): one index probe a distinct author, however long the log. Names as
# Unleash's: its two pseudo-users (an API token, the system), else the account's name,
# username or e-mail; an account deleted since is named by its id (its name went with it).
EVENT_CREATORS = """
WITH RECURSIVE authors(id) AS (
    SELECT min(actor_user_id) FROM events
    UNION ALL
    SELECT (SELECT min(e.actor_user_id) FROM events e WHERE e.actor_user_id > a.id)
    FROM authors a WHERE a.id IS NOT NULL
)
SELECT a.id,
       CASE a.id
           WHEN -42 THEN 'Unleash Admin Token'
           WHEN -1337 THEN 'Unleash System'
           ELSE coalesce(nullif(u.name, ''), nullif(u.username, ''), nullif(u.email, ''),
                         'Deleted user ' || a.id)
       END AS name
FROM authors a LEFT JOIN users u ON u.id = a.id
WHERE a.id IS NOT NULL
ORDER BY a.id
"""


# A search's plan depends on its values (a rare type or a common one): planned each time.
CUSTOM_PLANS = "SET LOCAL plan_cache_mode = force_custom_plan"


class LogEntry(msgspec.Struct, frozen=True, kw_only=True):
    """A stored event with what the log's search columns say of it."""

    recorded: RecordedEvent
    hash: str  # hex
    kind: str  # Unleash's event type, or the stored type where Unleash has none
    project: str | None
    actor_user_id: int | None


class LogFilter(msgspec.Struct, frozen=True, kw_only=True):
    """What a search of the log keeps; None: no condition. `since` and `until` are exclusive
    position bounds (a time range, made positions); a page's cursor is given apart."""

    kinds: list[str] | None = None
    projects: list[str] | None = None
    features: list[str] | None = None
    actors: list[int] | None = None
    with_project: bool = False  # only events that belong to a project
    since: int | None = None
    until: int | None = None


def _log_entry(row: asyncpg.Record, keys: seal.Opener) -> LogEntry:
    return LogEntry(
        recorded=mapper.record(row, keys),
        hash=row["hash"],
        kind=row["kind"],
        project=row["project"],
        actor_user_id=row["actor_user_id"],
    )


class _Where:
    """Conditions of a search as SQL text, their values as $n parameters (never in the text)."""

    def __init__(self) -> None:
        self.args: list[object] = []
        self.clauses: list[str] = []

    def param(self, value: object, cast: str = "") -> str:
        self.args.append(value)
        return f"${len(self.args)}{cast}"

    def equal(self, column: str, values: list[str] | list[int], cast: str) -> None:
        """One value: `=` (an index on the column then gives rows in position order)."""
        if len(values) == 1:
            self.clauses.append(f"{column} = {self.param(values[0])}")
        else:
            self.clauses.append(f"{column} = ANY({self.param(values, cast + '[]')})")

    def text(self) -> str:
        return " AND ".join(self.clauses) or "true"


def _filtered(found: LogFilter, where: _Where, leave: frozenset[str] = frozenset()) -> None:
    """The filter's conditions, but for the columns in `leave` (which a driver sets)."""
    if found.kinds is not None and "kind" not in leave:
        where.equal("kind", found.kinds, "::text")
    if found.projects is not None and "project" not in leave:
        where.equal("project", found.projects, "::text")
    if found.features is not None:
        where.clauses.append("stream_type = 'feature'")
        if "stream_key" not in leave:
            where.equal("stream_key", found.features, "::text")
    if found.actors is not None and "actor_user_id" not in leave:
        where.equal("actor_user_id", found.actors, "::bigint")
    if found.with_project and "project" not in leave:
        where.clauses.append("project IS NOT NULL")


def _bounds(found: LogFilter, where: _Where, after: int | None, before: int | None) -> None:
    lowest = [p for p in (found.since, after) if p is not None]
    highest = [p for p in (found.until, before) if p is not None]
    if lowest:
        where.clauses.append(f"position > {where.param(max(lowest))}")
    if highest:
        where.clauses.append(f"position < {where.param(min(highest))}")


# The equality filters whose index reads the log in position order, best first: a search walks
# the log through one of them (migration 0012's indexes; two of them cover common pairs).
_DRIVERS: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("features",), ("stream_key",)),
    (("projects", "kinds"), ("project", "kind")),
    (("actors", "kinds"), ("actor_user_id", "kind")),
    (("kinds",), ("kind",)),
    (("projects",), ("project",)),
    (("actors",), ("actor_user_id",)),
)
_CASTS = {"stream_key": "text", "project": "text", "kind": "text", "actor_user_id": "bigint"}


# A search walks its driver's index once per combination of values: past this many, a pair
# falls back to one of its filters (the other is checked on the way), and then to none.
MAX_WALKS: Final = 200


def _driver(found: LogFilter) -> tuple[tuple[str, ...], list[tuple[object, ...]]] | None:
    """The columns a search walks by, and every combination of their values."""
    for fields, columns in _DRIVERS:
        values = [getattr(found, f) for f in fields]
        if all(v is not None for v in values) and math.prod(map(len, values)) <= MAX_WALKS:
            return columns, list(itertools.product(*values))
    return None


async def search(  # noqa: PLR0913 - a page of a search has this many parts
    conn: Conn,
    found: LogFilter,
    *,
    limit: int,
    offset: int = 0,
    after: int | None = None,
    before: int | None = None,
) -> list[LogEntry]:
    """A page of the events the filter keeps: newest first, or, from a position `after`,
    oldest first (so that a follower pages forward without gaps).

    The log is walked in position order through the index of one filter (`_DRIVERS`), once per
    value it takes, each walk stopping after offset + limit matches; the others are checked
    on the way. A page costs about its own length, however large the log or the total."""
    await conn.execute(CUSTOM_PLANS)
    order = "ASC" if after is not None else "DESC"
    where = _Where()
    driver = _driver(found)
    _filtered(found, where, frozenset(driver[0]) if driver else frozenset())
    _bounds(found, where, after, before)
    if driver is None:
        sql = (
            f"SELECT {LOG_COLUMNS} FROM events WHERE {where.text()} "  # noqa: S608
            f"ORDER BY position {order} LIMIT {limit:d} OFFSET {offset:d}"
        )
        return await _log_entries(conn, await conn.fetch(sql, *where.args))
    columns, combinations = driver
    arrays = ", ".join(
        where.param([c[i] for c in combinations], f"::{_CASTS[column]}[]")
        for i, column in enumerate(columns)
    )
    matched = " AND ".join(f"e.{column} = d.{column}" for column in columns)
    # The walk selects positions only, which the driver's index holds: the planner then reads
    # that index alone (for a value it cannot see in the lateral join it would otherwise walk
    # the whole log by position); the page's rows are fetched by position afterwards.
    # Our fragments and column names only; values are $n parameters.
    sql = (
        f"SELECT {LOG_COLUMNS} FROM events WHERE position IN ("  # noqa: S608
        f"SELECT x.position FROM unnest({arrays}) AS d({', '.join(columns)}) "
        f"CROSS JOIN LATERAL (SELECT e.position FROM events e "
        f"WHERE {matched} AND {where.text()} "
        f"ORDER BY e.position {order} LIMIT {limit + offset:d}) x "
        f"ORDER BY x.position {order} LIMIT {limit:d} OFFSET {offset:d}) "
        f"ORDER BY position {order}"
    )
    return await _log_entries(conn, await conn.fetch(sql, *where.args))


def _like(text: str) -> str:
    """An ILIKE pattern of the text anywhere, its `%`, `_` and `\\` plain characters."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _latest_holding(found: LogFilter, where: _Where, text: str, latest: int) -> str:
    """The positions, newest first, of the events among the latest `latest` the filter keeps
    whose stored data holds the text in any case (sealed personal values never do)."""
    _filtered(found, where)
    _bounds(found, where, None, None)
    scanned = (
        f"SELECT position, data FROM events WHERE {where.text()} "  # noqa: S608 - our SQL
        f"ORDER BY position DESC LIMIT {latest:d}"
    )
    pattern = where.param(_like(text))
    return f"SELECT w.position FROM ({scanned}) w WHERE w.data::text ILIKE {pattern}"  # noqa: S608


async def search_text(  # noqa: PLR0913 - a page of a search has this many parts
    conn: Conn, found: LogFilter, text: str, *, latest: int, limit: int, offset: int
) -> tuple[list[LogEntry], int]:
    """A page, newest first, of the events among the latest `latest` the filter keeps whose
    data holds the text, and how many do: one bounded scan of the log, never all of it."""
    await conn.execute(CUSTOM_PLANS)
    where = _Where()
    holding = _latest_holding(found, where, text, latest)
    sql = (
        f"SELECT {LOG_COLUMNS} FROM events WHERE position IN ("  # noqa: S608 - our SQL
        f"SELECT position FROM ({holding}) h ORDER BY position DESC "
        f"LIMIT {limit:d} OFFSET {offset:d}) ORDER BY position DESC"
    )
    page = await _log_entries(conn, await conn.fetch(sql, *where.args))
    counted = _Where()
    total = f"SELECT count(*) FROM ({_latest_holding(found, counted, text, latest)}) c"  # noqa: S608
    return page, int(await conn.fetchval(total, *counted.args))


async def _log_entries(conn: Conn, rows: Sequence[asyncpg.Record]) -> list[LogEntry]:
    keys = await mapper.keys_for(conn, rows)
    return [_log_entry(row, keys) for row in rows]


async def count(conn: Conn, found: LogFilter) -> int:
    """How many events the filter keeps (positions are dense: without conditions on the
    events, as many as the positions in range)."""
    where = _Where()
    _filtered(found, where)
    if not where.clauses:
        last = await reads.head(conn)
        low = max(found.since or 0, 0)
        high = min(last, (found.until - 1) if found.until is not None else last)
        return max(0, high - low)
    await conn.execute(CUSTOM_PLANS)
    _bounds(found, where, None, None)
    sql = f"SELECT count(*) FROM events WHERE {where.text()}"  # noqa: S608
    return int(await conn.fetchval(sql, *where.args))


async def stream_history(
    conn: Conn, upto: dict[tuple[str, str], int], types: Sequence[str]
) -> list[LogEntry]:
    """The events of these types in these streams, each up to its stream version, in order."""
    if not upto:
        return []
    streams = list(upto)
    rows = await conn.fetch(
        STREAM_HISTORY,
        [s[0] for s in streams],
        [s[1] for s in streams],
        [upto[s] for s in streams],
        list(types),
    )
    return await _log_entries(conn, rows)


AT_POSITIONS = f"SELECT {LOG_COLUMNS} FROM events WHERE position = ANY($1::bigint[])"  # noqa: S608


async def at_positions(conn: Conn, positions: Sequence[int]) -> list[LogEntry]:
    """The events at these positions, in log order (those that exist)."""
    if not positions:
        return []
    rows = await conn.fetch(AT_POSITIONS + " ORDER BY position", sorted(set(positions)))
    return await _log_entries(conn, rows)


async def creators(conn: Conn) -> list[asyncpg.Record]:
    """Every author of the log (id, name), in id order."""
    return list(await conn.fetch(EVENT_CREATORS))


async def import_of_user(conn: Conn, user_id: int, before: int) -> LogEntry | None:
    """The `import-users` batch that brought a user in, if one did before a position."""
    row = await conn.fetchrow(IMPORT_OF_USER, user_id, before)
    return None if row is None else (await _log_entries(conn, [row]))[0]
