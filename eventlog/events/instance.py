"""Stored events of the instance's own settings (stream `setting/<Unleash's setting id>`):
maintenance mode (`maintenance.mode`) and the frontend API's CORS origins (`unleash.frontend`)."""

from __future__ import annotations

from typing import ClassVar

from eventlog.events.base import Event


class MaintenanceModeSet(Event, frozen=True, kw_only=True, tag="MaintenanceModeSet"):
    """Maintenance mode is on (`enabled`: the admin API refuses changes) or off from now on."""

    enabled: bool


class FrontendApiOriginsSet(Event, frozen=True, kw_only=True, tag="FrontendApiOriginsSet"):
    """The origins whose pages may call the frontend API from now on ("*": any), replacing
    the FRONTEND_API_ORIGINS setting of every replica."""

    not_personal: ClassVar[tuple[str, ...]] = ("origins",)

    origins: list[str]
