"""Stored events of custom strategy types and of every type's deprecation (stream
`strategy/<name>`). The built-in types are constants of the service, like the rows Unleash
seeds: they have no events of their own but their deprecations and reactivations."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from eventlog.events.base import Declared, Event


class StrategyParameter(Declared, frozen=True, kw_only=True):
    """A parameter a flag's strategy of this type takes: `type` as Unleash names it
    (`string`, `percentage`, `list`, `number`, `boolean`)."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "type", "description")

    name: str
    type: str
    description: str
    required: bool


class StrategyDefinitionCreated(Event, frozen=True, kw_only=True, tag="StrategyDefinitionCreated"):
    """A custom strategy type exists, not deprecated."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "title", "description")

    name: str
    title: str | None
    description: str | None
    parameters: list[StrategyParameter]
    created_at: datetime


class StrategyDefinitionUpdated(Event, frozen=True, kw_only=True, tag="StrategyDefinitionUpdated"):
    """A custom strategy type as it is after an update (every field, changed or not)."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "title", "description")

    name: str
    title: str | None
    description: str | None
    parameters: list[StrategyParameter]


class StrategyDefinitionDeprecated(
    Event, frozen=True, kw_only=True, tag="StrategyDefinitionDeprecated"
):
    """A strategy type (built in or custom) is deprecated: the UI stops offering it."""

    not_personal: ClassVar[tuple[str, ...]] = ("name",)

    name: str


class StrategyDefinitionReactivated(
    Event, frozen=True, kw_only=True, tag="StrategyDefinitionReactivated"
):
    """A deprecated strategy type (built in or custom) is offered again."""

    not_personal: ClassVar[tuple[str, ...]] = ("name",)

    name: str


class StrategyDefinitionDeleted(Event, frozen=True, kw_only=True, tag="StrategyDefinitionDeleted"):
    """A custom strategy type no flag's strategy used was deleted; its name is free again."""

    not_personal: ClassVar[tuple[str, ...]] = ("name",)

    name: str
