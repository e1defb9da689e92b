"""Response bodies of the integration routes (Unleash's addonSchema, addonsSchema,
addonTypeSchema, integrationEventsSchema), built from read-model rows."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from eventlog.events.addons import ParameterValue
from service.addons import domain
from service.addons.providers import Provider

if TYPE_CHECKING:
    import asyncpg

_decode_parameters = msgspec.json.Decoder(dict[str, ParameterValue])
_decode_sealed = msgspec.json.Decoder(dict[str, str])
_decode_any = msgspec.json.Decoder()


class AddonAnswer(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """One integration. Secret parameters read `*****`; the signing secret is shown in plain
    text once, in the answer that creates the integration (when it was generated here)."""

    id: int
    provider: str
    description: str | None
    enabled: bool
    parameters: dict[str, ParameterValue]
    events: list[str]
    projects: list[str]
    environments: list[str]
    created_at: datetime

    @classmethod
    def from_row(cls, row: asyncpg.Record, *, signing_secret: str | None = None) -> AddonAnswer:
        return cls(
            id=row["id"],
            provider=row["provider"],
            description=row["description"],
            enabled=row["enabled"],
            parameters=domain.shown_parameters(
                row["provider"],
                _decode_parameters.decode(row["parameters"]),
                _decode_sealed.decode(row["sealed"]),
                signing_secret=signing_secret,
            ),
            events=list(row["events"]),
            projects=list(row["projects"]),
            environments=list(row["environments"]),
            created_at=row["created_at"],
        )


class AddonList(msgspec.Struct, frozen=True, kw_only=True):
    """GET /api/admin/addons: the integrations and the providers one may configure."""

    addons: list[AddonAnswer]
    providers: list[Provider]


class Delivery(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """One of an integration's events (Unleash's integrationEventSchema): what was sent for an
    event of the log, when, and what came back. `id` is a string, as Unleash's (a bigint).
    `event` is read from the log when shown, so a person erased since reads `"[erased]"`."""

    id: str
    integration_id: int
    created_at: datetime
    state: Literal["success", "failed", "successWithErrors"]
    state_details: str
    event: dict[str, Any]
    details: dict[str, Any]

    @classmethod
    def from_row(cls, row: asyncpg.Record, event: dict[str, Any]) -> Delivery:
        """event: the event at the row's position, as the event log shows it now."""
        return cls(
            id=str(row["id"]),
            integration_id=row["addon_id"],
            created_at=row["created_at"],
            state=row["state"],
            state_details=row["state_details"],
            event=event,
            details=_decode_any.decode(row["details"]),
        )


class DeliveryList(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """GET /api/admin/addons/{id}/events, newest first."""

    integration_events: list[Delivery]
