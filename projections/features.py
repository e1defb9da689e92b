"""Read model `features`: one row per flag ever created, archived ones included."""

from __future__ import annotations

from typing import TYPE_CHECKING

from projections.base import Projection
from service.features.events import FeatureArchived, FeatureCreated, FeatureRevived

if TYPE_CHECKING:
    from service.db import Conn
    from service.events import RecordedEvent

INSERT_FEATURE = """
INSERT INTO features (name, project, type, description, impression_data, created_at,
                      lifecycle_stage, lifecycle_entered_at)
VALUES ($1, $2, $3, $4, $5, $6, 'initial', $6)
ON CONFLICT (name) DO NOTHING
"""
ARCHIVE = """
UPDATE features SET archived_at = $2, lifecycle_stage = 'archived', lifecycle_entered_at = $2
WHERE name = $1
"""
REVIVE = """
UPDATE features SET archived_at = NULL, lifecycle_stage = $3, lifecycle_entered_at = $2
WHERE name = $1
"""


async def apply(conn: Conn, recorded: RecordedEvent) -> None:
    match recorded.event:
        case FeatureCreated() as e:
            await conn.execute(
                INSERT_FEATURE,
                e.name,
                e.project,
                e.feature_type,
                e.description,
                e.impression_data,
                e.created_at,
            )
        case FeatureArchived() as e:
            await conn.execute(ARCHIVE, e.name, e.archived_at)
        case FeatureRevived() as e:
            await conn.execute(REVIVE, e.name, e.revived_at, e.lifecycle_stage)
        case _:
            pass


PROJECTION = Projection(
    name="features",
    mode="inline",
    tables=("features",),
    handles=frozenset(c.type_name() for c in (FeatureCreated, FeatureArchived, FeatureRevived)),
    apply=apply,
)
