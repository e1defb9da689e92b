"""Async read model `feature_lead_times`: when each flag was first switched on in each
environment (its first FeatureEnvironmentEnabled there), the start of a project's lead time to
production. Async, because an event's time is its commit's, which the log's global section
gives after the inline projections ran. A deleted flag's times go with it: a flag created
later with its name starts afresh."""

from __future__ import annotations

from typing import TYPE_CHECKING

from eventlog.events.features import FeatureDeleted, FeatureEnvironmentEnabled
from projections.base import Projection
from projections.writes import Delete, Insert, Table, Write

if TYPE_CHECKING:
    from eventlog.codec import RecordedEvent

FEATURE_LEAD_TIMES = Table("feature_lead_times", ("feature_name", "environment"), keyed_only=True)


def writes(recorded: RecordedEvent) -> list[Write]:
    match recorded.event:
        case FeatureEnvironmentEnabled() as e:
            row = {
                "feature_name": e.name,
                "environment": e.environment,
                "enabled_at": recorded.recorded_at,
            }
            return [Insert(FEATURE_LEAD_TIMES, row)]  # a later enabling keeps the first
        case FeatureDeleted() as e:
            return [Delete(FEATURE_LEAD_TIMES, {"feature_name": e.name})]
        case _:
            return []


PROJECTION = Projection(
    name="lead_times",
    mode="async",
    tables=(FEATURE_LEAD_TIMES,),
    writes=writes,
    handles=frozenset({FeatureEnvironmentEnabled, FeatureDeleted}),
)
