"""Read model `features`: one row per flag ever created, archived ones included."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

import msgspec

from projections.base import Projection
from service.features.events import (
    ClonedDependency,
    ClonedEnvironment,
    DependencyAdded,
    DependencyRemoved,
    EnvironmentVariantsSet,
    FeatureArchived,
    FeatureCloned,
    FeatureCreated,
    FeatureEnvironmentDisabled,
    FeatureEnvironmentEnabled,
    FeatureRevived,
    FeatureTagged,
    FeatureUntagged,
    StrategyAdded,
    StrategyData,
    StrategyRemoved,
    StrategyUpdated,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from service.connections import Conn
    from service.events import Event, RecordedEvent

INSERT_FEATURE = """
INSERT INTO features (name, project, type, description, impression_data, created_at,
                      lifecycle_stage, lifecycle_entered_at)
VALUES ($1, $2, $3, $4, $5, $6, 'initial', $6)
ON CONFLICT (name) DO NOTHING
"""
ARCHIVE = """
UPDATE features SET archived_at = $2, lifecycle_stage = 'archived', lifecycle_entered_at = $2
WHERE name = $1
"""
REVIVE = """
UPDATE features SET archived_at = NULL, lifecycle_stage = $3, lifecycle_entered_at = $2
WHERE name = $1
"""

SWITCH = """
INSERT INTO feature_environments (feature_name, environment, enabled) VALUES ($1, $2, $3)
ON CONFLICT (feature_name, environment) DO UPDATE SET enabled = excluded.enabled
"""
SET_VARIANTS = """
INSERT INTO feature_environments (feature_name, environment, variants) VALUES ($1, $2, $3)
ON CONFLICT (feature_name, environment) DO UPDATE SET variants = excluded.variants
"""
INSERT_STRATEGY = """
INSERT INTO feature_strategies (id, feature_name, environment, name, title, disabled, sort_order,
                                constraints, parameters, variants, segments, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (id) DO NOTHING
"""
UPDATE_STRATEGY = """
UPDATE feature_strategies SET name = $2, title = $3, disabled = $4, sort_order = $5,
       constraints = $6, parameters = $7, variants = $8, segments = $9
WHERE id = $1
"""
DELETE_STRATEGY = "DELETE FROM feature_strategies WHERE id = $1"
TAG = """
INSERT INTO feature_tags (feature_name, type, value, created_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (feature_name, type, value) DO NOTHING
"""
UNTAG = "DELETE FROM feature_tags WHERE feature_name = $1 AND type = $2 AND value = $3"
DEPEND = """
INSERT INTO feature_dependencies (child, parent, enabled, variants) VALUES ($1, $2, $3, $4)
ON CONFLICT (child, parent) DO UPDATE SET enabled = excluded.enabled, variants = excluded.variants
"""
UNDEPEND = "DELETE FROM feature_dependencies WHERE child = $1 AND parent = $2"

_json = msgspec.json.Encoder()


def _strategy_columns(s: StrategyData) -> tuple[object, ...]:
    return (
        s.name,
        s.title,
        s.disabled,
        s.sort_order,
        _json.encode(s.constraints).decode(),
        _json.encode(s.parameters).decode(),
        _json.encode(s.variants).decode(),
        s.segments,
    )


def _variants(
    e: EnvironmentVariantsSet | DependencyAdded | ClonedEnvironment | ClonedDependency,
) -> str:
    return _json.encode(e.variants).decode()


# One statement per event type: (SQL, the event's arguments for it).
_STATEMENTS: dict[type[Event], tuple[str, Callable[[Any], tuple[object, ...]]]] = {
    FeatureCreated: (
        INSERT_FEATURE,
        lambda e: (
            e.name,
            e.project,
            e.feature_type,
            e.description,
            e.impression_data,
            e.created_at,
        ),
    ),
    FeatureArchived: (ARCHIVE, lambda e: (e.name, e.archived_at)),
    FeatureRevived: (REVIVE, lambda e: (e.name, e.revived_at, e.lifecycle_stage)),
    StrategyAdded: (
        INSERT_STRATEGY,
        lambda e: (
            e.strategy.id,
            e.name,
            e.environment,
            *_strategy_columns(e.strategy),
            e.added_at,
        ),
    ),
    StrategyUpdated: (UPDATE_STRATEGY, lambda e: (e.strategy.id, *_strategy_columns(e.strategy))),
    StrategyRemoved: (DELETE_STRATEGY, lambda e: (e.strategy_id,)),
    FeatureEnvironmentEnabled: (SWITCH, lambda e: (e.name, e.environment, True)),
    FeatureEnvironmentDisabled: (SWITCH, lambda e: (e.name, e.environment, False)),
    EnvironmentVariantsSet: (SET_VARIANTS, lambda e: (e.name, e.environment, _variants(e))),
    FeatureTagged: (TAG, lambda e: (e.name, e.tag_type, e.value, e.tagged_at)),
    FeatureUntagged: (UNTAG, lambda e: (e.name, e.tag_type, e.value)),
    DependencyAdded: (DEPEND, lambda e: (e.name, e.parent, e.enabled, _variants(e))),
    DependencyRemoved: (UNDEPEND, lambda e: (e.name, e.parent)),
}


async def _apply_clone(conn: Conn, e: FeatureCloned) -> None:
    """The copy, whole: flag row, environment variants, strategies, tags, dependencies."""
    created = (e.name, e.project, e.feature_type, e.description, e.impression_data, e.created_at)
    await conn.execute(INSERT_FEATURE, *created)
    for env in e.environments:
        if env.variants:
            await conn.execute(SET_VARIANTS, e.name, env.environment, _variants(env))
    # Copies keep the source's order: created_at breaks sortOrder ties, so it counts up.
    copied = [(env.environment, s) for env in e.environments for s in env.strategies]
    strategies = [
        (s.id, e.name, environment, *_strategy_columns(s), e.created_at + timedelta(microseconds=i))
        for i, (environment, s) in enumerate(copied)
    ]
    if strategies:
        await conn.executemany(INSERT_STRATEGY, strategies)
    for tag in e.tags:
        await conn.execute(TAG, e.name, tag.tag_type, tag.value, e.created_at)
    for dep in e.dependencies:
        await conn.execute(DEPEND, e.name, dep.parent, dep.enabled, _variants(dep))


async def apply(conn: Conn, recorded: RecordedEvent) -> None:
    if isinstance(recorded.event, FeatureCloned):
        await _apply_clone(conn, recorded.event)
        return
    statement = _STATEMENTS.get(type(recorded.event))
    if statement is not None:
        sql, arguments = statement
        await conn.execute(sql, *arguments(recorded.event))


PROJECTION = Projection(
    name="features",
    mode="inline",
    tables=(
        "features",
        "feature_environments",
        "feature_strategies",
        "feature_tags",
        "feature_dependencies",
    ),
    handles=frozenset({FeatureCloned.type_name()} | {c.type_name() for c in _STATEMENTS}),
    apply=apply,
)
