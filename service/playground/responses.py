"""Unleash's playgroundResponseSchema and advancedPlaygroundResponseSchema: each flag's answer
for a context (isEnabled, variant: what an SDK gets), and why: each strategy's result with the
result of each of its constraints and segments (`unknown` where the playground cannot say:
a strategy that is off, or of a type only an application knows)."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from service.client.responses import Override, Payload
from service.playground.commands import EvaluateAdvancedPlayground, EvaluatePlayground

Unknown = Literal["unknown"]


class PlaygroundConstraint(
    msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True
):
    """A constraint as the strategy has it, with `result`: whether the context meets it."""

    context_name: str
    operator: str
    values: list[str]
    inverted: bool
    case_insensitive: bool
    value: str | None = None
    result: bool


class PlaygroundSegment(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    id: int
    result: bool  # every one of its constraints is met
    constraints: list[PlaygroundConstraint]


class ShownVariant(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """A variant a flag or a strategy has (a strategy's variants have no overrides)."""

    name: str
    weight: int
    weight_type: str
    stickiness: str
    payload: Payload | None = None
    overrides: list[Override] | None = None


class StrategyVariantShown(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    name: str
    enabled: bool
    payload: Payload | None = None


class StrategyResult(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """`variant` and `variants`: for a strategy with variants, the one the context gets."""

    enabled: bool | Unknown
    evaluation_status: Literal["complete", "incomplete", "unevaluated"]
    variant: StrategyVariantShown | None = None
    variants: list[ShownVariant] | None = None


class StrategyLinks(msgspec.Struct, frozen=True, kw_only=True):
    edit: str


class PlaygroundStrategy(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    name: str
    id: str
    title: str | None = None
    disabled: bool
    parameters: dict[str, str]
    result: StrategyResult
    constraints: list[PlaygroundConstraint]
    segments: list[PlaygroundSegment]
    links: StrategyLinks


class PlaygroundStrategies(msgspec.Struct, frozen=True, kw_only=True):
    """`result`: some strategy is met (true), or none is but one may be (unknown)."""

    result: bool | Unknown
    data: list[PlaygroundStrategy]


class FeatureVariant(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    name: str
    enabled: bool
    payload: Payload | None = None
    feature_enabled: bool


class PlaygroundFeature(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """`isEnabled` and `variant`: the answer of Unleash's engine (yggdrasil), as SDKs get it;
    `variants`: those of the strategy that decided, else the flag's."""

    name: str
    project_id: str
    strategies: PlaygroundStrategies
    is_enabled_in_current_environment: bool
    is_enabled: bool
    has_unsatisfied_dependency: bool
    variant: FeatureVariant
    variants: list[ShownVariant]


class PlaygroundResponse(msgspec.Struct, frozen=True, kw_only=True):
    """POST /api/admin/playground: the request, and every flag in name order."""

    input: EvaluatePlayground
    features: list[PlaygroundFeature]


class AdvancedEnvironmentFeature(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A flag's answer in one environment for one combination of the context's values."""

    name: str
    project_id: str
    environment: str
    context: dict[str, Any]
    strategies: PlaygroundStrategies
    is_enabled_in_current_environment: bool
    is_enabled: bool
    has_unsatisfied_dependency: bool
    variant: FeatureVariant
    variants: list[ShownVariant]


class AdvancedFeature(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    name: str
    project_id: str
    environments: dict[str, list[AdvancedEnvironmentFeature]]


class AdvancedPlaygroundResponse(msgspec.Struct, frozen=True, kw_only=True):
    """POST /api/admin/playground/advanced: the request, and every flag in name order with
    its answers by environment."""

    input: EvaluateAdvancedPlayground
    features: list[AdvancedFeature]
