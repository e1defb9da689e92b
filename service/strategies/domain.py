"""Strategy types: pure decisions, no I/O (docs/behavior.md, "Strategy types").

Each command has one function here: it takes the request and the state the handler loaded
under locks (None where the type does not exist), checks every rule in the order the API
reports them, and returns the events to append (none when nothing changes).
"""

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
from service.errors import Conflict, InvalidOperation, NameExists, NotFound, ValidationError
from service.names import validate_name

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

    from service.strategies.commands import CreateStrategyType, Parameter, UpdateStrategyType


class StrategyType(msgspec.Struct, frozen=True, kw_only=True):
    """A strategy type as it is now: a built-in one (its constant, with its deprecation as
    events left it) or a custom one (its read-model rows)."""

    name: str
    display_name: str | None
    title: str | None
    description: str | None
    parameters: list[StrategyParameter]
    deprecated: bool
    built_in: bool


def stream(name: str) -> tuple[str, str]:
    return ("strategy", name)


def missing(name: str) -> NotFound:
    return NotFound(f"Could not find strategy with name {name}")


def _parameters(items: Sequence[Parameter]) -> list[StrategyParameter]:
    seen: set[str] = set()
    for i, p in enumerate(items):
        if p.name in seen:
            raise ValidationError(
                f"Parameter {p.name} is listed twice - at `$.parameters[{i}].name`"
            )
        seen.add(p.name)
    return [
        StrategyParameter(
            name=p.name, type=p.type, description=p.description or "", required=bool(p.required)
        )
        for p in items
    ]


def _editable(name: str, current: StrategyType | None) -> StrategyType:
    if current is None:
        raise missing(name)
    if current.built_in:
        raise InvalidOperation(f"Cannot edit strategy {name}: it is built in")
    return current


def create_strategy_type(
    body: CreateStrategyType, *, current: StrategyType | None, now: datetime
) -> StrategyDefinitionCreated:
    """current: the type already named so (built in or custom), else None."""
    validate_name(body.name)
    parameters = _parameters(body.parameters)
    if current is not None:
        raise NameExists(f"Strategy with name {body.name} already exists")
    return StrategyDefinitionCreated(
        name=body.name,
        title=body.title,
        description=body.description,
        parameters=parameters,
        created_at=now,
    )


def update_strategy_type(
    name: str, body: UpdateStrategyType, *, current: StrategyType | None
) -> StrategyDefinitionUpdated:
    parameters = _parameters(body.parameters)
    kept = _editable(name, current)
    return StrategyDefinitionUpdated(
        name=name,
        title=kept.title if body.title is None else body.title,
        description=kept.description if body.description is None else body.description,
        parameters=parameters,
    )


def deprecate_strategy_type(
    name: str, *, current: StrategyType | None
) -> StrategyDefinitionDeprecated | None:
    """Built-in types too, as in Unleash; a type in use too (its strategies keep working, the
    UI stops offering it). Already deprecated: nothing changes."""
    if current is None:
        raise missing(name)
    return None if current.deprecated else StrategyDefinitionDeprecated(name=name)


def reactivate_strategy_type(
    name: str, *, current: StrategyType | None
) -> StrategyDefinitionReactivated | None:
    if current is None:
        raise missing(name)
    return StrategyDefinitionReactivated(name=name) if current.deprecated else None


def delete_strategy_type(
    name: str, *, current: StrategyType | None, used_by: int
) -> StrategyDefinitionDeleted:
    """used_by: how many strategies of flags (archived ones included, in any environment) are
    of this type. Unlike Unleash, a type in use is never deleted."""
    _editable(name, current)
    if used_by:
        raise Conflict(
            f"Strategy {name} is used by {used_by} strategy(ies) of flags; remove them first"
        )
    return StrategyDefinitionDeleted(name=name)
