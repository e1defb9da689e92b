"""Async read model `activity_daily`: how many events each actor caused per UTC day."""

from __future__ import annotations

from datetime import UTC
from typing import TYPE_CHECKING

from projections.base import Projection
from projections.writes import Count, Table, Write

if TYPE_CHECKING:
    from service.codec import RecordedEvent

ACTIVITY_DAILY = Table("activity_daily", ("day", "actor_kind", "actor_id"))


def writes(recorded: RecordedEvent) -> list[Write]:
    """Idempotent: a row only counts an event beyond the last position it counted."""
    meta = recorded.metadata
    row = {
        "day": at.date()
        if (at := recorded.recorded_at).tzinfo is UTC
        else at.astimezone(UTC).date(),
        "actor_kind": meta.actor_kind,
        "actor_id": meta.actor_id,
        "actor_name": meta.actor_name,
        "last_position": recorded.position,
    }
    return [Count(ACTIVITY_DAILY, row, counter="events", guard="last_position")]


PROJECTION = Projection(
    name="activity_daily",
    mode="async",
    tables=(ACTIVITY_DAILY,),
    writes=writes,
    handles=None,
    reads_event=False,
    reads_metadata=True,
)
