"""The only SQL on the event log: append (expected stream versions, idempotent event ids), reads,
the checks `verify` makes, and `export`."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import math
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final, Literal, NamedTuple

import asyncpg
import msgspec

from service.codec import (
    UNREAD_EVENT,
    UNREAD_METADATA,
    DomainEvent,
    RecordedEvent,
    decode,
    decode_metadata,
    encode_stored,
)
from service.connections import Conn
from service.errors import Conflict
from service.privacy import keys as personal_keys
from service.privacy import seal
from service.privacy.master import masters

if TYPE_CHECKING:
    from service.events import Metadata
    from service.privacy.crypto import DataKey

NOTIFY_CHANNEL: Final = "events"  # every append notifies it with the last position
NO_STREAM: Final = "no-stream"
ANY: Final = "any"
Expected = int | Literal["no-stream", "any"]

# Applies events to inline read models inside the same transaction (projections.inline).
InlineApply = Callable[[Conn, Sequence[RecordedEvent]], Awaitable[None]]


class WrongExpectedVersion(Conflict):
    """The stream moved on (or exists) since the caller read it."""


class PartialDuplicate(Conflict):
    """Some event ids of an append are already stored (or being stored) with other events."""


class Pending(NamedTuple):
    """An append's global section, left for its transaction's COMMIT (`commit`): one stream's
    events, stored as they will be (data and metadata as JSON text, values sealed)."""

    stream: tuple[str, str]
    first_version: int
    event_ids: Sequence[uuid.UUID]
    types: Sequence[str]
    schema_versions: Sequence[int]
    data: Sequence[str]
    metadata: str

    @property
    def last_event_id(self) -> uuid.UUID:
        return self.event_ids[-1]


INSERT_STREAM = """
INSERT INTO streams (stream_type, stream_key, version) VALUES ($1, $2, $3)
ON CONFLICT ON CONSTRAINT streams_pkey DO NOTHING
RETURNING version
"""
ADVANCE_STREAM = """
UPDATE streams SET version = version + $4
WHERE stream_type = $1 AND stream_key = $2 AND version = $3
RETURNING version
"""
UPSERT_STREAM = """
INSERT INTO streams AS s (stream_type, stream_key, version) VALUES ($1, $2, $3)
ON CONFLICT ON CONSTRAINT streams_pkey DO UPDATE SET version = s.version + $3
RETURNING version
"""
# The global section numbers the events, chains them and gives them their time (under the head
# lock, never going back: times rise with positions). $9, the caller's time, is ignored.
APPEND = """
SELECT out_position, out_recorded_at
FROM eventstore_append($1, $2, $3, $4, $5, $6, $7, $8, $9)
"""
# A transaction's appends at its COMMIT (store.transaction): every stream's global section in
# one call (sql/0019: the head locked once, the events inserted in one statement), its
# arguments as literals (`append_streams_call`), since the call and the COMMIT go as one
# simple-protocol message.
APPEND_STREAMS_CALL = (
    "SELECT eventstore_append_streams({}::text[], {}::text[], {}::integer[], {}::integer[], "
    "{}::jsonb[], {}::uuid[], {}::text[], {}::integer[], {}::jsonb[])"
)
APPENDED_AT = "SELECT event_id, position FROM events WHERE event_id = ANY($1::uuid[])"
SELECT_BY_EVENT_IDS = """
SELECT position, stream_type, stream_key, stream_version, event_id, type, schema_version,
       data::text AS data, metadata::text AS metadata, recorded_at
FROM events WHERE event_id = ANY($1::uuid[]) ORDER BY position
"""
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
LAST_POSITION = """
SELECT position FROM events WHERE stream_type = $1 AND stream_key = $2
ORDER BY stream_version DESC LIMIT 1
"""


async def append(  # noqa: PLR0913 - the envelope has this many parts
    conn: Conn,
    stream: tuple[str, str],
    expected: Expected,
    events: Sequence[DomainEvent],
    metadata: Metadata,
    *,
    event_ids: Sequence[uuid.UUID] | None = None,
    inline: InlineApply | None = None,
    pending: list[Pending] | None = None,
    erased: Collection[int] = (),
) -> list[RecordedEvent]:
    """Append events to one stream inside the caller's transaction; return them as recorded.
    `erased`: persons whose keys this transaction destroyed (their values are written as the
    placeholder without their keys being read again).

    Order: idempotency check, stream version check, inline projections, then the global section
    (numbering, hash chain, insert). The caller commits right after, which ends the section.
    With `pending`, the global section is added to it instead, to run with the COMMIT
    (`commit`); the events are returned without their positions and times.
    """
    if not conn.is_in_transaction():
        raise RuntimeError("append must run inside a transaction")
    if not events:
        return []
    ids = list(event_ids) if event_ids is not None else [uuid.uuid4() for _ in events]
    if len(ids) != len(events):
        raise ValueError("one event id per event")
    if event_ids is not None:
        existing = await conn.fetch(SELECT_BY_EVENT_IDS, ids)
        if len(existing) == len(ids):
            return await _records(conn, existing)
        if existing:
            raise PartialDuplicate("Some of these events were already appended")
    last = await _advance_stream(conn, stream, expected, len(events))
    first = last - len(events) + 1
    # The real time is given in the global section (returned below); inline projections see
    # this earlier one and must not depend on it (`verify` would find a rebuild that differs).
    records = _unnumbered(stream, first, ids, events, metadata, datetime.now(UTC))
    if inline is not None:
        await inline(conn, records)
    data, stored_metadata = await _stored(conn, events, metadata, erased)
    types = [e.type_name() for e in events]
    versions = [e.schema_version for e in events]
    if pending is not None:
        pending.append(Pending(stream, first, ids, types, versions, data, stored_metadata))
        return records
    recorded_at = records[0].recorded_at
    args = (stream[0], stream[1], first, ids, types, versions, data, stored_metadata, recorded_at)
    return [
        msgspec.structs.replace(
            record, position=row["out_position"], recorded_at=row["out_recorded_at"]
        )
        for record, row in zip(records, await _global_section(conn, args), strict=True)
    ]


class NewStream(NamedTuple):
    """One stream of `append_new`: its type and key, its events and their envelope."""

    stream: tuple[str, str]
    events: Sequence[DomainEvent]
    metadata: Metadata


INSERT_STREAMS = """
INSERT INTO streams (stream_type, stream_key, version)
SELECT * FROM unnest($1::text[], $2::text[], $3::integer[])
ON CONFLICT ON CONSTRAINT streams_pkey DO NOTHING
RETURNING stream_type, stream_key
"""


async def append_new(
    conn: Conn,
    streams: Sequence[NewStream],
    *,
    inline: InlineApply | None,
    pending: list[Pending],
    erased: Collection[int] = (),
) -> list[list[RecordedEvent]]:
    """Start several new streams in the caller's transaction, in the round trips of one append
    (group commit: concurrent commands of one kind, service/batches.py): the streams in one
    statement, the inline projections over all their events at once, the keys of all their
    persons read once. Each stream keeps its own envelope and its own global section in
    `pending` (one Pending each, in order), so the log holds what the same appends one after
    the other would have written. A stream that exists already refuses the whole call
    (WrongExpectedVersion); `erased` as for `append`. Returns each stream's events as
    recorded, without their positions and times."""
    if not conn.is_in_transaction():
        raise RuntimeError("append must run inside a transaction")
    streams = [s for s in streams if s.events]
    if not streams:
        return []
    made = await conn.fetch(
        INSERT_STREAMS,
        [s.stream[0] for s in streams],
        [s.stream[1] for s in streams],
        [len(s.events) for s in streams],
    )
    if len(made) < len(streams):
        taken = {(r["stream_type"], r["stream_key"]) for r in made}
        stream_type, key = next(s.stream for s in streams if s.stream not in taken)
        raise WrongExpectedVersion(f"Stream {stream_type}/{key} already exists")
    recorded_at = datetime.now(UTC)  # as in `append`: the global section gives the real one
    ids = [[uuid.uuid4() for _ in s.events] for s in streams]
    records = [
        _unnumbered(s.stream, 1, i, s.events, s.metadata, recorded_at)
        for s, i in zip(streams, ids, strict=True)
    ]
    if inline is not None:
        await inline(conn, [r for rs in records for r in rs])
    persons: set[int] = set()
    for s in streams:
        persons |= _persons(s.events, s.metadata)
    keys = await _keys(conn, persons, erased)
    pending.extend(
        Pending(
            s.stream,
            1,
            i,
            [e.type_name() for e in s.events],
            [e.schema_version for e in s.events],
            [encode_stored(e, keys) for e in s.events],
            encode_stored(s.metadata, keys),
        )
        for s, i in zip(streams, ids, strict=True)
    )
    return records


def _unnumbered(  # noqa: PLR0913, PLR0917 - a record's parts
    stream: tuple[str, str],
    first: int,
    ids: Sequence[uuid.UUID],
    events: Sequence[DomainEvent],
    metadata: Metadata,
    recorded_at: datetime,
) -> list[RecordedEvent]:
    """Events as recorded before the global section has given them positions."""
    return [
        RecordedEvent(
            position=None,
            stream_type=stream[0],
            stream_key=stream[1],
            stream_version=first + i,
            event_id=ids[i],
            recorded_at=recorded_at,
            metadata=metadata,
            event=event,
        )
        for i, event in enumerate(events)
    ]


async def _global_section(conn: Conn, args: tuple[object, ...]) -> list[asyncpg.Record]:
    try:
        return await conn.fetch(APPEND, *args)
    except asyncpg.UniqueViolationError as exc:
        if exc.constraint_name != "events_event_id_key":
            raise
        raise PartialDuplicate("These events are being appended by another transaction") from None


async def commit(
    conn: Conn, pending: Sequence[Pending], *, positions: bool = True
) -> dict[uuid.UUID, int]:
    """The global sections of a transaction's appends, in one call, and its COMMIT, sent as one
    message: the head lock is then held for the appends and the commit alone. (Sent one after
    the other, the lock would also be held while the COMMIT waits its turn in a busy event
    loop: measured at 1.8 ms a transaction with 16 concurrent deletes, a ceiling of about 500 a
    second.) The positions of the given last event ids, read once committed (with
    `positions`)."""
    try:
        await conn.execute(f"{append_streams_call(pending)}; COMMIT" if pending else "COMMIT")
    except asyncpg.UniqueViolationError as exc:
        if exc.constraint_name != "events_event_id_key":
            raise
        raise PartialDuplicate("These events are being appended by another transaction") from None
    if not pending or not positions:
        return {}
    rows = await conn.fetch(APPENDED_AT, [p.last_event_id for p in pending])
    return {r["event_id"]: r["position"] for r in rows}


def literal(value: str) -> str:
    """A PostgreSQL string constant holding exactly `value` (an escape string, so that it means
    the same whatever `standard_conforming_strings` says)."""
    if "\x00" in value:
        raise ValueError("PostgreSQL text cannot hold NUL")
    return "E'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


def _array(values: Sequence[str]) -> str:
    return "ARRAY[" + ", ".join(literal(v) for v in values) + "]"


def append_streams_call(pending: Sequence[Pending]) -> str:
    """The call of eventstore_append_streams for these appends, in order."""
    events = [
        (event_id, p.types[i], p.schema_versions[i], p.data[i])
        for p in pending
        for i, event_id in enumerate(p.event_ids)
    ]
    return APPEND_STREAMS_CALL.format(
        _array([p.stream[0] for p in pending]),
        _array([p.stream[1] for p in pending]),
        _integers([p.first_version for p in pending]),
        _integers([len(p.event_ids) for p in pending]),
        _array([p.metadata for p in pending]),
        _array([str(e[0]) for e in events]),
        _array([e[1] for e in events]),
        _integers([e[2] for e in events]),
        _array([e[3] for e in events]),
    )


def _integers(values: Sequence[int]) -> str:
    return "ARRAY[" + ", ".join(str(int(v)) for v in values) + "]"


async def _stored(
    conn: Conn, events: Sequence[DomainEvent], metadata: Metadata, erased: Collection[int] = ()
) -> tuple[list[str], str]:
    """The events' data and the metadata as stored: personal values sealed with their persons'
    keys (`_keys`)."""
    keys = await _keys(conn, _persons(events, metadata), erased)
    return [encode_stored(e, keys) for e in events], encode_stored(metadata, keys)


def _persons(events: Sequence[DomainEvent], metadata: Metadata) -> set[int]:
    """The persons whose values these events and their envelope hold."""
    persons = seal.owners(metadata)
    for event in events:
        persons |= seal.owners(event)
    return persons


async def _keys(
    conn: Conn, persons: set[int], erased: Collection[int] = ()
) -> dict[int, DataKey | None]:
    """The keys that seal these persons' values as stored (made now for newcomers); those of
    the `erased` have none (their values are written as the placeholder)."""
    gone = persons.intersection(erased)
    persons = persons - gone
    keys = await personal_keys.for_writing(conn, masters(), persons) if persons else {}
    keys.update(dict.fromkeys(gone))
    return keys


async def _advance_stream(
    conn: Conn, stream: tuple[str, str], expected: Expected, count: int
) -> int:
    stream_type, key = stream
    if expected == NO_STREAM:
        version = await conn.fetchval(INSERT_STREAM, stream_type, key, count)
        if version is None:
            raise WrongExpectedVersion(f"Stream {stream_type}/{key} already exists")
        return int(version)
    if expected == ANY:
        return int(await conn.fetchval(UPSERT_STREAM, stream_type, key, count))
    assert isinstance(expected, int)
    version = await conn.fetchval(ADVANCE_STREAM, stream_type, key, expected, count)
    if version is None:
        raise WrongExpectedVersion(f"Stream {stream_type}/{key} is not at version {expected}")
    return int(version)


def _record(row: asyncpg.Record, keys: seal.Opener) -> RecordedEvent:
    """A row of the envelope's columns, data and metadata as text: the event as recorded."""
    return _read_whole(row, keys)


async def keys_for(
    conn: Conn, rows: Sequence[asyncpg.Record], reading: Reading | None = None
) -> personal_keys.Keyring:
    """The keys that open what these rows (with data and metadata as text) hold sealed; with
    `reading`, only in what it decodes (data NULL where it does not read the type)."""
    events = reading is None or reading.events
    metadata = reading is None or reading.metadata
    persons: set[int] = set()
    for row in rows:
        if events and row["data"] is not None:
            persons |= seal.persons_sealed_in(row["data"])
        if metadata:
            persons |= seal.persons_sealed_in(row["metadata"])
    return await personal_keys.for_reading(conn, masters(), persons)


async def _records(conn: Conn, rows: Sequence[asyncpg.Record]) -> list[RecordedEvent]:
    keys = await keys_for(conn, rows)
    return [_read_whole(row, keys) for row in rows]


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


async def last_position(conn: Conn, stream: tuple[str, str]) -> int | None:
    """Position of the stream's latest event: where its state was when someone read it."""
    position = await conn.fetchval(LAST_POSITION, *stream)
    return None if position is None else int(position)


async def read_stream(conn: Conn, stream: tuple[str, str]) -> list[RecordedEvent]:
    return await _records(conn, await conn.fetch(READ_STREAM, *stream))


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
        yield await _records(conn, rows)
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
    keys = await keys_for(conn, rows, reading)
    read = _reader(reading)
    return NextBatch(
        [read(row, keys) for row in rows],
        rows[-1]["position"] if len(rows) == batch else max(limit, after),
    )


async def _no_rows() -> list[asyncpg.Record]:
    return []


class Reading(NamedTuple):
    """What a rebuild reads of each event: only some stored types (None: all), of one shard of
    the streams (of `shards`, by a hash of the stream's key), and whether it decodes the event
    and the metadata (else `UNREAD_EVENT`, `UNREAD_METADATA` stand in)."""

    types: tuple[str, ...] | None = None
    events: bool = True
    metadata: bool = True
    event_types: tuple[str, ...] | None = None  # with `events`: decode only these (None: all)
    shard: int = 0
    shards: int = 1


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


@functools.cache
def _reader(reading: Reading) -> Callable[[asyncpg.Record, seal.Opener], RecordedEvent]:
    """Rows of `_reading_sql(reading)` to recorded events, sealed values opened with keys."""

    wanted = None if reading.event_types is None else frozenset(reading.event_types)

    def read(row: asyncpg.Record, keys: seal.Opener) -> RecordedEvent:
        return RecordedEvent(
            position=row["position"],
            stream_type=row["stream_type"],
            stream_key=row["stream_key"],
            stream_version=row["stream_version"],
            event_id=row["event_id"],
            recorded_at=row["recorded_at"],
            metadata=(
                decode_metadata(row["metadata"], keys) if reading.metadata else UNREAD_METADATA
            ),
            event=(
                decode(row["type"], row["schema_version"], row["data"], keys)
                if reading.events and (wanted is None or row["type"] in wanted)
                else UNREAD_EVENT
            ),
        )

    return read


_read_whole = _reader(Reading())


async def read_log(
    conn: Conn, after: int, upto: int, reading: Reading, batch: int = 5000
) -> AsyncIterator[list[RecordedEvent]]:
    """Batches of the events with after < position <= upto, as `reading` says: a rebuild's
    read, in the caller's transaction (or one of its own). One query, read through a cursor
    (its plan walks the log by position once; batches of LIMIT queries were each planned
    again, and a filter the planner misjudged had some of them sort all the rest of the log).
    The next batch is asked for before this one is decoded, so the server reads it meanwhile;
    the caller leaves the connection alone until the iteration ends."""
    if not conn.is_in_transaction():  # a cursor lives in a transaction: one of its own
        async with conn.transaction(isolation="repeatable_read", readonly=True):
            async for records in read_log(conn, after, upto, reading, batch):
                yield records
        return
    read = _reader(reading)
    # Every key, as of this snapshot (unwrapped when first used): a rebuild sees erased
    # persons' values as the placeholder, as every other reader does.
    keys = (
        await personal_keys.all_for_reading(conn, masters())
        if reading.events or reading.metadata
        else seal.NO_KEYS
    )
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


# --- checks of the log itself (verify) ---------------------------------------------------------

POSITIONS = """
SELECT count(*) AS count, coalesce(min(position), 0) AS low, coalesce(max(position), 0) AS high,
       (SELECT position FROM log_head WHERE id = 1) AS head
FROM events
"""
INCONSISTENT_STREAMS = """
SELECT coalesce(e.stream_type, s.stream_type) AS stream_type,
       coalesce(e.stream_key, s.stream_key) AS stream_key, e.n AS events, e.hi AS last_version,
       s.version AS recorded_version
FROM (SELECT stream_type, stream_key, count(*) AS n, max(stream_version) AS hi,
             min(stream_version) AS lo
      FROM events GROUP BY stream_type, stream_key) e
FULL JOIN streams s ON s.stream_type = e.stream_type AND s.stream_key = e.stream_key
WHERE e.n IS NULL OR e.lo <> 1 OR e.n <> e.hi OR s.version IS DISTINCT FROM e.hi::integer
LIMIT $1
"""
STREAM_COUNT = "SELECT count(*) FROM streams"
CHAIN = """
SELECT position, type, schema_version, data::text AS data, prev_hash, hash,
       event_canonical(position, stream_type, stream_key, stream_version, event_id, type,
                       schema_version, data, metadata, recorded_at) AS canonical
FROM events ORDER BY position
"""


class Positions(msgspec.Struct, frozen=True, kw_only=True):
    count: int
    low: int
    high: int
    head: int


class StreamMismatch(msgspec.Struct, frozen=True, kw_only=True):
    stream_type: str
    stream_key: str
    events: int | None
    last_version: int | None
    recorded_version: int | None


class ChainLink(msgspec.Struct, frozen=True, kw_only=True):
    """One event as the hash chain covers it: `canonical` is the text its hash is over."""

    position: int
    type: str
    schema_version: int
    data: str
    prev_hash: bytes
    hash: bytes
    canonical: str


async def positions(conn: Conn) -> Positions:
    row = await conn.fetchrow(POSITIONS)
    assert row is not None  # an aggregate always has its row
    return Positions(count=row["count"], low=row["low"], high=row["high"], head=row["head"])


async def stream_count(conn: Conn) -> int:
    return int(await conn.fetchval(STREAM_COUNT))


async def inconsistent_streams(conn: Conn, limit: int = 20) -> list[StreamMismatch]:
    """Streams whose versions are not 1..k, or whose `streams` row disagrees with the events."""
    return [
        StreamMismatch(
            stream_type=r["stream_type"],
            stream_key=r["stream_key"],
            events=r["events"],
            last_version=r["last_version"],
            recorded_version=r["recorded_version"],
        )
        for r in await conn.fetch(INCONSISTENT_STREAMS, limit)
    ]


# Events whose derived columns (filled by the append since 0016, generated before) differ from
# what their functions give: none, in a log that only the append functions wrote.
UNDERIVED = """
SELECT position FROM events
WHERE kind IS DISTINCT FROM event_kind(type, data)
   OR project IS DISTINCT FROM event_project(stream_type, stream_key, data)
   OR actor_user_id IS DISTINCT FROM event_actor_user_id(metadata)
ORDER BY position LIMIT $1
"""


async def underived(conn: Conn, limit: int) -> list[int]:
    """The first positions (at most `limit`) whose kind, project or actor_user_id is not what
    the event gives."""
    return [r["position"] for r in await conn.fetch(UNDERIVED, limit)]


async def chain(conn: Conn, prefetch: int = 2000) -> AsyncIterator[ChainLink]:
    """Every event in position order (inside the caller's transaction: a cursor needs one)."""
    async for row in conn.cursor(CHAIN, prefetch=prefetch):
        yield ChainLink(
            position=row["position"],
            type=row["type"],
            schema_version=row["schema_version"],
            data=row["data"],
            prev_hash=bytes(row["prev_hash"]),
            hash=bytes(row["hash"]),
            canonical=row["canonical"],
        )


# --- a person's data in the log (erase-user's report) ------------------------------------------

# Events that hold a person's data: sealed (in data or metadata), or plain (written before
# encryption: an actor's name, a user stream's event, a batch's record of them). A full scan.
PERSONAL_DATA_OF = """
SELECT count(*) FILTER (WHERE data::text LIKE $2 OR metadata::text LIKE $2) AS sealed,
       count(*) FILTER (WHERE
           (actor_user_id = $1 AND metadata ->> 'actor_kind' = 'user'
            AND jsonb_typeof(metadata -> 'actor_name') = 'string'
            AND metadata ->> 'actor_name' <> '[erased]')
        OR (stream_type = 'user' AND stream_key = $1::text
            AND type IN ('UserCreated', 'UserUpdated', 'UserDeleted')
            AND jsonb_path_exists(data,
                '$ ? (@.name.type() == "string" && @.name != "[erased]"
                   || @.username.type() == "string" && @.username != "[erased]"
                   || @.email.type() == "string" && @.email != "[erased]")'))
        OR (type IN ('UsersDeleted', 'UsersImported')
            AND jsonb_path_exists(data,
                '$.users[*] ? (@.user_id == $id && (
                     @.name.type() == "string" && @.name != "[erased]"
                  || @.username.type() == "string" && @.username != "[erased]"
                  || @.email.type() == "string" && @.email != "[erased]"))',
                jsonb_build_object('id', $1::bigint)))
       ) AS plain
FROM events
"""


class PersonalData(NamedTuple):
    sealed: int
    plain: int


async def personal_data_of(conn: Conn, person: int) -> PersonalData:
    """How many events hold a person's data sealed, and how many in plain text."""
    row = await conn.fetchrow(PERSONAL_DATA_OF, person, f'%{{"person": {person:d}, "sealed"%')
    assert row is not None  # an aggregate always has its row
    return PersonalData(sealed=row["sealed"], plain=row["plain"])


# --- export -----------------------------------------------------------------------------------

EXPORT = """
SELECT position, stream_type, stream_key, stream_version, event_id::text AS event_id, type,
       schema_version, data::text AS data, metadata::text AS metadata, recorded_at,
       encode(prev_hash, 'hex') AS prev_hash, encode(hash, 'hex') AS hash
FROM events WHERE position > $1 ORDER BY position
"""


class ExportedEvent(msgspec.Struct, frozen=True):
    """An event as `export` writes it: the stored columns, `data` and `metadata` as stored."""

    position: int
    stream_type: str
    stream_key: str
    stream_version: int
    event_id: str
    type: str
    schema_version: int
    data: msgspec.Raw
    metadata: msgspec.Raw
    recorded_at: str
    prev_hash: str
    hash: str


async def export(conn: Conn, after: int = 0, prefetch: int = 2000) -> AsyncIterator[ExportedEvent]:
    """Events after a position, in order, with both hashes (inside the caller's transaction).
    Each sealed value also carries its `value`: the text, or `"[erased]"` (docs/privacy.md)."""
    keys = await personal_keys.all_for_reading(conn, masters())
    async for row in conn.cursor(EXPORT, after, prefetch=prefetch):
        yield ExportedEvent(
            position=row["position"],
            stream_type=row["stream_type"],
            stream_key=row["stream_key"],
            stream_version=row["stream_version"],
            event_id=row["event_id"],
            type=row["type"],
            schema_version=row["schema_version"],
            data=_with_values(row["data"], keys),
            metadata=_with_values(row["metadata"], keys),
            recorded_at=row["recorded_at"].isoformat(),
            prev_hash=row["prev_hash"],
            hash=row["hash"],
        )


def _with_values(stored: str, keys: seal.Opener) -> msgspec.Raw:
    """PostgreSQL's text of the stored JSON, each sealed value given its opened `value`."""
    return msgspec.Raw(seal.with_values(stored, keys).encode())


# --- the log as the audit reads it (service/audit) --------------------------------------------

LOG_COLUMNS = """
position, stream_type, stream_key, stream_version, event_id, type, schema_version,
data::text AS data, metadata::text AS metadata, recorded_at, encode(hash, 'hex') AS hash, kind,
project, actor_user_id
"""
# Times rise with positions (the global section gives them): a time is a position.
FIRST_AT_OR_AFTER = """
SELECT position FROM events WHERE recorded_at >= $1 ORDER BY recorded_at, position LIMIT 1
"""
LAST_AT_OR_BEFORE = """
SELECT position FROM events WHERE recorded_at <= $1
ORDER BY recorded_at DESC, position DESC LIMIT 1
"""
RECORDED_AT = "SELECT recorded_at FROM events WHERE position = $1"
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
        recorded=_record(row, keys),
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


async def _log_entries(conn: Conn, rows: Sequence[asyncpg.Record]) -> list[LogEntry]:
    keys = await keys_for(conn, rows)
    return [_log_entry(row, keys) for row in rows]


async def count(conn: Conn, found: LogFilter) -> int:
    """How many events the filter keeps (positions are dense: without conditions on the
    events, as many as the positions in range)."""
    where = _Where()
    _filtered(found, where)
    if not where.clauses:
        last = await head(conn)
        low = max(found.since or 0, 0)
        high = min(last, (found.until - 1) if found.until is not None else last)
        return max(0, high - low)
    await conn.execute(CUSTOM_PLANS)
    _bounds(found, where, None, None)
    sql = f"SELECT count(*) FROM events WHERE {where.text()}"  # noqa: S608
    return int(await conn.fetchval(sql, *where.args))


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


async def import_of_user(conn: Conn, user_id: int, before: int) -> LogEntry | None:
    """The `import-users` batch that brought a user in, if one did before a position."""
    row = await conn.fetchrow(IMPORT_OF_USER, user_id, before)
    return None if row is None else (await _log_entries(conn, [row]))[0]
