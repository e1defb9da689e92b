"""Reading the log: its head, one stream, everything past a position (in batches, or through
one cursor for a rebuild), and which streams changed."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from typing import TYPE_CHECKING, NamedTuple

import asyncpg

from eventlog import mapper
from eventlog.privacy import seal

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence
    from datetime import datetime

    from eventlog.codec import RecordedEvent
    from eventlog.connections import Conn
    from eventlog.mapper import Reading

READ_ALL = """
SELECT position, stream_type, stream_key, stream_version, event_id, type, schema_version,
       data::text AS data, metadata::text AS metadata, recorded_at
FROM events WHERE position > $1 AND position <= $2 ORDER BY position LIMIT $3
"""
READ_STREAM = """
SELECT position, stream_type, stream_key, stream_version, event_id, type, schema_version,
       data::text AS data, metadata::text AS metadata, recorded_at
FROM events WHERE stream_type = $1 AND stream_key = $2 ORDER BY stream_version
"""
HEAD = "SELECT position FROM log_head WHERE id = 1"
LOCK_HEAD = "SELECT position FROM log_head WHERE id = 1 FOR UPDATE"
STREAM_VERSION = "SELECT version FROM streams WHERE stream_type = $1 AND stream_key = $2"
STREAM_VERSIONS = """
SELECT stream_key, version FROM streams WHERE stream_type = $1 AND stream_key = ANY($2::text[])
"""
# Over the events table's unique (stream_type, stream_key, stream_version) index.
STREAM_ORIGINS = """
SELECT stream_key,
       max(stream_version) FILTER (WHERE metadata->>'origin' = $2) AS marked_at,
       max(stream_version) FILTER (
           WHERE metadata->>'origin' IS DISTINCT FROM $2
             AND ($4::text[] IS NULL OR type = ANY($4::text[]))
       ) AS other_at,
       bool_and(metadata->>'source' = 'bootstrap') AS bootstrap_only,
       min(recorded_at) FILTER (WHERE metadata->>'origin' = $2) AS first_marked
FROM events
WHERE stream_type = $1 AND ($3::text[] IS NULL OR stream_key = ANY($3::text[]))
GROUP BY stream_key
"""
LAST_POSITION = """
SELECT position FROM events WHERE stream_type = $1 AND stream_key = $2
ORDER BY stream_version DESC LIMIT 1
"""


async def head(conn: Conn) -> int:
    return int(await conn.fetchval(HEAD))


CHANGED_STREAMS = """
SELECT position, stream_type, stream_key FROM events
WHERE position > $1 AND position <= $2 ORDER BY position
"""


class Change(NamedTuple):
    position: int
    stream_type: str
    stream_key: str


async def changed_streams(conn: Conn, after: int, upto: int) -> list[Change]:
    """Which stream each event with after < position <= upto belongs to (envelopes only: the
    client API's model learns what to read again)."""
    rows = await conn.fetch(CHANGED_STREAMS, after, upto)
    return [Change(row["position"], row["stream_type"], row["stream_key"]) for row in rows]


LAST_OF_TYPE = "SELECT max(position) FROM events WHERE stream_type = ANY($1::text[])"


async def last_position_of(conn: Conn, stream_types: list[str]) -> int:
    """Position of the latest event of any stream of these types (0 when there is none)."""
    return int(await conn.fetchval(LAST_OF_TYPE, stream_types) or 0)


async def stream_version(conn: Conn, stream: tuple[str, str]) -> int | None:
    version = await conn.fetchval(STREAM_VERSION, *stream)
    return None if version is None else int(version)


async def stream_versions(conn: Conn, stream_type: str, keys: list[str]) -> dict[str, int]:
    """The versions of those streams of the type that exist, by key (one statement)."""
    rows = await conn.fetch(STREAM_VERSIONS, stream_type, keys)
    return {row["stream_key"]: int(row["version"]) for row in rows}


class StreamOrigin(NamedTuple):
    """Of one stream: the version of its last event marked with an origin (Metadata.origin),
    of its last event of the counted types from anywhere else, whether every event of it is
    the first start's, and when the origin first appended to it."""

    marked_at: int | None
    other_at: int | None
    bootstrap_only: bool
    first_marked: datetime | None = None


async def stream_origins(
    conn: Conn,
    stream_type: str,
    origin: str,
    keys: Sequence[str] | None = None,
    types: Sequence[str] | None = None,
) -> dict[str, StreamOrigin]:
    """Each stream of the type (or of these keys) that exists, as StreamOrigin says; `types`:
    the event types that count for `other_at` (None: all)."""
    rows = await conn.fetch(STREAM_ORIGINS, stream_type, origin, keys, types)
    return {
        r["stream_key"]: StreamOrigin(
            r["marked_at"], r["other_at"], bool(r["bootstrap_only"]), r["first_marked"]
        )
        for r in rows
    }


# The people an import of one source brought in batches (`UsersImported` with that origin), and
# each person's own stream: the last event with that origin, the last of the counted types from
# anywhere else, and whether one of the given install actors created the account.
# Positions, not stream versions: a batch is another stream than the person's.
IMPORTED_PEOPLE = """
SELECT (u ->> 'user_id')::bigint AS user_id, (u ->> 'source_id')::bigint AS source_id,
       max(e.position) AS position
FROM events e CROSS JOIN LATERAL jsonb_array_elements(e.data -> 'users') u
WHERE e.kind = 'UsersImported' AND e.metadata ->> 'origin' = $1
GROUP BY 1, 2
"""
PEOPLE_ORIGINS = """
SELECT stream_key::bigint AS user_id,
       max(position) FILTER (WHERE metadata ->> 'origin' = $1) AS marked_at,
       max(position) FILTER (
           WHERE metadata ->> 'origin' IS DISTINCT FROM $1 AND type = ANY($2::text[])
       ) AS other_at,
       coalesce(bool_or(type = 'UserCreated' AND metadata ->> 'actor_id' = ANY($3::text[])),
                false) AS installed
FROM events
WHERE stream_type = 'user'
GROUP BY stream_key
"""


class PersonOrigin(NamedTuple):
    """Of one person's account (positions in the log): the last batch of this source that
    brought it and its id there, the last event of their stream marked with the origin, the
    last of the counted types from elsewhere, and whether an install actor created it (an
    account the installation made, such as `admin-user`'s)."""

    batch_at: int | None
    source_id: int | None
    marked_at: int | None
    other_at: int | None
    installed: bool


async def people_origins(
    conn: Conn, origin: str, types: Sequence[str], install_actors: Sequence[str]
) -> dict[int, PersonOrigin]:
    """Every account with a stream `user/<id>` or in a batch this origin imported, by id."""
    batches = {r["user_id"]: r for r in await conn.fetch(IMPORTED_PEOPLE, origin)}
    streams = {
        r["user_id"]: r
        for r in await conn.fetch(PEOPLE_ORIGINS, origin, list(types), list(install_actors))
    }
    found: dict[int, PersonOrigin] = {}
    for user_id in batches.keys() | streams.keys():
        batch, stream = batches.get(user_id), streams.get(user_id)
        found[int(user_id)] = PersonOrigin(
            batch_at=None if batch is None else int(batch["position"]),
            source_id=None
            if batch is None or batch["source_id"] is None
            else int(batch["source_id"]),
            marked_at=None
            if stream is None or stream["marked_at"] is None
            else int(stream["marked_at"]),
            other_at=None
            if stream is None or stream["other_at"] is None
            else int(stream["other_at"]),
            installed=stream is not None and bool(stream["installed"]),
        )
    return found


async def last_position(conn: Conn, stream: tuple[str, str]) -> int | None:
    """Position of the stream's latest event: where its state was when someone read it."""
    position = await conn.fetchval(LAST_POSITION, *stream)
    return None if position is None else int(position)


async def read_stream(conn: Conn, stream: tuple[str, str]) -> list[RecordedEvent]:
    return await mapper.records(conn, await conn.fetch(READ_STREAM, *stream))


async def read_all(
    conn: Conn, after: int = 0, upto: int | None = None, batch: int = 1000
) -> AsyncIterator[list[RecordedEvent]]:
    """Yield batches of events with after < position <= upto (default: the head now). A
    rebuild from the start reads through `read_log` instead (one cursor, prefetched)."""
    limit = await head(conn) if upto is None else upto
    position = after
    while position < limit:
        rows = await conn.fetch(READ_ALL, position, limit, batch)
        if not rows:
            return
        yield await mapper.records(conn, rows)
        position = rows[-1]["position"]


class NextBatch(NamedTuple):
    """What `read_next` read, and the position read up to: the last event's when the batch is
    full, else the head (events of other types than the reading's lie up to it)."""

    records: list[RecordedEvent]
    upto: int


async def read_next(conn: Conn, after: int, reading: Reading, batch: int = 500) -> NextBatch:
    """The first `batch` events past `after` (up to the head now), read as `reading` says: an
    async projection's step. Only what it reads is sent and decoded (the data of the types it
    reads, the metadata if it reads it), and only the keys of the persons sealed in that are
    read and unwrapped."""
    types = () if reading.types is None else (list(reading.types),)
    limit = await head(conn)
    rows = await conn.fetch(_next_sql(reading), after, limit, *types, batch)
    keys = await mapper.keys_for(conn, rows, reading)
    read = mapper.reader(reading)
    return NextBatch(
        [read(row, keys) for row in rows],
        rows[-1]["position"] if len(rows) == batch else max(limit, after),
    )


async def _no_rows() -> list[asyncpg.Record]:
    return []


@functools.cache
def _reading_sql(reading: Reading) -> str:
    columns = ["position", "stream_type", "stream_key", "stream_version", "event_id"]
    columns += ["recorded_at"]
    if reading.events and reading.event_types is not None:  # our type names (\w+) only
        named = ", ".join(f"'{t}'" for t in reading.event_types if t.isidentifier())
        columns += ["type", "schema_version"]
        columns += [f"CASE WHEN type IN ({named or 'NULL'}) THEN data::text END AS data"]
    elif reading.events:
        columns += ["type", "schema_version", "data::text AS data"]
    if reading.metadata:
        columns += ["metadata::text AS metadata"]
    typed = "" if reading.types is None else " AND type = ANY($3::text[])"
    if reading.shards > 1:  # whole numbers only
        typed += (
            f" AND (hashtext(stream_key) & 2147483647) % {reading.shards:d} = {reading.shard:d}"
        )
    return (
        f"SELECT {', '.join(columns)} FROM events "  # noqa: S608 - our column names
        f"WHERE position > $1 AND position <= $2{typed} ORDER BY position"
    )


@functools.cache
def _next_sql(reading: Reading) -> str:
    return f"{_reading_sql(reading)} LIMIT ${3 if reading.types is None else 4}"


async def read_log(
    conn: Conn, after: int, upto: int, reading: Reading, batch: int = 5000
) -> AsyncIterator[list[RecordedEvent]]:
    """Batches of the events with after < position <= upto, as `reading` says: a rebuild's
    read, in the caller's transaction (or one of its own). One query, read through a cursor
    (its plan walks the log by position once; a LIMIT query per batch is planned again each
    time, and a filter the planner misjudges can make one sort all the rest of the log).
    The next batch is asked for before this one is decoded, so the server reads it meanwhile;
    the caller leaves the connection alone until the iteration ends."""
    if not conn.is_in_transaction():  # a cursor lives in a transaction: one of its own
        async with conn.transaction(isolation="repeatable_read", readonly=True):
            async for records in read_log(conn, after, upto, reading, batch):
                yield records
        return
    read = mapper.reader(reading)
    # Every key, as of this snapshot (unwrapped when first used): a rebuild sees erased
    # persons' values as the placeholder, as every other reader does.
    keys = await mapper.all_keys(conn) if reading.events or reading.metadata else seal.NO_KEYS
    types = () if reading.types is None else (list(reading.types),)
    cursor = await conn.cursor(_reading_sql(reading), after, upto, *types)
    pending = asyncio.ensure_future(cursor.fetch(batch))
    try:
        while rows := await pending:
            if len(rows) == batch:
                pending = asyncio.ensure_future(cursor.fetch(batch))
            else:
                pending = asyncio.ensure_future(_no_rows())
            yield [read(row, keys) for row in rows]
    finally:
        if not pending.done():
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError, asyncpg.PostgresError):
                await pending


async def lock_head(conn: Conn) -> int:
    """Hold the global section until the transaction ends (appends wait); the head position."""
    return int(await conn.fetchval(LOCK_HEAD))


# Times rise with positions (the global section gives them): a time is a position.
FIRST_AT_OR_AFTER = """
SELECT position FROM events WHERE recorded_at >= $1 ORDER BY recorded_at, position LIMIT 1
"""
LAST_AT_OR_BEFORE = """
SELECT position FROM events WHERE recorded_at <= $1
ORDER BY recorded_at DESC, position DESC LIMIT 1
"""
RECORDED_AT = "SELECT recorded_at FROM events WHERE position = $1"


async def first_at_or_after(conn: Conn, moment: datetime) -> int | None:
    """The first event recorded at or after a time; None when none was yet."""
    position = await conn.fetchval(FIRST_AT_OR_AFTER, moment)
    return None if position is None else int(position)


async def last_at_or_before(conn: Conn, moment: datetime) -> int:
    """The last event recorded at or before a time: the log's state then (0: none yet)."""
    position = await conn.fetchval(LAST_AT_OR_BEFORE, moment)
    return 0 if position is None else int(position)


async def time_of(conn: Conn, position: int) -> datetime | None:
    """When the event at a position was recorded; None for no such event."""
    moment: datetime | None = await conn.fetchval(RECORDED_AT, position)
    return moment


TIMES_OF_VERSIONS = """
SELECT e.stream_key, e.stream_version, e.recorded_at
FROM unnest($2::text[], $3::integer[]) AS v(stream_key, stream_version)
JOIN events e ON e.stream_type = $1 AND e.stream_key = v.stream_key
             AND e.stream_version = v.stream_version
"""


async def times_of_versions(
    conn: Conn, stream_type: str, versions: Sequence[tuple[str, int]]
) -> dict[tuple[str, int], datetime]:
    """When the log recorded each of these (stream key, version) pairs of one stream type:
    what read models that keep a version instead of a time show (an inline projection never
    sees the log's times). A pair with no event is left out."""
    if not versions:
        return {}
    rows = await conn.fetch(
        TIMES_OF_VERSIONS, stream_type, [k for k, _ in versions], [v for _, v in versions]
    )
    return {(r["stream_key"], r["stream_version"]): r["recorded_at"] for r in rows}
