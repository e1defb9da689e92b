"""Stored events of integrations, Unleash's addons (stream `addon/<id>`).

A secret parameter (a token, an authorization header, the signing secret) is in no event as
it was given: `sealed` holds it encrypted with the integration's own data key, which is kept
outside the log (table `addon_keys`, wrapped by the master key) and destroyed when the
integration is deleted (docs/integrations.md, "Secrets")."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from eventlog.events.base import Event

ParameterValue = str | int | float | bool


class AddonCreated(Event, frozen=True, kw_only=True, tag="AddonCreated"):
    """An integration was configured. `parameters`: its plain parameters as given; `sealed`:
    its secret ones (the provider's sensitive parameters and the signing secret), each the
    base64 of AES-256-GCM under the integration's key. Empty `projects` or `environments`
    (or `*`) mean all."""

    not_personal: ClassVar[tuple[str, ...]] = (
        "provider",
        "description",
        "parameters",
        "sealed",
        "events",
        "projects",
        "environments",
    )

    addon_id: int
    provider: str
    description: str | None
    enabled: bool
    parameters: dict[str, ParameterValue]
    sealed: dict[str, str]
    events: list[str]
    projects: list[str]
    environments: list[str]
    created_at: datetime


class AddonUpdated(Event, frozen=True, kw_only=True, tag="AddonUpdated"):
    """An integration's configuration after a change, whole (the provider never changes)."""

    not_personal: ClassVar[tuple[str, ...]] = (
        "description",
        "parameters",
        "sealed",
        "events",
        "projects",
        "environments",
    )

    addon_id: int
    description: str | None
    enabled: bool
    parameters: dict[str, ParameterValue]
    sealed: dict[str, str]
    events: list[str]
    projects: list[str]
    environments: list[str]


class AddonDeleted(Event, frozen=True, kw_only=True, tag="AddonDeleted"):
    """An integration was removed; its key went with it, so its sealed secrets read as
    nothing from now on."""

    addon_id: int
