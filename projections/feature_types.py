"""Read model `feature_types`: the feature types flags are created with, and the expected
lifetime of each, which decides when a flag of it is potentially stale
(service/features/queries.py, `potentially_stale`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from eventlog.events.feature_types import FeatureTypeDefined, FeatureTypeLifetimeChanged
from projections.base import Projection
from projections.writes import Insert, Table, Update, Write

if TYPE_CHECKING:
    from eventlog.codec import RecordedEvent

FEATURE_TYPES = Table("feature_types", ("id",))


def writes(recorded: RecordedEvent) -> list[Write]:
    match recorded.event:
        case FeatureTypeDefined() as e:
            row = {
                "id": e.feature_type_id,
                "name": e.name,
                "description": e.description,
                "lifetime_days": e.lifetime_days,
                "sort_order": e.sort_order,
            }
            return [Insert(FEATURE_TYPES, row)]
        case FeatureTypeLifetimeChanged() as e:
            changed = {"lifetime_days": e.lifetime_days}
            return [Update(FEATURE_TYPES, {"id": e.feature_type_id}, changed)]
        case _:
            return []


PROJECTION = Projection(
    name="feature_types",
    mode="inline",
    by_stream=True,
    tables=(FEATURE_TYPES,),
    writes=writes,
    handles=frozenset({FeatureTypeDefined, FeatureTypeLifetimeChanged}),
)
