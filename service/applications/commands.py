"""Request bodies and query parameters of /api/admin/metrics/applications, with Unleash's
limits: its client_applications columns are varchar(255). Unknown fields are ignored (Unleash
strips them; `appName` in the body is the path's, which wins)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Final

import msgspec

MAX_TEXT: Final = 255
Text = Annotated[str, msgspec.Meta(max_length=MAX_TEXT)]
# The list's page (Unleash's normalisation: a limit outside 1..1000 is 1000, an offset below
# 0 is 0; sortBy is read, and every value sorts by name, as in Unleash 6.10.1).
DEFAULT_LIMIT: Final = 1000


class SetApplication(msgspec.Struct, frozen=True, kw_only=True):
    """Unleash's createApplicationSchema: each field left out stays as it was; null clears it."""

    example: ClassVar[dict[str, object]] = {
        "description": "The checkout service",
        "url": "https://checkout.example.com",
        "color": "#3D9970",
        "icon": "shopping_cart",
    }

    app_name: str | msgspec.UnsetType = msgspec.field(default=msgspec.UNSET, name="appName")
    description: Text | msgspec.UnsetType | None = msgspec.UNSET
    url: Text | msgspec.UnsetType | None = msgspec.UNSET
    color: Text | msgspec.UnsetType | None = msgspec.UNSET
    icon: Text | msgspec.UnsetType | None = msgspec.UNSET
