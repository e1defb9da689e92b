"""Request bodies of /api/admin/feature-types, with the API's limits."""

from __future__ import annotations

from typing import Annotated, ClassVar

import msgspec

# Days, as Unleash takes them (an integer PostgreSQL holds).
LifetimeDays = Annotated[int, msgspec.Meta(ge=0, le=2_147_483_647)]


class UpdateLifetime(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """PUT /api/admin/feature-types/:id/lifetime (Unleash's updateFeatureTypeLifetimeSchema):
    null or 0, flags of the type are never potentially stale."""

    example: ClassVar[dict[str, object]] = {"lifetimeDays": 7}

    lifetime_days: LifetimeDays | None
