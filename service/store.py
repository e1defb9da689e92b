"""The write path: append events with the inline projections applied in the same transaction."""

from __future__ import annotations

from typing import TYPE_CHECKING

from projections.inline import apply_inline
from service import eventstore
from service.errors import Conflict, NameExists

if TYPE_CHECKING:
    import uuid
    from collections.abc import Sequence

    from service.connections import Conn
    from service.events import Event, Metadata, RecordedEvent


async def append(  # noqa: PLR0913 - mirrors eventstore.append
    conn: Conn,
    stream: tuple[str, str],
    expected: eventstore.Expected,
    events: Sequence[Event],
    metadata: Metadata,
    *,
    event_ids: Sequence[uuid.UUID] | None = None,
) -> list[RecordedEvent]:
    return await eventstore.append(
        conn, stream, expected, events, metadata, event_ids=event_ids, inline=apply_inline
    )


async def append_to_current(
    conn: Conn, stream: tuple[str, str], events: Sequence[Event], metadata: Metadata
) -> list[RecordedEvent]:
    """Append at the version the stream has now: a concurrent writer to it turns into a 409."""
    version = await eventstore.stream_version(conn, stream)
    expected: eventstore.Expected = "no-stream" if version is None else version
    try:
        return await append(conn, stream, expected, events, metadata)
    except eventstore.WrongExpectedVersion:
        raise Conflict(f"{stream[0]} {stream[1]} was changed concurrently; retry") from None


async def append_new(
    conn: Conn,
    stream: tuple[str, str],
    events: Sequence[Event],
    metadata: Metadata,
    *,
    exists: str,
) -> list[RecordedEvent]:
    """Start a stream; when a concurrent writer started it first, 409 NameExists(exists)."""
    try:
        return await append(conn, stream, "no-stream", events, metadata)
    except eventstore.WrongExpectedVersion:
        raise NameExists(exists) from None
