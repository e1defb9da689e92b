"""Async read model `project_activity_daily`: how many events each project recorded per UTC
day, and the time of its last one: a project's `lastUpdatedAt`, its activity by date and its
activity of the last 30 days (GET /api/admin/projects, .../status, .../overview).

Async, because an event's time is its commit's, which the log's global section gives after
the inline projections ran. A project's events are those that name it: every event type with
a `project` (a flag's events) or `project_id` (a project's own) field that always holds one;
a new such type counts without a change here."""

from __future__ import annotations

from datetime import UTC
from typing import TYPE_CHECKING, Final

import msgspec

from eventlog.codec import EVENT_TYPES
from projections.base import Projection
from projections.writes import Count, Table, Write

if TYPE_CHECKING:
    from eventlog.codec import RecordedEvent
    from eventlog.events.base import Event

PROJECT_ACTIVITY_DAILY = Table("project_activity_daily", ("project_id", "day"), keyed_only=True)


def _project_field(cls: type[Event]) -> str | None:
    """The field of an event type that always names its project, if it has one."""
    for field in msgspec.structs.fields(cls):
        if field.name in ("project", "project_id") and field.type is str:
            return field.name
    return None


# Event type -> the field naming its project.
PROJECT_FIELDS: Final = {
    cls: name for cls in EVENT_TYPES.values() if (name := _project_field(cls)) is not None
}


def writes(recorded: RecordedEvent) -> list[Write]:
    """Idempotent: a row only counts an event beyond the last position it counted."""
    field = PROJECT_FIELDS.get(type(recorded.event))
    if field is None:
        return []
    project = getattr(recorded.event, field)
    at = recorded.recorded_at
    row = {
        "project_id": project,
        "day": (at if at.tzinfo is UTC else at.astimezone(UTC)).date(),
        "last_at": at,
        "last_position": recorded.position,
    }
    return [Count(PROJECT_ACTIVITY_DAILY, row, counter="events", guard="last_position")]


PROJECTION = Projection(
    name="project_activity",
    mode="async",
    tables=(PROJECT_ACTIVITY_DAILY,),
    writes=writes,
    handles=frozenset(PROJECT_FIELDS),
)
