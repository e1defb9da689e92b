"""Read model `segments`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from projections.base import Projection
from service.segments.events import SegmentCreated, SegmentDeleted, SegmentUpdated

if TYPE_CHECKING:
    from service.connections import Conn
    from service.events import RecordedEvent

INSERT = """
INSERT INTO segments (id, name, description, constraints, created_at) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (id) DO NOTHING
"""
UPDATE = "UPDATE segments SET name = $2, description = $3, constraints = $4 WHERE id = $1"
DELETE = "DELETE FROM segments WHERE id = $1"
_json = msgspec.json.Encoder()


async def apply(conn: Conn, recorded: RecordedEvent) -> None:
    match recorded.event:
        case SegmentCreated() as e:
            constraints = _json.encode(e.constraints).decode()
            await conn.execute(
                INSERT, e.segment_id, e.name, e.description, constraints, e.created_at
            )
        case SegmentUpdated() as e:
            constraints = _json.encode(e.constraints).decode()
            await conn.execute(UPDATE, e.segment_id, e.name, e.description, constraints)
        case SegmentDeleted() as e:
            await conn.execute(DELETE, e.segment_id)
        case _:
            pass


PROJECTION = Projection(
    name="segments",
    mode="inline",
    tables=("segments",),
    handles=frozenset(c.type_name() for c in (SegmentCreated, SegmentUpdated, SegmentDeleted)),
    apply=apply,
)
