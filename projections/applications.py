"""Read model `applications`: what people said of each application (description, URL, colour,
icon) and when they first did. What SDKs report of it is telemetry (schema `telemetry`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from eventlog.events.applications import (
    ApplicationCreated,
    ApplicationDeleted,
    ApplicationUpdated,
)
from projections.base import Projection
from projections.writes import Delete, Insert, Table, Update, Write

if TYPE_CHECKING:
    from eventlog.codec import RecordedEvent

APPLICATIONS = Table("applications", ("app_name",))


def writes(recorded: RecordedEvent) -> list[Write]:
    match recorded.event:
        case ApplicationCreated() as e:
            row = {
                "app_name": e.app_name,
                "description": e.description,
                "url": e.url,
                "color": e.color,
                "icon": e.icon,
                "created_at": e.created_at,
                "updated_at": e.created_at,
            }
            return [Insert(APPLICATIONS, row)]
        case ApplicationUpdated() as e:
            changed = {
                "description": e.description,
                "url": e.url,
                "color": e.color,
                "icon": e.icon,
                "updated_at": e.updated_at,
            }
            return [Update(APPLICATIONS, {"app_name": e.app_name}, changed)]
        case ApplicationDeleted() as e:
            return [Delete(APPLICATIONS, {"app_name": e.app_name})]
        case _:
            return []


PROJECTION = Projection(
    name="applications",
    mode="inline",
    tables=(APPLICATIONS,),
    writes=writes,
    handles=frozenset({ApplicationCreated, ApplicationUpdated, ApplicationDeleted}),
)
