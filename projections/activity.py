"""Async read model `activity_daily`: how many events each actor caused per UTC day."""

from __future__ import annotations

from typing import TYPE_CHECKING

from projections.base import Projection

if TYPE_CHECKING:
    from service.codec import RecordedEvent
    from service.connections import Conn

# Idempotent: a row only counts an event whose position is beyond the last one it counted.
COUNT_EVENT = """
INSERT INTO activity_daily (day, actor_kind, actor_id, actor_name, events, last_position)
VALUES (($1::timestamptz AT TIME ZONE 'UTC')::date, $2, $3, $4, 1, $5)
ON CONFLICT (day, actor_kind, actor_id) DO UPDATE
SET events = activity_daily.events + 1,
    actor_name = excluded.actor_name,
    last_position = excluded.last_position
WHERE activity_daily.last_position < excluded.last_position
"""


async def apply(conn: Conn, recorded: RecordedEvent) -> None:
    meta = recorded.metadata
    await conn.execute(
        COUNT_EVENT,
        recorded.recorded_at,
        meta.actor_kind,
        meta.actor_id,
        meta.actor_name,
        recorded.position,
    )


PROJECTION = Projection(
    name="activity_daily",
    mode="async",
    tables=("activity_daily",),
    apply=apply,
)
