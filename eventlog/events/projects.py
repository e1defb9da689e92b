"""Events of the project and environment streams."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from eventlog.events.base import Declared, Event
from eventlog.events.features import (  # noqa: TC001 - msgspec reads the types at runtime
    Constraint,
    StrategyVariant,
)


class EnvironmentCreated(Event, frozen=True, kw_only=True, tag="EnvironmentCreated"):
    """A new environment exists (enabled in no project until a project enables it)."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "environment_type")

    name: str
    environment_type: str
    sort_order: int
    created_at: datetime


class ProjectCreated(Event, frozen=True, kw_only=True, tag="ProjectCreated"):
    """A project exists, with every environment that existed at that moment enabled in it."""

    not_personal: ClassVar[tuple[str, ...]] = ("project_id", "name", "description", "environments")

    project_id: str
    name: str
    description: str | None
    environments: list[str]
    created_at: datetime


class ProjectArchived(Event, frozen=True, kw_only=True, tag="ProjectArchived"):
    """An empty project was archived; no flag can be created in it any more."""

    not_personal: ClassVar[tuple[str, ...]] = ("project_id",)

    project_id: str
    archived_at: datetime


class ProjectEnvironmentEnabled(Event, frozen=True, kw_only=True, tag="ProjectEnvironmentEnabled"):
    """Flags of the project now show this environment."""

    not_personal: ClassVar[tuple[str, ...]] = ("project_id", "environment")

    project_id: str
    environment: str


class ProjectEnvironmentDisabled(
    Event, frozen=True, kw_only=True, tag="ProjectEnvironmentDisabled"
):
    """Flags of the project no longer show this environment (their settings there are kept)."""

    not_personal: ClassVar[tuple[str, ...]] = ("project_id", "environment")

    project_id: str
    environment: str


class EnvironmentSwitched(Event, frozen=True, kw_only=True, tag="EnvironmentSwitched"):
    """An environment was switched on or off for the whole instance (Unleash's "deprecated"
    environments are the ones off: the UI hides them; their flags keep their settings)."""

    not_personal: ClassVar[tuple[str, ...]] = ("name",)

    name: str
    enabled: bool


class EnvironmentSortOrderSet(Event, frozen=True, kw_only=True, tag="EnvironmentSortOrderSet"):
    """The environment's place in the order every list of environments shows."""

    not_personal: ClassVar[tuple[str, ...]] = ("name",)

    name: str
    sort_order: int


class EnvironmentUpdated(Event, frozen=True, kw_only=True, tag="EnvironmentUpdated"):
    """The environment's type and place in the order, as its edit form saved them."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "environment_type")

    name: str
    environment_type: str
    sort_order: int


class DefaultStrategyData(Declared, frozen=True, kw_only=True):
    """What switching a flag on adds in a project's environment where it has no strategy that
    runs (a `flexibleRollout`); its `groupId` "" stands for the flag's name."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "title", "parameters")

    name: str
    title: str | None
    disabled: bool
    constraints: list[Constraint]
    parameters: dict[str, str]
    variants: list[StrategyVariant]
    segments: list[int]


class DefaultStrategySet(Event, frozen=True, kw_only=True, tag="DefaultStrategySet"):
    """The project's environment has this default strategy from now on (none before: the
    built-in gradual rollout to everyone)."""

    not_personal: ClassVar[tuple[str, ...]] = ("project_id", "environment")

    project_id: str
    environment: str
    strategy: DefaultStrategyData
