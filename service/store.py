"""The write path: append events with the inline projections applied in the same transaction."""

from __future__ import annotations

from typing import TYPE_CHECKING

from projections.runner import apply_inline
from service import eventstore

if TYPE_CHECKING:
    import uuid
    from collections.abc import Sequence

    from service.db import Conn
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
