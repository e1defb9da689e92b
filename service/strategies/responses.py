"""Response bodies of the strategy type routes (Unleash's strategySchema and
strategiesSchema), built here and only here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import msgspec

if TYPE_CHECKING:
    from service.strategies.domain import StrategyType as State


class Parameter(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    type: str
    description: str
    required: bool


class StrategyType(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """`editable` false for the built-in types (Unleash's answer), whose `displayName` is the
    name the UI shows; a custom type has none (null)."""

    display_name: str | None
    name: str
    editable: bool
    description: str | None
    parameters: list[Parameter]
    deprecated: bool
    title: str | None

    @classmethod
    def of(cls, state: State) -> StrategyType:
        return cls(
            display_name=state.display_name,
            name=state.name,
            editable=not state.built_in,
            description=state.description,
            parameters=[
                Parameter(name=p.name, type=p.type, description=p.description, required=p.required)
                for p in state.parameters
            ],
            deprecated=state.deprecated,
            title=state.title,
        )


class StrategyTypeList(msgspec.Struct, frozen=True, kw_only=True):
    version: Literal[1]
    strategies: list[StrategyType]
