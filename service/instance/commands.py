"""Request bodies of /api/admin/maintenance and /api/admin/ui-config, with the API's limits."""

from __future__ import annotations

from typing import Annotated, ClassVar, Final

import msgspec

# An origin is scheme://host[:port] (a host name is 253 characters at most) or "*"; which
# texts are origins is checked by domain.set_origins, with Unleash's message.
MAX_ORIGINS: Final = 100
Origin = Annotated[str, msgspec.Meta(max_length=300)]
Origins = Annotated[list[Origin], msgspec.Meta(max_length=MAX_ORIGINS)]


class ToggleMaintenance(msgspec.Struct, frozen=True, kw_only=True):
    """POST /api/admin/maintenance (Unleash's toggleMaintenanceSchema)."""

    example: ClassVar[dict[str, object]] = {"enabled": True}

    enabled: bool


class SetCors(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """POST /api/admin/ui-config/cors (Unleash's setCorsSchema): the origins whose pages may
    call the frontend API. Left out, Unleash answers 404, and so does this."""

    example: ClassVar[dict[str, object]] = {"frontendApiOrigins": ["https://app.example.com"]}

    frontend_api_origins: Origins | None = None


class FrontendSettings(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    frontend_api_origins: Origins


class SetUiConfig(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """POST /api/admin/ui-config (Unleash's setUiConfigSchema, deprecated for ./cors): the
    same origins, nested. Without `frontendSettings`, Unleash answers 404, and so does this."""

    example: ClassVar[dict[str, object]] = {
        "frontendSettings": {"frontendApiOrigins": ["https://app.example.com"]}
    }

    frontend_settings: FrontendSettings | None = None
