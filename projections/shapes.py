"""The JSON kept in read-model jsonb columns (constraints, variants): camelCase, as the API
shows it, so reporting queries and the responses read it as it is. Built from event shapes."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from collections.abc import Sequence

    from eventlog.events.features import Constraint, Payload, StrategyVariant, Variant


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


# Built field by field (a rebuild makes hundreds of thousands of these; msgspec.convert is
# slower, most of it to look the target type up again on every call).


def constraints(items: Sequence[Constraint]) -> str:
    if not items:
        return "[]"
    return _json(
        [
            ConstraintColumn(
                context_name=c.context_name,
                operator=c.operator,
                case_insensitive=c.case_insensitive,
                inverted=c.inverted,
                values=c.values,
                value=c.value,
            )
            for c in items
        ]
    )


def strategy_variants(items: Sequence[StrategyVariant]) -> str:
    if not items:
        return "[]"
    return _json(
        [
            StrategyVariantColumn(
                name=v.name,
                weight=v.weight,
                weight_type=v.weight_type,
                stickiness=v.stickiness,
                payload=_payload(v.payload),
            )
            for v in items
        ]
    )


def variants(items: Sequence[Variant]) -> str:
    if not items:
        return "[]"
    return _json(
        [
            VariantColumn(
                name=v.name,
                weight=v.weight,
                weight_type=v.weight_type,
                stickiness=v.stickiness,
                payload=_payload(v.payload),
                overrides=[
                    OverrideColumn(context_name=o.context_name, values=o.values)
                    for o in v.overrides
                ],
            )
            for v in items
        ]
    )


def _payload(payload: Payload | None) -> PayloadColumn | None:
    return None if payload is None else PayloadColumn(type=payload.type, value=payload.value)


def _json(columns: list[msgspec.Struct]) -> str:
    return _encoder.encode(columns).decode()
