"""Read model `segments`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from projections import shapes
from projections.base import Projection
from service.features.events import SegmentCreated, SegmentDeleted, SegmentUpdated

if TYPE_CHECKING:
    from service.codec import RecordedEvent
    from service.connections import Conn

INSERT = """
INSERT INTO segments (id, name, description, constraints, created_at) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (id) DO NOTHING
"""
UPDATE = "UPDATE segments SET name = $2, description = $3, constraints = $4 WHERE id = $1"
DELETE = "DELETE FROM segments WHERE id = $1"


async def apply(conn: Conn, recorded: RecordedEvent) -> None:
    match recorded.event:
        case SegmentCreated() as e:
            constraints = shapes.constraints(e.constraints)
            await conn.execute(
                INSERT, e.segment_id, e.name, e.description, constraints, e.created_at
            )
        case SegmentUpdated() as e:
            constraints = shapes.constraints(e.constraints)
            await conn.execute(UPDATE, e.segment_id, e.name, e.description, constraints)
        case SegmentDeleted() as e:
            await conn.execute(DELETE, e.segment_id)
        case _:
            pass


PROJECTION = Projection(
    name="segments",
    mode="inline",
    tables=("segments",),
    apply=apply,
)
