"""Read model `features`: one row per flag that exists, archived ones included (a deleted flag
leaves every table), with its per-environment state, strategies, tags and dependencies."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import msgspec

from eventlog.events.features import (
    DependencyAdded,
    DependencyRemoved,
    EnvironmentVariantsSet,
    FeatureArchived,
    FeatureCloned,
    FeatureCreated,
    FeatureDeleted,
    FeatureEnvironmentDisabled,
    FeatureEnvironmentEnabled,
    FeatureRevived,
    FeatureStaleSet,
    FeatureTagged,
    FeatureUntagged,
    FeatureUpdated,
    StrategiesReordered,
    StrategyAdded,
    StrategyData,
    StrategyRemoved,
    StrategyUpdated,
    Variant,
)
from projections import shapes
from projections.base import Projection
from projections.writes import Delete, Insert, Table, Update, Write

if TYPE_CHECKING:
    from eventlog.codec import RecordedEvent

FEATURES = Table("features", ("name",))
FEATURE_ENVIRONMENTS = Table("feature_environments", ("feature_name", "environment"))
FEATURE_STRATEGIES = Table("feature_strategies", ("id",))
FEATURE_TAGS = Table("feature_tags", ("feature_name", "type", "value"))
FEATURE_DEPENDENCIES = Table("feature_dependencies", ("child", "parent"))

_json = msgspec.json.Encoder()


def _strategy_columns(s: StrategyData) -> dict[str, object]:
    return {
        "name": s.name,
        "title": s.title,
        "disabled": s.disabled,
        "sort_order": s.sort_order,
        "constraints": shapes.constraints(s.constraints),
        "parameters": _json.encode(s.parameters).decode(),
        "variants": shapes.strategy_variants(s.variants),
        "segments": s.segments,
    }


def _created(
    e: FeatureCreated | FeatureCloned,
) -> Insert:
    row = {
        "name": e.name,
        "project": e.project,
        "type": e.feature_type,
        "description": e.description,
        "impression_data": e.impression_data,
        "created_at": e.created_at,
        "lifecycle_stage": "initial",
        "lifecycle_entered_at": e.created_at,
    }
    return Insert(FEATURES, row)


def _strategy(name: str, environment: str, s: StrategyData, created_at: datetime) -> Insert:
    row = {"id": s.id, "feature_name": name, "environment": environment}
    return Insert(FEATURE_STRATEGIES, row | _strategy_columns(s) | {"created_at": created_at})


def _switch(name: str, environment: str, *, enabled: bool) -> Insert:
    row = {"feature_name": name, "environment": environment, "enabled": enabled}
    return Insert(FEATURE_ENVIRONMENTS, row, update=("enabled",))


def _variants(name: str, environment: str, variants: list[Variant]) -> Insert:
    row = {"feature_name": name, "environment": environment}
    return Insert(
        FEATURE_ENVIRONMENTS, row | {"variants": shapes.variants(variants)}, update=("variants",)
    )


def _tag(name: str, tag_type: str, value: str, tagged_at: datetime) -> Insert:
    row = {"feature_name": name, "type": tag_type, "value": value, "created_at": tagged_at}
    return Insert(FEATURE_TAGS, row)


def _depend(name: str, parent: str, *, enabled: bool, variants: list[str]) -> Insert:
    row = {"child": name, "parent": parent, "enabled": enabled}
    return Insert(
        FEATURE_DEPENDENCIES,
        row | {"variants": _json.encode(variants).decode()},
        update=("enabled", "variants"),
    )


def writes(recorded: RecordedEvent) -> list[Write]:  # noqa: C901, PLR0911, PLR0912 - a case per type
    match recorded.event:
        case FeatureCreated() as e:
            return [_created(e)]
        case FeatureArchived() as e:
            archived = {
                "archived_at": e.archived_at,
                "lifecycle_stage": "archived",
                "lifecycle_entered_at": e.archived_at,
            }
            return [Update(FEATURES, {"name": e.name}, archived)]
        case FeatureRevived() as e:
            revived = {
                "archived_at": None,
                "lifecycle_stage": e.lifecycle_stage,
                "lifecycle_entered_at": e.revived_at,
            }
            return [Update(FEATURES, {"name": e.name}, revived)]
        case FeatureStaleSet() as e:
            return [Update(FEATURES, {"name": e.name}, {"stale": e.stale})]
        case StrategyAdded() as e:
            return [_strategy(e.name, e.environment, e.strategy, e.added_at)]
        case StrategyUpdated() as e:
            changed = _strategy_columns(e.strategy)
            return [Update(FEATURE_STRATEGIES, {"id": e.strategy.id}, changed)]
        case StrategyRemoved() as e:
            return [Delete(FEATURE_STRATEGIES, {"id": e.strategy_id})]
        case FeatureEnvironmentEnabled() as e:
            return [_switch(e.name, e.environment, enabled=True)]
        case FeatureEnvironmentDisabled() as e:
            return [_switch(e.name, e.environment, enabled=False)]
        case EnvironmentVariantsSet() as e:
            return [_variants(e.name, e.environment, e.variants)]
        case FeatureTagged() as e:
            return [_tag(e.name, e.tag_type, e.value, e.tagged_at)]
        case FeatureUntagged() as e:
            where = {"feature_name": e.name, "type": e.tag_type, "value": e.value}
            return [Delete(FEATURE_TAGS, where)]
        case DependencyAdded() as e:
            return [_depend(e.name, e.parent, enabled=e.enabled, variants=e.variants)]
        case DependencyRemoved() as e:
            return [Delete(FEATURE_DEPENDENCIES, {"child": e.name, "parent": e.parent})]
        case FeatureCloned() as e:
            return _clone(e)
        case FeatureUpdated() as e:
            changed = {
                "type": e.feature_type,
                "description": e.description,
                "impression_data": e.impression_data,
            }
            return [Update(FEATURES, {"name": e.name}, changed)]
        case StrategiesReordered() as e:
            return [
                Update(FEATURE_STRATEGIES, {"id": s.strategy_id}, {"sort_order": s.sort_order})
                for s in e.sort_orders
            ]
        case FeatureDeleted() as e:
            return _deleted(e.name)
        case _:
            return []


def _clone(e: FeatureCloned) -> list[Write]:
    """The copy, whole: flag row, environment variants, strategies, tags, dependencies."""
    out: list[Write] = [_created(e)]
    out += [
        _variants(e.name, env.environment, env.variants) for env in e.environments if env.variants
    ]
    # Copies keep the source's order: created_at breaks sortOrder ties, so it counts up.
    copied = [(env.environment, s) for env in e.environments for s in env.strategies]
    out += [
        _strategy(e.name, environment, s, e.created_at + timedelta(microseconds=i))
        for i, (environment, s) in enumerate(copied)
    ]
    out += [_tag(e.name, tag.tag_type, tag.value, e.created_at) for tag in e.tags]
    out += [
        _depend(e.name, dep.parent, enabled=dep.enabled, variants=dep.variants)
        for dep in e.dependencies
    ]
    return out


def _deleted(name: str) -> list[Write]:
    """Every row of the flag. Its dependencies on parents are its rows; a dependency of another
    flag on it is that flag's (its stream's), and a deletion is refused while there is one."""
    return [
        Delete(FEATURE_STRATEGIES, {"feature_name": name}),
        Delete(FEATURE_ENVIRONMENTS, {"feature_name": name}),
        Delete(FEATURE_TAGS, {"feature_name": name}),
        Delete(FEATURE_DEPENDENCIES, {"child": name}),
        Delete(FEATURES, {"name": name}),
    ]


PROJECTION = Projection(
    name="features",
    mode="inline",
    by_stream=True,
    tables=(FEATURES, FEATURE_ENVIRONMENTS, FEATURE_STRATEGIES, FEATURE_TAGS, FEATURE_DEPENDENCIES),
    writes=writes,
    handles=frozenset(
        {
            DependencyAdded,
            DependencyRemoved,
            EnvironmentVariantsSet,
            FeatureArchived,
            FeatureCloned,
            FeatureCreated,
            FeatureDeleted,
            FeatureEnvironmentDisabled,
            FeatureEnvironmentEnabled,
            FeatureRevived,
            FeatureStaleSet,
            FeatureTagged,
            FeatureUntagged,
            StrategyAdded,
            StrategyRemoved,
            StrategyUpdated,
            FeatureUpdated,
            StrategiesReordered,
        }
    ),
)
