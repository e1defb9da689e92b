"""Inline projections: applied to the read models inside the write transaction."""

from __future__ import annotations

from typing import TYPE_CHECKING

from projections.registry import INLINE

if TYPE_CHECKING:
    from collections.abc import Sequence

    from service.codec import RecordedEvent
    from service.connections import Conn


async def apply_inline(conn: Conn, records: Sequence[RecordedEvent]) -> None:
    """The event store's inline hook: same transaction, before the global section."""
    for record in records:
        for projection in INLINE:
            await projection.apply(conn, record)
