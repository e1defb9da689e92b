"""Events of the segment stream (`segment/<id>`)."""

from __future__ import annotations

from datetime import datetime

from service.events import Event
from service.features.commands import Constraint


class SegmentCreated(Event, frozen=True, kw_only=True, tag="SegmentCreated"):
    """A segment exists; strategies may reference it by id."""

    segment_id: int
    name: str
    description: str | None
    constraints: list[Constraint]
    created_at: datetime


class SegmentUpdated(Event, frozen=True, kw_only=True, tag="SegmentUpdated"):
    """A segment was replaced as a whole (same id)."""

    segment_id: int
    name: str
    description: str | None
    constraints: list[Constraint]


class SegmentDeleted(Event, frozen=True, kw_only=True, tag="SegmentDeleted"):
    """A segment no strategy used any more was deleted."""

    segment_id: int
    name: str
