"""Read model `features`: one row per flag ever created, archived ones included, with its
per-environment state, strategies, tags and dependencies."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

import msgspec

from projections import shapes
from projections.base import Projection
from service.features.events import (
    DependencyAdded,
    DependencyRemoved,
    EnvironmentVariantsSet,
    FeatureArchived,
    FeatureCloned,
    FeatureCreated,
    FeatureEnvironmentDisabled,
    FeatureEnvironmentEnabled,
    FeatureRevived,
    FeatureStaleSet,
    FeatureTagged,
    FeatureUntagged,
    StrategyAdded,
    StrategyData,
    StrategyRemoved,
    StrategyUpdated,
)

if TYPE_CHECKING:
    from service.codec import RecordedEvent
    from service.connections import Conn

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
STALE = "UPDATE features SET stale = $2 WHERE name = $1"

_json = msgspec.json.Encoder()


def _strategy_columns(s: StrategyData) -> tuple[object, ...]:
    return (
        s.name,
        s.title,
        s.disabled,
        s.sort_order,
        shapes.constraints(s.constraints),
        _json.encode(s.parameters).decode(),
        shapes.strategy_variants(s.variants),
        s.segments,
    )


async def apply(conn: Conn, recorded: RecordedEvent) -> None:  # noqa: C901, PLR0912 - a case per type
    match recorded.event:
        case FeatureCreated() as e:
            await conn.execute(
                INSERT_FEATURE,
                e.name,
                e.project,
                e.feature_type,
                e.description,
                e.impression_data,
                e.created_at,
            )
        case FeatureArchived() as e:
            await conn.execute(ARCHIVE, e.name, e.archived_at)
        case FeatureRevived() as e:
            await conn.execute(REVIVE, e.name, e.revived_at, e.lifecycle_stage)
        case FeatureStaleSet() as e:
            await conn.execute(STALE, e.name, e.stale)
        case StrategyAdded() as e:
            columns = _strategy_columns(e.strategy)
            await conn.execute(
                INSERT_STRATEGY, e.strategy.id, e.name, e.environment, *columns, e.added_at
            )
        case StrategyUpdated() as e:
            await conn.execute(UPDATE_STRATEGY, e.strategy.id, *_strategy_columns(e.strategy))
        case StrategyRemoved() as e:
            await conn.execute(DELETE_STRATEGY, e.strategy_id)
        case FeatureEnvironmentEnabled() as e:
            await conn.execute(SWITCH, e.name, e.environment, True)  # noqa: FBT003 - SQL arguments
        case FeatureEnvironmentDisabled() as e:
            await conn.execute(SWITCH, e.name, e.environment, False)  # noqa: FBT003
        case EnvironmentVariantsSet() as e:
            await conn.execute(SET_VARIANTS, e.name, e.environment, shapes.variants(e.variants))
        case FeatureTagged() as e:
            await conn.execute(TAG, e.name, e.tag_type, e.value, e.tagged_at)
        case FeatureUntagged() as e:
            await conn.execute(UNTAG, e.name, e.tag_type, e.value)
        case DependencyAdded() as e:
            variants = _json.encode(e.variants).decode()
            await conn.execute(DEPEND, e.name, e.parent, e.enabled, variants)
        case DependencyRemoved() as e:
            await conn.execute(UNDEPEND, e.name, e.parent)
        case FeatureCloned() as e:
            await _apply_clone(conn, e)
        case _:
            pass


async def _apply_clone(conn: Conn, e: FeatureCloned) -> None:
    """The copy, whole: flag row, environment variants, strategies, tags, dependencies."""
    created = (e.name, e.project, e.feature_type, e.description, e.impression_data, e.created_at)
    await conn.execute(INSERT_FEATURE, *created)
    for env in e.environments:
        if env.variants:
            await conn.execute(SET_VARIANTS, e.name, env.environment, shapes.variants(env.variants))
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
        variants = _json.encode(dep.variants).decode()
        await conn.execute(DEPEND, e.name, dep.parent, dep.enabled, variants)


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
    apply=apply,
)
