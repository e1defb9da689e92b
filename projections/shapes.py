"""The JSON kept in read-model jsonb columns (constraints, variants): camelCase, as the API
shows it, so reporting queries and the responses read it as it is. Built from event shapes."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from collections.abc import Sequence

    from service.features.events import Constraint, StrategyVariant, Variant


class ConstraintColumn(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    context_name: str
    operator: str
    case_insensitive: bool
    inverted: bool
    values: list[str]
    value: str | None


class PayloadColumn(msgspec.Struct, frozen=True, kw_only=True):
    type: str
    value: str


class StrategyVariantColumn(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    name: str
    weight: int
    weight_type: str
    stickiness: str
    payload: PayloadColumn | None


class OverrideColumn(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    context_name: str
    values: list[str]


class VariantColumn(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    name: str
    weight: int
    weight_type: str
    stickiness: str
    payload: PayloadColumn | None
    overrides: list[OverrideColumn]


_encoder = msgspec.json.Encoder()


def constraints(items: Sequence[Constraint]) -> str:
    return _column(items, list[ConstraintColumn])


def strategy_variants(items: Sequence[StrategyVariant]) -> str:
    return _column(items, list[StrategyVariantColumn])


def variants(items: Sequence[Variant]) -> str:
    return _column(items, list[VariantColumn])


def _column(items: object, shape: type[object]) -> str:
    return _encoder.encode(msgspec.convert(items, shape, from_attributes=True)).decode()
