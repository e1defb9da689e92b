"""The mapper between stored rows and events: encoding with personal values sealed by their
persons' keys on the way in, opening and decoding on the way out (only what a `Reading` asks
for)."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, NamedTuple

from eventlog.codec import (
    UNREAD_EVENT,
    UNREAD_METADATA,
    DomainEvent,
    RecordedEvent,
    decode,
    decode_metadata,
    encode_stored,
)
from eventlog.privacy import keys as personal_keys
from eventlog.privacy import seal
from eventlog.privacy.master import masters

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Sequence

    import asyncpg

    from eventlog.connections import Conn
    from eventlog.events.base import Metadata
    from eventlog.privacy.crypto import DataKey


def record(row: asyncpg.Record, keys: seal.Opener) -> RecordedEvent:
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


async def records(conn: Conn, rows: Sequence[asyncpg.Record]) -> list[RecordedEvent]:
    keys = await keys_for(conn, rows)
    return [_read_whole(row, keys) for row in rows]


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
def reader(reading: Reading) -> Callable[[asyncpg.Record, seal.Opener], RecordedEvent]:
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


_read_whole = reader(Reading())


async def stored(
    conn: Conn, events: Sequence[DomainEvent], metadata: Metadata, erased: Collection[int] = ()
) -> tuple[list[str], str]:
    """The events' data and the metadata as stored: personal values sealed with their persons'
    keys (`writing_keys`)."""
    keys = await writing_keys(conn, persons(events, metadata), erased)
    return [encode_stored(e, keys) for e in events], encode_stored(metadata, keys)


def persons(events: Sequence[DomainEvent], metadata: Metadata) -> set[int]:
    """The persons whose values these events and their envelope hold."""
    persons = seal.owners(metadata)
    for event in events:
        persons |= seal.owners(event)
    return persons


async def writing_keys(
    conn: Conn, persons: set[int], erased: Collection[int] = ()
) -> dict[int, DataKey | None]:
    """The keys that seal these persons' values as stored (made now for newcomers); those of
    the `erased` have none (their values are written as the placeholder)."""
    gone = persons.intersection(erased)
    persons = persons - gone
    keys = await personal_keys.for_writing(conn, masters(), persons) if persons else {}
    keys.update(dict.fromkeys(gone))
    return keys


async def all_keys(conn: Conn) -> personal_keys.Keyring:
    """Every person's key as of the caller's snapshot (each unwrapped when first used): what a
    reader of the whole log opens sealed values with."""
    return await personal_keys.all_for_reading(conn, masters())
