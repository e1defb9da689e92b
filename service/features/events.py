"""Events of the feature stream (`feature/<name>`)."""

from __future__ import annotations

from datetime import datetime

import msgspec

from service.events import Event
from service.features.commands import Constraint, StrategyVariant, Variant


class FeatureCreated(Event, frozen=True, kw_only=True, tag="FeatureCreated"):
    """A flag was created in a project; it starts disabled everywhere, lifecycle `initial`."""

    name: str
    project: str
    feature_type: str
    description: str | None
    impression_data: bool
    created_at: datetime


class FeatureArchived(Event, frozen=True, kw_only=True, tag="FeatureArchived"):
    """The flag was archived; its name stays taken."""

    name: str
    project: str
    archived_at: datetime


class FeatureRevived(Event, frozen=True, kw_only=True, tag="FeatureRevived"):
    """The flag was brought back from the archive, at the lifecycle stage given."""

    name: str
    project: str
    revived_at: datetime
    lifecycle_stage: str


class StrategyData(msgspec.Struct, frozen=True, kw_only=True):
    """A strategy as stored in events: everything needed to rebuild it."""

    id: str
    name: str
    title: str | None
    disabled: bool
    sort_order: int
    constraints: list[Constraint]
    parameters: dict[str, str]
    variants: list[StrategyVariant]
    segments: list[int]


class StrategyAdded(Event, frozen=True, kw_only=True, tag="StrategyAdded"):
    """A strategy was added to the flag in one environment."""

    name: str
    project: str
    environment: str
    strategy: StrategyData
    added_at: datetime


class StrategyUpdated(Event, frozen=True, kw_only=True, tag="StrategyUpdated"):
    """A strategy was replaced as a whole (same id)."""

    name: str
    project: str
    environment: str
    strategy: StrategyData


class StrategyRemoved(Event, frozen=True, kw_only=True, tag="StrategyRemoved"):
    """A strategy was removed from the flag in one environment."""

    name: str
    project: str
    environment: str
    strategy_id: str


class FeatureEnvironmentEnabled(Event, frozen=True, kw_only=True, tag="FeatureEnvironmentEnabled"):
    """The flag was switched on in one environment."""

    name: str
    project: str
    environment: str


class FeatureEnvironmentDisabled(
    Event, frozen=True, kw_only=True, tag="FeatureEnvironmentDisabled"
):
    """The flag was switched off in one environment."""

    name: str
    project: str
    environment: str


class EnvironmentVariantsSet(Event, frozen=True, kw_only=True, tag="EnvironmentVariantsSet"):
    """The flag's variants in one environment were replaced (weights already spread)."""

    name: str
    project: str
    environment: str
    variants: list[Variant]


class FeatureTagged(Event, frozen=True, kw_only=True, tag="FeatureTagged"):
    """A tag was put on the flag."""

    name: str
    tag_type: str
    value: str
    tagged_at: datetime


class FeatureUntagged(Event, frozen=True, kw_only=True, tag="FeatureUntagged"):
    """A tag was taken off the flag."""

    name: str
    tag_type: str
    value: str


class DependencyAdded(Event, frozen=True, kw_only=True, tag="DependencyAdded"):
    """The flag now depends on a parent flag of its project (replaces an earlier one)."""

    name: str
    project: str
    parent: str
    enabled: bool
    variants: list[str]


class DependencyRemoved(Event, frozen=True, kw_only=True, tag="DependencyRemoved"):
    """The flag no longer depends on that parent."""

    name: str
    project: str
    parent: str


class ClonedEnvironment(msgspec.Struct, frozen=True, kw_only=True):
    environment: str
    strategies: list[StrategyData]
    variants: list[Variant]


class ClonedDependency(msgspec.Struct, frozen=True, kw_only=True):
    parent: str
    enabled: bool
    variants: list[str]


class ClonedTag(msgspec.Struct, frozen=True, kw_only=True):
    tag_type: str
    value: str


class FeatureCloned(Event, frozen=True, kw_only=True, tag="FeatureCloned"):
    """A new flag was created as a copy of another; this event alone rebuilds the copy."""

    name: str
    project: str
    feature_type: str
    description: str | None
    impression_data: bool
    created_at: datetime
    source: str
    source_project: str
    source_position: int
    environments: list[ClonedEnvironment]
    dependencies: list[ClonedDependency]
    tags: list[ClonedTag]
