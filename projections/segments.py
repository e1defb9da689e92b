"""Read model `segments`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from eventlog.events.features import SegmentCreated, SegmentDeleted, SegmentUpdated
from projections import shapes
from projections.base import Projection
from projections.writes import Delete, Insert, Table, Update, Write

if TYPE_CHECKING:
    from eventlog.codec import RecordedEvent

SEGMENTS = Table("segments", ("id",))


def writes(recorded: RecordedEvent) -> list[Write]:
    match recorded.event:
        case SegmentCreated() as e:
            row = {
                "id": e.segment_id,
                "name": e.name,
                "description": e.description,
                "constraints": shapes.constraints(e.constraints),
                "created_at": e.created_at,
            }
            return [Insert(SEGMENTS, row)]
        case SegmentUpdated() as e:
            changed = {
                "name": e.name,
                "description": e.description,
                "constraints": shapes.constraints(e.constraints),
            }
            return [Update(SEGMENTS, {"id": e.segment_id}, changed)]
        case SegmentDeleted() as e:
            return [Delete(SEGMENTS, {"id": e.segment_id})]
        case _:
            return []


PROJECTION = Projection(
    name="segments",
    mode="inline",
    tables=(SEGMENTS,),
    writes=writes,
    handles=frozenset({SegmentCreated, SegmentDeleted, SegmentUpdated}),
)
