"""Decisions on the instance's settings. Pure, no I/O."""

from __future__ import annotations

from typing import Final

from eventlog.events.instance import FrontendApiOriginsSet, MaintenanceModeSet
from service.errors import NotFound, ValidationError
from service.settings import is_origin

SETTING_STREAM: Final = "setting"
MAINTENANCE: Final = (SETTING_STREAM, "maintenance.mode")
FRONTEND: Final = (SETTING_STREAM, "unleash.frontend")


def set_maintenance(enabled: bool, *, current: bool) -> MaintenanceModeSet | None:  # noqa: FBT001 - the body's one field
    """None: maintenance mode is that already, and nothing is recorded (Unleash records a
    setting-updated each time)."""
    return None if enabled == current else MaintenanceModeSet(enabled=enabled)


def set_origins(
    origins: list[str] | None, *, current: tuple[str, ...] | None
) -> FrontendApiOriginsSet | None:
    """`origins` None: the body named none, which Unleash answers with 404. Each is "*" or an
    origin as the Origin header carries it (Unleash's rule and message). `current`: the
    origins set before (None: never set, FRONTEND_API_ORIGINS holds). None: they are those
    already, and nothing is recorded."""
    if origins is None:
        raise NotFound("Could not find the requested resource")
    for origin in origins:
        if origin != "*" and not is_origin(origin):
            raise ValidationError(f"Invalid origin: {origin}")
    if current is not None and tuple(origins) == current:
        return None
    return FrontendApiOriginsSet(origins=origins)
