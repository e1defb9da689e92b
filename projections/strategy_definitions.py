"""Read models `strategy_definitions` (the custom strategy types) and `strategy_deprecations`
(whether a type, built in or custom, was deprecated or reactivated last).

The built-in types are constants of the service (service/strategies/builtins.py), as Unleash
seeds them; a row of `strategy_deprecations` overrides the flag a built-in type comes with
(userWithId comes deprecated). No row there: as the type came (custom ones: active)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from eventlog.events.strategy_definitions import (
    StrategyDefinitionCreated,
    StrategyDefinitionDeleted,
    StrategyDefinitionDeprecated,
    StrategyDefinitionReactivated,
    StrategyDefinitionUpdated,
    StrategyParameter,
)
from projections.base import Projection
from projections.writes import Delete, Insert, Table, Update, Write

if TYPE_CHECKING:
    from collections.abc import Sequence

    from eventlog.codec import RecordedEvent

STRATEGY_DEFINITIONS = Table("strategy_definitions", ("name",), keyed_only=True)
STRATEGY_DEPRECATIONS = Table("strategy_deprecations", ("name",), keyed_only=True)


class ParameterColumn(msgspec.Struct, frozen=True, kw_only=True):
    """One parameter in the `parameters` column: as the API shows it (Unleash's names)."""

    name: str
    type: str
    description: str
    required: bool


_encoder = msgspec.json.Encoder()


def parameters(items: Sequence[StrategyParameter]) -> str:
    return _encoder.encode(
        [
            ParameterColumn(
                name=p.name, type=p.type, description=p.description, required=p.required
            )
            for p in items
        ]
    ).decode()


def writes(recorded: RecordedEvent) -> list[Write]:
    match recorded.event:
        case StrategyDefinitionCreated() as e:
            row: dict[str, object] = {
                "name": e.name,
                "title": e.title,
                "description": e.description,
                "parameters": parameters(e.parameters),
                "created_at": e.created_at,
            }
            return [Insert(STRATEGY_DEFINITIONS, row)]
        case StrategyDefinitionUpdated() as e:
            changed = {
                "title": e.title,
                "description": e.description,
                "parameters": parameters(e.parameters),
            }
            return [Update(STRATEGY_DEFINITIONS, {"name": e.name}, changed)]
        case StrategyDefinitionDeprecated(name=name) | StrategyDefinitionReactivated(name=name):
            deprecated = isinstance(recorded.event, StrategyDefinitionDeprecated)
            state = {"name": name, "deprecated": deprecated}
            return [Insert(STRATEGY_DEPRECATIONS, state, update=("deprecated",))]
        case StrategyDefinitionDeleted(name=name):
            return [
                Delete(STRATEGY_DEFINITIONS, {"name": name}),
                Delete(STRATEGY_DEPRECATIONS, {"name": name}),
            ]
        case _:
            return []


PROJECTION = Projection(
    name="strategy_definitions",
    mode="inline",
    tables=(STRATEGY_DEFINITIONS, STRATEGY_DEPRECATIONS),
    writes=writes,
    handles=frozenset(
        {
            StrategyDefinitionCreated,
            StrategyDefinitionUpdated,
            StrategyDefinitionDeprecated,
            StrategyDefinitionReactivated,
            StrategyDefinitionDeleted,
        }
    ),
)
