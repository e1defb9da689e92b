"""Response bodies of the context field routes (Unleash's contextFieldSchema,
contextFieldsSchema and contextFieldStrategiesSchema), built here and only here."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    import asyncpg

    from service.context.domain import Field


class LegalValue(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """`description` is left out when the value has none (Unleash's legalValueSchema)."""

    value: str
    description: str | None = None


class ContextField(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A field as GET of one and its creation answer show it; `createdAt` null for a built-in
    field (it came with the service)."""

    name: str
    description: str | None
    stickiness: bool
    sort_order: int
    legal_values: list[LegalValue]
    created_at: datetime | None

    @classmethod
    def of(cls, field: Field) -> ContextField:
        return cls(
            name=field.name,
            description=field.description,
            stickiness=field.stickiness,
            sort_order=field.sort_order,
            legal_values=_legal_values(field),
            created_at=field.created_at,
        )


class ListedContextField(ContextField, frozen=True, kw_only=True, rename="camel"):
    """A field in the list, with how many projects and flags have strategies whose
    constraints name it."""

    used_in_projects: int
    used_in_features: int

    @classmethod
    def listed(cls, field: Field, usage: tuple[int, int] | None) -> ListedContextField:
        features, projects = usage or (0, 0)
        return cls(
            name=field.name,
            description=field.description,
            stickiness=field.stickiness,
            sort_order=field.sort_order,
            legal_values=_legal_values(field),
            created_at=field.created_at,
            used_in_projects=projects,
            used_in_features=features,
        )


def _legal_values(field: Field) -> list[LegalValue]:
    return [LegalValue(value=v.value, description=v.description) for v in field.legal_values]


class ConstrainedStrategy(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    id: str
    project_id: str
    feature_name: str
    strategy_name: str
    environment: str

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> ConstrainedStrategy:
        return cls(
            id=row["id"],
            project_id=row["project"],
            feature_name=row["feature_name"],
            strategy_name=row["name"],
            environment=row["environment"],
        )


class ConstrainedStrategies(msgspec.Struct, frozen=True, kw_only=True):
    strategies: list[ConstrainedStrategy]
