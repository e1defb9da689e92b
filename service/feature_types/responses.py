"""Response bodies of /api/admin/feature-types (Unleash's featureTypeSchema and
featureTypesSchema), built here and only here."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    import asyncpg


class FeatureType(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    id: str
    name: str
    description: str
    lifetime_days: int | None

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> FeatureType:
        return cls(
            id=row["id"],
            name=row["name"],
            description=row["description"],
            lifetime_days=row["lifetime_days"],
        )


class FeatureTypeList(msgspec.Struct, frozen=True, kw_only=True):
    version: int = 1
    types: list[FeatureType]
