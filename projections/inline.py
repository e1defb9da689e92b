"""Inline projections: applied to the read models inside the write transaction."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from projections import writes
from projections.registry import INLINE, reading

if TYPE_CHECKING:
    from collections.abc import Sequence

    from eventlog.codec import RecordedEvent
    from eventlog.connections import Conn
    from eventlog.events.base import Event
    from projections.base import Projection


@functools.cache
def _inline(event_type: type[Event]) -> tuple[Projection, ...]:
    """`reading(event_type, INLINE)`, cached by the type alone: a cache keyed by INLINE too
    hashes each of its projections at every event."""
    return reading(event_type, INLINE)


async def apply_inline(conn: Conn, records: Sequence[RecordedEvent]) -> None:
    """The event store's inline hook: same transaction, before the global section."""
    await writes.execute(
        conn,
        [
            w
            for record in records
            for projection in _inline(type(record.event))
            for w in projection.writes(record)
        ],
    )
