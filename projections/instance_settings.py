"""Read models of the instance's own settings, one row each once set: `maintenance_mode`
(whether the admin API refuses changes) and `frontend_settings` (the frontend API's CORS
origins, which replace FRONTEND_API_ORIGINS once set). Keyed by Unleash's setting ids, which
are also their streams' keys."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from eventlog.events.instance import FrontendApiOriginsSet, MaintenanceModeSet
from projections.base import Projection
from projections.writes import Insert, Table, Write

if TYPE_CHECKING:
    from eventlog.codec import RecordedEvent

MAINTENANCE_MODE = Table("maintenance_mode", ("id",), keyed_only=True)
FRONTEND_SETTINGS = Table("frontend_settings", ("id",), keyed_only=True)
MAINTENANCE_ID: Final = "maintenance.mode"
FRONTEND_ID: Final = "unleash.frontend"


def writes(recorded: RecordedEvent) -> list[Write]:
    match recorded.event:
        case MaintenanceModeSet(enabled=enabled):
            row = {"id": MAINTENANCE_ID, "enabled": enabled}
            return [Insert(MAINTENANCE_MODE, row, update=("enabled",))]
        case FrontendApiOriginsSet(origins=origins):
            row = {"id": FRONTEND_ID, "frontend_api_origins": origins}
            return [Insert(FRONTEND_SETTINGS, row, update=("frontend_api_origins",))]
        case _:
            return []


PROJECTION = Projection(
    name="instance_settings",
    mode="inline",
    by_stream=True,
    tables=(MAINTENANCE_MODE, FRONTEND_SETTINGS),
    writes=writes,
    handles=frozenset({MaintenanceModeSet, FrontendApiOriginsSet}),
)
