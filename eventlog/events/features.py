"""Stored events of flags (stream `feature/<name>`) and segments (`segment/<id>`), the shapes
nested in them, and the upcasters from their older versions."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from eventlog.events.base import Declared, Event, Upcasters

# --- shapes nested in events ----------------------------------------------------------------


class Constraint(Declared, frozen=True, kw_only=True):
    """A condition on one context field; `operator` as Unleash names it (`IN`, `NUM_GT`...)."""

    not_personal: ClassVar[tuple[str, ...]] = ("context_name", "operator", "values", "value")

    context_name: str
    operator: str
    case_insensitive: bool
    inverted: bool
    values: list[str]
    value: str | None


class Payload(Declared, frozen=True, kw_only=True):
    not_personal: ClassVar[tuple[str, ...]] = ("type", "value")
    type: str
    value: str


class StrategyVariant(Declared, frozen=True, kw_only=True):
    not_personal: ClassVar[tuple[str, ...]] = ("name", "weight_type", "stickiness")
    name: str
    weight: int
    weight_type: str
    stickiness: str
    payload: Payload | None


class Override(Declared, frozen=True, kw_only=True):
    not_personal: ClassVar[tuple[str, ...]] = ("context_name", "values")
    context_name: str
    values: list[str]


class Variant(Declared, frozen=True, kw_only=True):
    not_personal: ClassVar[tuple[str, ...]] = ("name", "weight_type", "stickiness")
    name: str
    weight: int
    weight_type: str
    stickiness: str
    payload: Payload | None
    overrides: list[Override]


class StrategyData(Declared, frozen=True, kw_only=True):
    """A strategy: everything needed to rebuild it."""

    not_personal: ClassVar[tuple[str, ...]] = ("id", "name", "title", "parameters")

    id: str
    name: str
    title: str | None
    disabled: bool
    sort_order: int
    constraints: list[Constraint]
    parameters: dict[str, str]
    variants: list[StrategyVariant]
    segments: list[int]


# --- the flag ---------------------------------------------------------------------------------


class FeatureCreated(Event, frozen=True, kw_only=True, tag="FeatureCreated"):
    """A flag was created in a project; it starts disabled everywhere, lifecycle `initial`."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "project", "feature_type", "description")

    name: str
    project: str
    feature_type: str
    description: str | None
    impression_data: bool
    created_at: datetime


class FeatureArchived(Event, frozen=True, kw_only=True, tag="FeatureArchived"):
    """The flag was archived; its name stays taken."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "project")

    name: str
    project: str
    archived_at: datetime


class FeatureRevived(Event, frozen=True, kw_only=True, tag="FeatureRevived"):
    """The flag was brought back from the archive, at the lifecycle stage given."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "project", "lifecycle_stage")

    name: str
    project: str
    revived_at: datetime
    lifecycle_stage: str


class FeatureStaleSet(Event, frozen=True, kw_only=True, tag="FeatureStaleSet"):
    """The flag was marked stale (`stale` true) or no longer stale."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "project")

    name: str
    project: str
    stale: bool


class StrategyAdded(Event, frozen=True, kw_only=True, tag="StrategyAdded"):
    """A strategy was added to the flag in one environment."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "project", "environment")

    schema_version: ClassVar[int] = 2

    name: str
    project: str
    environment: str
    strategy: StrategyData
    added_at: datetime


class StrategyUpdated(Event, frozen=True, kw_only=True, tag="StrategyUpdated"):
    """A strategy was replaced as a whole (same id)."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "project", "environment")

    schema_version: ClassVar[int] = 2

    name: str
    project: str
    environment: str
    strategy: StrategyData


class StrategyRemoved(Event, frozen=True, kw_only=True, tag="StrategyRemoved"):
    """A strategy was removed from the flag in one environment."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "project", "environment", "strategy_id")

    name: str
    project: str
    environment: str
    strategy_id: str


class FeatureEnvironmentEnabled(Event, frozen=True, kw_only=True, tag="FeatureEnvironmentEnabled"):
    """The flag was switched on in one environment."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "project", "environment")

    name: str
    project: str
    environment: str


class FeatureEnvironmentDisabled(
    Event, frozen=True, kw_only=True, tag="FeatureEnvironmentDisabled"
):
    """The flag was switched off in one environment."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "project", "environment")

    name: str
    project: str
    environment: str


class EnvironmentVariantsSet(Event, frozen=True, kw_only=True, tag="EnvironmentVariantsSet"):
    """The flag's variants in one environment were replaced (weights already spread)."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "project", "environment")

    schema_version: ClassVar[int] = 2

    name: str
    project: str
    environment: str
    variants: list[Variant]


class FeatureTagged(Event, frozen=True, kw_only=True, tag="FeatureTagged"):
    """A tag was put on the flag. `project`: the flag's, so that the log can be searched by
    project; absent (None) in stored events older than the field."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "tag_type", "value", "project")

    name: str
    tag_type: str
    value: str
    tagged_at: datetime
    project: str | None = None


class FeatureUntagged(Event, frozen=True, kw_only=True, tag="FeatureUntagged"):
    """A tag was taken off the flag (`project` as in FeatureTagged)."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "tag_type", "value", "project")

    name: str
    tag_type: str
    value: str
    project: str | None = None


class DependencyAdded(Event, frozen=True, kw_only=True, tag="DependencyAdded"):
    """The flag now depends on a parent flag of its project (replaces an earlier one)."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "project", "parent", "variants")

    name: str
    project: str
    parent: str
    enabled: bool
    variants: list[str]


class DependencyRemoved(Event, frozen=True, kw_only=True, tag="DependencyRemoved"):
    """The flag no longer depends on that parent."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "project", "parent")

    name: str
    project: str
    parent: str


class ClonedEnvironment(Declared, frozen=True, kw_only=True):
    not_personal: ClassVar[tuple[str, ...]] = ("environment",)
    environment: str
    strategies: list[StrategyData]
    variants: list[Variant]


class ClonedDependency(Declared, frozen=True, kw_only=True):
    not_personal: ClassVar[tuple[str, ...]] = ("parent", "variants")
    parent: str
    enabled: bool
    variants: list[str]


class ClonedTag(Declared, frozen=True, kw_only=True):
    not_personal: ClassVar[tuple[str, ...]] = ("tag_type", "value")
    tag_type: str
    value: str


class FeatureCloned(Event, frozen=True, kw_only=True, tag="FeatureCloned"):
    """A new flag was created as a copy of another; this event alone rebuilds the copy."""

    not_personal: ClassVar[tuple[str, ...]] = (
        "name",
        "project",
        "feature_type",
        "description",
        "source",
        "source_project",
    )

    schema_version: ClassVar[int] = 2

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


# --- segments ---------------------------------------------------------------------------------


class SegmentCreated(Event, frozen=True, kw_only=True, tag="SegmentCreated"):
    """A segment exists; strategies may reference it by id."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "description")

    schema_version: ClassVar[int] = 2

    segment_id: int
    name: str
    description: str | None
    constraints: list[Constraint]
    created_at: datetime


class SegmentUpdated(Event, frozen=True, kw_only=True, tag="SegmentUpdated"):
    """A segment was replaced as a whole (same id)."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "description")

    schema_version: ClassVar[int] = 2

    segment_id: int
    name: str
    description: str | None
    constraints: list[Constraint]


class SegmentDeleted(Event, frozen=True, kw_only=True, tag="SegmentDeleted"):
    """A segment no strategy used any more was deleted."""

    not_personal: ClassVar[tuple[str, ...]] = ("name",)

    segment_id: int
    name: str


# --- deletion ---------------------------------------------------------------------------------


class FeatureDeleted(Event, frozen=True, kw_only=True, tag="FeatureDeleted"):
    """An archived flag was deleted: it leaves every read model and its name is free again; a
    flag created later with that name continues this stream. The flag as it was (`feature_type`
    to `archived_at`) is kept for the audit trail, which shows it as Unleash's preData."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "project", "feature_type", "description")

    name: str
    project: str
    feature_type: str
    description: str | None
    stale: bool
    impression_data: bool
    created_at: datetime
    archived_at: datetime
    deleted_at: datetime


# --- upcasters --------------------------------------------------------------------------------
# Version 1 stored nested constraints and variants with the request's camelCase names
# (`contextName`, `caseInsensitive`, `weightType`); version 2 names them like every other
# stored field. Nothing else changed.

_V1_NAMES = {
    "contextName": "context_name",
    "caseInsensitive": "case_insensitive",
    "weightType": "weight_type",
}


def _renamed(item: dict[str, Any]) -> dict[str, Any]:
    return {_V1_NAMES.get(key, key): value for key, value in item.items()}


def _variant_v1(variant: dict[str, Any]) -> dict[str, Any]:
    return _renamed(variant) | {"overrides": [_renamed(o) for o in variant["overrides"]]}


def _strategy_v1(strategy: dict[str, Any]) -> dict[str, Any]:
    return strategy | {
        "constraints": [_renamed(c) for c in strategy["constraints"]],
        "variants": [_renamed(v) for v in strategy["variants"]],
    }


def strategy_event_v1(data: dict[str, Any]) -> dict[str, Any]:
    """StrategyAdded and StrategyUpdated, version 1 -> 2."""
    return data | {"strategy": _strategy_v1(data["strategy"])}


def environment_variants_set_v1(data: dict[str, Any]) -> dict[str, Any]:
    return data | {"variants": [_variant_v1(v) for v in data["variants"]]}


def feature_cloned_v1(data: dict[str, Any]) -> dict[str, Any]:
    environments = [
        environment
        | {
            "strategies": [_strategy_v1(s) for s in environment["strategies"]],
            "variants": [_variant_v1(v) for v in environment["variants"]],
        }
        for environment in data["environments"]
    ]
    return data | {"environments": environments}


def segment_event_v1(data: dict[str, Any]) -> dict[str, Any]:
    """SegmentCreated and SegmentUpdated, version 1 -> 2."""
    return data | {"constraints": [_renamed(c) for c in data["constraints"]]}


UPCASTERS: Upcasters = {
    ("StrategyAdded", 1): strategy_event_v1,
    ("StrategyUpdated", 1): strategy_event_v1,
    ("EnvironmentVariantsSet", 1): environment_variants_set_v1,
    ("FeatureCloned", 1): feature_cloned_v1,
    ("SegmentCreated", 1): segment_event_v1,
    ("SegmentUpdated", 1): segment_event_v1,
}


# --- the flag's page (issue 42) ---------------------------------------------------------------


class FeatureUpdated(Event, frozen=True, kw_only=True, tag="FeatureUpdated"):
    """The flag's description, type or impression data changed (`PATCH` of the flag); holds
    all three as they are from now on. Staleness has its own event (FeatureStaleSet)."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "project", "feature_type", "description")

    name: str
    project: str
    feature_type: str
    description: str | None
    impression_data: bool


class StrategySortOrder(Declared, frozen=True, kw_only=True):
    not_personal: ClassVar[tuple[str, ...]] = ("strategy_id",)
    strategy_id: str
    sort_order: int


class StrategiesReordered(Event, frozen=True, kw_only=True, tag="StrategiesReordered"):
    """Strategies of the flag in one environment got new sort orders (`set-sort-order`); the
    others there keep theirs."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "project", "environment")

    name: str
    project: str
    environment: str
    sort_orders: list[StrategySortOrder]
