"""Read model `addons`: each integration's configuration, its secrets sealed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from eventlog.events.addons import AddonCreated, AddonDeleted, AddonUpdated
from projections.base import Projection
from projections.writes import Delete, Insert, Table, Update, Write

if TYPE_CHECKING:
    from eventlog.codec import RecordedEvent

ADDONS = Table("addons", ("id",))


def _json(value: dict[str, Any]) -> str:
    """A jsonb column's text, its keys in order."""
    return msgspec.json.encode(dict(sorted(value.items()))).decode()


def _configuration(e: AddonCreated | AddonUpdated) -> dict[str, Any]:
    """The columns both events set: the integration's whole configuration."""
    return {
        "description": e.description,
        "enabled": e.enabled,
        "parameters": _json(e.parameters),
        "sealed": _json(e.sealed),
        "events": e.events,
        "projects": e.projects,
        "environments": e.environments,
    }


def writes(recorded: RecordedEvent) -> list[Write]:
    match recorded.event:
        case AddonCreated() as e:
            row = {"id": e.addon_id, "provider": e.provider, "created_at": e.created_at}
            return [Insert(ADDONS, row | _configuration(e))]
        case AddonUpdated() as e:
            return [Update(ADDONS, {"id": e.addon_id}, _configuration(e))]
        case AddonDeleted() as e:
            return [Delete(ADDONS, {"id": e.addon_id})]
        case _:
            return []


PROJECTION = Projection(
    name="addons",
    mode="inline",
    tables=(ADDONS,),
    writes=writes,
    handles=frozenset({AddonCreated, AddonUpdated, AddonDeleted}),
)
