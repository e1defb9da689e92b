"""Async read model `activity_daily`: how many events each actor caused per UTC day, under
the actor's name (`"[erased]"` once an erased person's: PersonalDataErased)."""

from __future__ import annotations

from datetime import UTC
from typing import TYPE_CHECKING

from eventlog.events.privacy import PersonalDataErased
from eventlog.privacy.crypto import PLACEHOLDER
from projections.base import Projection
from projections.writes import Count, Table, Update, Write

if TYPE_CHECKING:
    from eventlog.codec import RecordedEvent

ACTIVITY_DAILY = Table("activity_daily", ("day", "actor_kind", "actor_id"), keyed_only=True)


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
    counted: list[Write] = [Count(ACTIVITY_DAILY, row, counter="events", guard="last_position")]
    if isinstance(erased := recorded.event, PersonalDataErased):
        # The person's name, counted under their actor id, reads as their erased events do.
        person = {"actor_kind": "user", "actor_id": f"user:{erased.person_id}"}
        counted.append(Update(ACTIVITY_DAILY, person, {"actor_name": PLACEHOLDER}))
    return counted


PROJECTION = Projection(
    name="activity_daily",
    mode="async",
    tables=(ACTIVITY_DAILY,),
    writes=writes,
    handles=None,
    reads_event=frozenset({PersonalDataErased}),
    reads_metadata=True,
)
