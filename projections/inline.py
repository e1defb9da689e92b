"""Inline projections: applied to the read models inside the write transaction."""

from __future__ import annotations

from typing import TYPE_CHECKING

from projections import writes
from projections.registry import INLINE, reading

if TYPE_CHECKING:
    from collections.abc import Sequence

    from eventlog.codec import RecordedEvent
    from eventlog.connections import Conn


async def apply_inline(conn: Conn, records: Sequence[RecordedEvent]) -> None:
    """The event store's inline hook: same transaction, before the global section."""
    await writes.execute(
        conn,
        [
            w
            for record in records
            for projection in reading(type(record.event), INLINE)
            for w in projection.writes(record)
        ],
    )
