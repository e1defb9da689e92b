"""Appending to the log: a stream's version checked and advanced, the inline projections run,
the events encoded and sealed, and the global section (positions, hash chain, time) left for the
transaction's COMMIT, which `commit` sends with it in one message."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Collection, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final, Literal, NamedTuple

import asyncpg
import msgspec

from eventlog import mapper
from eventlog.codec import DomainEvent, RecordedEvent, encode_stored
from eventlog.connections import Conn
from eventlog.errors import PartialDuplicate, WrongExpectedVersion

if TYPE_CHECKING:
    from eventlog.events.base import Metadata

NO_STREAM: Final = "no-stream"
ANY: Final = "any"
Expected = int | Literal["no-stream", "any"]

# Applies events to inline read models inside the same transaction (handed in by the caller:
# the service passes projections.inline's).
InlineApply = Callable[[Conn, Sequence[RecordedEvent]], Awaitable[None]]


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
# A transaction's appends at its COMMIT (the unit of work, service/work.py): every stream's
# global section in one call (sql/0019: the head locked once, the events inserted in one
# statement), its arguments as literals (`append_streams_call`), since the call and the COMMIT
# go as one simple-protocol message.
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
            return await mapper.records(conn, existing)
        if existing:
            raise PartialDuplicate("Some of these events were already appended")
    last = await _advance_stream(conn, stream, expected, len(events))
    first = last - len(events) + 1
    # The real time is given in the global section (returned below); inline projections see
    # this earlier one and must not depend on it (`verify` would find a rebuild that differs).
    records = _unnumbered(stream, first, ids, events, metadata, datetime.now(UTC))
    if inline is not None:
        await inline(conn, records)
    data, stored_metadata = await mapper.stored(conn, events, metadata, erased)
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
        persons |= mapper.persons(s.events, s.metadata)
    keys = await mapper.writing_keys(conn, persons, erased)
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
    loop, a lock held long enough to cap the log's transactions a second far below what
    PostgreSQL allows: docs/benchmarks.md, "Inactive-user deletes".) The positions of the given
    last event ids, read once committed (with `positions`)."""
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
