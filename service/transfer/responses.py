"""Answers of /api/admin/features-batch: an export (Unleash's exportResultSchema) and a check of
an import (importTogglesValidateSchema), each built in one place.

An export is written so that Unleash's own import takes it as well as ours: a field its schema
does not allow to be null (a constraint's `value`, a payload, a legal value's or a tag type's
description) is left out when there is none, as Unleash's export leaves it out."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

if TYPE_CHECKING:
    import asyncpg

    from service.transfer.domain import Item

T = TypeVar("T")
_jsons = msgspec.json.Decoder(list[dict[str, Any]])
_parameters = msgspec.json.Decoder(dict[str, str])


class ExportedConstraint(
    msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True
):
    context_name: str
    operator: str
    case_insensitive: bool
    inverted: bool
    values: list[str]
    value: str | None = None


class ExportedPayload(msgspec.Struct, frozen=True, kw_only=True):
    type: str
    value: str


class ExportedStrategyVariant(
    msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True
):
    name: str
    weight: int
    weight_type: str
    stickiness: str
    payload: ExportedPayload | None = None


class ExportedOverride(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    context_name: str
    values: list[str]


class ExportedVariant(
    msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True
):
    name: str
    weight: int
    weight_type: str
    stickiness: str
    overrides: list[ExportedOverride]
    payload: ExportedPayload | None = None


def _shaped(text: str, shape: type[T]) -> list[T]:
    """A jsonb column (camelCase: projections/shapes.py) as the export's shapes."""
    return [msgspec.convert(item, shape) for item in _jsons.decode(text)]


class ExportedFeature(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    name: str
    description: str | None
    type: str
    project: str
    stale: bool
    impression_data: bool
    archived: bool

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> ExportedFeature:
        return cls(
            name=row["name"],
            description=row["description"],
            type=row["type"],
            project=row["project"],
            stale=row["stale"],
            impression_data=row["impression_data"],
            archived=row["archived"],
        )


class ExportedStrategy(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Unleash's featureStrategySchema as its export writes it, with `sortOrder` (which its
    export leaves out, losing the strategies' order; its import takes it)."""

    name: str
    id: str
    feature_name: str
    title: str | None
    parameters: dict[str, str]
    constraints: list[ExportedConstraint]
    variants: list[ExportedStrategyVariant]
    disabled: bool
    segments: list[int]
    sort_order: int

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> ExportedStrategy:
        return cls(
            name=row["name"],
            id=str(row["id"]),
            feature_name=row["feature_name"],
            title=row["title"],
            parameters=_parameters.decode(row["parameters"]),
            constraints=_shaped(row["constraints"], ExportedConstraint),
            variants=_shaped(row["variants"], ExportedStrategyVariant),
            disabled=row["disabled"],
            segments=list(row["segments"]),
            sort_order=row["sort_order"],
        )


class ExportedEnvironment(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A flag's switch and variants in the environment; `name` is the flag's (Unleash's)."""

    enabled: bool
    feature_name: str
    environment: str
    variants: list[ExportedVariant]
    name: str

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> ExportedEnvironment:
        return cls(
            enabled=row["enabled"],
            feature_name=row["feature_name"],
            environment=row["environment"],
            variants=_shaped(row["variants"], ExportedVariant),
            name=row["feature_name"],
        )


class ExportedLegalValue(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    value: str
    description: str | None = None


class ExportedContextField(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    name: str
    description: str | None
    stickiness: bool
    sort_order: int
    legal_values: list[ExportedLegalValue]


class ExportedTag(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    feature_name: str
    tag_type: str
    tag_value: str


class ExportedSegment(msgspec.Struct, frozen=True, kw_only=True):
    """A segment by id and name only, as Unleash exports it: its constraints stay behind."""

    id: int
    name: str


class ExportedTagType(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    name: str
    description: str | None = None
    icon: str | None = None
    color: str | None = None


class ExportedParent(msgspec.Struct, frozen=True, kw_only=True):
    feature: str
    enabled: bool
    variants: list[str]


class ExportedDependencies(msgspec.Struct, frozen=True, kw_only=True):
    feature: str
    dependencies: list[ExportedParent]


class ExportResult(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The flags and what one environment holds of them, with the context fields, segments
    (by name) and tag types they use: the file an import reads."""

    features: list[ExportedFeature]
    feature_strategies: list[ExportedStrategy]
    feature_environments: list[ExportedEnvironment]
    context_fields: list[ExportedContextField]
    feature_tags: list[ExportedTag]
    segments: list[ExportedSegment]
    tag_types: list[ExportedTagType]
    dependencies: list[ExportedDependencies]


class ValidationItem(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    message: str
    affected_items: list[str]

    @classmethod
    def of(cls, item: Item) -> ValidationItem:
        return cls(message=item.message, affected_items=list(item.affected))


class ImportValidation(msgspec.Struct, frozen=True, kw_only=True):
    """What an import of the file would meet: errors (the import refuses it), warnings, and
    the permissions the caller lacks for it (Unleash's display names)."""

    errors: list[ValidationItem]
    warnings: list[ValidationItem]
    permissions: list[ValidationItem]
