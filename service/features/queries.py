"""Read SQL of the flag and segment read models: the state each decision needs, read after the
row locks that make changes to one flag (or segment) queue, and the rows responses are built
from. Every lock is taken before the state it guards is read (docs/architecture.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import msgspec

import eventlog
from eventlog.events.features import ClonedDependency, ClonedTag, StrategyData, Variant
from eventlog.events.projects import DefaultStrategyData
from projections.feature_types import potentially_stale
from projections.flag_extras import current_stage
from projections.flag_extras import lifecycle_times as lifecycle_times_sql
from projections.shapes import ConstraintColumn, StrategyVariantColumn, VariantColumn
from service.features import domain
from service.http.past import CLOCK
from service.strategies.builtins import NAMES as BUILT_IN_STRATEGY_TYPES

if TYPE_CHECKING:
    import uuid
    from collections.abc import Sequence
    from datetime import datetime

    import asyncpg

    from eventlog.connections import Conn

# --- potentially stale ---------------------------------------------------------------------------


# --- the lifecycle ----------------------------------------------------------------------------

# When a flag entered each stage it reached (projections/flag_extras.py): lifecycle_times below
# gives the log's times of its enablings.
LIFECYCLE_TIMES = lifecycle_times_sql("f")


async def lifecycle_times(
    conn: Conn, rows: Sequence[asyncpg.Record]
) -> dict[tuple[str, int], datetime]:
    """The log's times of the enablings these flags' rows (with LIFECYCLE_TIMES and `name`)
    name, by (flag, stream version)."""
    versions = [
        (row["name"], row[column])
        for row in rows
        for column in ("pre_live_version", "live_version")
        if row[column] is not None
    ]
    return await eventlog.times_of_versions(conn, "feature", versions)


# A flag's stage now (the last it reached), without its time: what the counts read.
CURRENT_STAGE = current_stage("f")
LIFECYCLE = f"""
SELECT f.name, {LIFECYCLE_TIMES} FROM features f
WHERE f.name = $1 AND f.project = $2
"""  # noqa: S608 - constants
LIFECYCLE_COUNTS = f"""
SELECT count(*) FILTER (WHERE stage = 'initial') AS initial,
       count(*) FILTER (WHERE stage = 'pre-live') AS pre_live,
       count(*) FILTER (WHERE stage = 'live') AS live,
       count(*) FILTER (WHERE stage = 'completed') AS completed,
       count(*) FILTER (WHERE stage = 'archived') AS archived
FROM (SELECT {CURRENT_STAGE} AS stage FROM features f) s
"""  # noqa: S608 - constants
LOCK_COMPLETION = """
SELECT lc.status, lc.status_value
FROM features f JOIN feature_lifecycle lc ON lc.feature_name = f.name
WHERE f.name = $1 AND f.project = $2 FOR UPDATE OF f
"""

# --- links -----------------------------------------------------------------------------------

LINKS_OF = """
SELECT feature_name, id, url, title FROM feature_links WHERE feature_name = ANY($1::text[])
ORDER BY feature_name, created_at, id
"""
LINK_OWNER = "SELECT feature_name FROM feature_links WHERE id = $1"
LINK_COUNT = "SELECT count(*) FROM feature_links WHERE feature_name = $1"


# --- rows of responses --------------------------------------------------------------------------

_FEATURE = """
SELECT f.name, f.project, f.type, f.description, f.impression_data, f.stale, f.created_at,
       POTENTIALLY_STALE AS potentially_stale,
       f.archived_at, f.lifecycle_stage, f.lifecycle_entered_at,
       array(SELECT t.type FROM feature_tags t WHERE t.feature_name = f.name
             ORDER BY t.type, t.value) AS tag_types,
       array(SELECT t.value FROM feature_tags t WHERE t.feature_name = f.name
             ORDER BY t.type, t.value) AS tag_values,
       array(SELECT d.parent FROM feature_dependencies d WHERE d.child = f.name
             ORDER BY d.parent) AS parents,
       array(SELECT d.enabled FROM feature_dependencies d WHERE d.child = f.name
             ORDER BY d.parent) AS parents_enabled,
       array(SELECT d.variants::text FROM feature_dependencies d WHERE d.child = f.name
             ORDER BY d.parent) AS parents_variants,
       array(SELECT d.child FROM feature_dependencies d WHERE d.parent = f.name
             ORDER BY d.child) AS children,
       (SELECT max(l.last_seen_at) FROM telemetry.feature_last_seen l
        WHERE l.feature_name = f.name AND l.last_seen_at >= f.created_at) AS last_seen_at,
       LIFECYCLE_TIMES
FROM features f
""".replace("POTENTIALLY_STALE", potentially_stale("f", CLOCK))
_FEATURE = _FEATURE.replace("LIFECYCLE_TIMES", LIFECYCLE_TIMES)
FEATURE_IN_PROJECT = _FEATURE + "WHERE f.name = $1 AND f.project = $2"
ACTIVE_FEATURES_IN_PROJECT = (
    _FEATURE + "WHERE f.project = $1 AND f.archived_at IS NULL ORDER BY f.name"
)
# The environments of each flag's project, with the flag's switch and variants there, when an
# SDK last reported it there and its counts there in the last hour (SDK metrics,
# service/telemetry: not from the log, so a past state shows the latest; Unleash's `yes` and
# `no`). A sighting before the flag's creation was of a deleted namesake.
ENVIRONMENTS_OF = """
SELECT f.name AS feature, e.name, e.type, e.sort_order, coalesce(fe.enabled, false) AS enabled,
       coalesce(fe.variants, '[]'::jsonb)::text AS variants, l.last_seen_at,
       coalesce(m.yes, 0) AS yes, coalesce(m.no, 0) AS no
FROM features f
JOIN project_environments pe ON pe.project_id = f.project
JOIN environments e ON e.name = pe.environment
LEFT JOIN feature_environments fe ON fe.feature_name = f.name AND fe.environment = e.name
LEFT JOIN telemetry.feature_last_seen l
       ON l.feature_name = f.name AND l.environment = e.name AND l.last_seen_at >= f.created_at
LEFT JOIN LATERAL (
    SELECT sum(h.yes)::bigint AS yes, sum(h.no)::bigint AS no
    FROM telemetry.client_metrics_hourly h
    WHERE h.feature_name = f.name AND h.environment = e.name
      AND h.hour >= greatest(now() - interval '1 hour', date_trunc('hour', f.created_at))
) m ON true
WHERE f.name = ANY($1::text[])
ORDER BY f.name, e.sort_order, e.name
"""
_STRATEGY_COLUMNS = """
s.feature_name, s.environment, s.id, s.name, s.title, s.disabled, s.sort_order, s.segments,
s.constraints::text AS constraints, s.variants::text AS variants,
s.parameters::text AS parameters
"""
STRATEGIES_OF = f"""
SELECT {_STRATEGY_COLUMNS} FROM feature_strategies s WHERE s.feature_name = ANY($1::text[])
ORDER BY s.feature_name, s.environment, s.sort_order, s.created_at, s.id
"""  # noqa: S608 - constants
STRATEGIES_IN = f"""
SELECT {_STRATEGY_COLUMNS} FROM feature_strategies s
WHERE s.feature_name = $1 AND s.environment = $2
ORDER BY s.sort_order, s.created_at, s.id
"""  # noqa: S608 - constants
FEATURE_OF_STRATEGY = "SELECT feature_name FROM feature_strategies WHERE id = $1"
STRATEGY = f"SELECT {_STRATEGY_COLUMNS} FROM feature_strategies s WHERE s.id = $1"  # noqa: S608
STRATEGY_IN = f"""
SELECT {_STRATEGY_COLUMNS} FROM feature_strategies s
WHERE s.id = $1 AND s.feature_name = $2 AND s.environment = $3
"""  # noqa: S608 - constants
SORT_ORDERS_IN = """
SELECT id::text AS id, sort_order FROM feature_strategies
WHERE feature_name = $1 AND environment = $2
"""
# The strategies of a flag in one environment, in order, as StrategyData (what switching it on
# decides on: enable the disabled ones, or add the default strategy).
STRATEGIES_DATA_IN = """
SELECT coalesce(json_agg(json_build_object(
           'environment', s.environment, 'id', s.id, 'name', s.name, 'title', s.title,
           'disabled', s.disabled, 'sort_order', s.sort_order,
           'constraints', s.constraints, 'parameters', s.parameters,
           'variants', s.variants, 'segments', s.segments)
           ORDER BY s.sort_order, s.created_at, s.id), '[]')
FROM feature_strategies s WHERE s.feature_name = $1 AND s.environment = $2
"""
# The segments a strategy uses (GET /api/admin/segments/strategies/:id), by id.
SEGMENTS_OF_STRATEGY = (
    "SELECT id, name, description, constraints::text AS constraints, created_at FROM segments"
    " WHERE id = ANY((SELECT segments FROM feature_strategies WHERE id = $1)::integer[])"
    " ORDER BY id"
)
# A flag's tags with their type's colour (Unleash's flag tags show it).
TAGS = """
SELECT t.type, t.value, y.color FROM feature_tags t LEFT JOIN tag_types y ON y.name = t.type
WHERE t.feature_name = $1 ORDER BY t.type, t.value
"""
FLAG_EXISTS = "SELECT EXISTS (SELECT 1 FROM features WHERE name = $1)"
VARIANTS = """
SELECT coalesce((SELECT variants FROM feature_environments
                 WHERE feature_name = $1 AND environment = $2), '[]'::jsonb)::text
"""
# Who created and changed each flag (projections/collaborators.py), latest first, with the
# name Unleash shows: a token's or the system's as recorded, an account's from the account
# (name, username or e-mail), `unknown` for an account that is gone.
COLLABORATORS_OF = """
SELECT c.feature_name, c.user_id, c.created,
       coalesce(c.actor_name, u.name, u.username, u.email, 'unknown') AS name, u.email, u.username
FROM feature_collaborators c
LEFT JOIN users u ON c.user_id >= 0 AND u.id = c.user_id
WHERE c.feature_name = ANY($1::text[])
ORDER BY c.feature_name, c.last_version DESC, c.user_id
"""
PROJECT_ACTIVE = "SELECT EXISTS (SELECT 1 FROM projects WHERE id = $1 AND archived_at IS NULL)"
SEGMENT = "SELECT id, name, description, constraints::text AS constraints, created_at FROM segments"
SEGMENT_BY_ID = SEGMENT + " WHERE id = $1"
ALL_SEGMENTS = SEGMENT + " ORDER BY id"
# Every segment with the active flags and their projects that use it (Unleash's segment list
# counts no archived flag there).
ALL_SEGMENTS_WITH_USAGE = """
SELECT g.id, g.name, g.description, g.constraints::text AS constraints, g.created_at,
       u.used_in_features, u.used_in_projects
FROM segments g
CROSS JOIN LATERAL (
    SELECT count(DISTINCT f.name) AS used_in_features,
           count(DISTINCT f.project) AS used_in_projects
    FROM feature_strategies s JOIN features f ON f.name = s.feature_name
    WHERE g.id = ANY(s.segments) AND f.archived_at IS NULL
) u
ORDER BY g.id
"""


class FeatureRows(NamedTuple):
    """A `features` row and the rows of its parts, as Feature.from_rows takes them."""

    row: asyncpg.Record
    environments: list[asyncpg.Record]
    strategies: list[asyncpg.Record]
    collaborators: list[asyncpg.Record]
    links: list[asyncpg.Record]
    times: dict[tuple[str, int], datetime]  # of its enablings (lifecycle_times)


async def features(conn: Conn, rows: list[asyncpg.Record]) -> list[FeatureRows]:
    """Each `features` row with its environment, strategy and collaborator rows."""
    names = [row["name"] for row in rows]
    environments: dict[str, list[asyncpg.Record]] = {name: [] for name in names}
    strategies: dict[str, list[asyncpg.Record]] = {name: [] for name in names}
    links: dict[str, list[asyncpg.Record]] = {name: [] for name in names}
    if names:
        for env in await conn.fetch(ENVIRONMENTS_OF, names):
            environments[env["feature"]].append(env)
        for strategy in await conn.fetch(STRATEGIES_OF, names):
            strategies[strategy["feature_name"]].append(strategy)
        for link in await conn.fetch(LINKS_OF, names):
            links[link["feature_name"]].append(link)
    found = await collaborators(conn, names)
    times = await lifecycle_times(conn, rows)
    return [
        FeatureRows(
            row,
            environments[row["name"]],
            strategies[row["name"]],
            found[row["name"]],
            links[row["name"]],
            times,
        )
        for row in rows
    ]


async def collaborators(conn: Conn, names: list[str]) -> dict[str, list[asyncpg.Record]]:
    """The collaborator rows of each of these flags, latest first."""
    found: dict[str, list[asyncpg.Record]] = {name: [] for name in names}
    if names:
        for row in await conn.fetch(COLLABORATORS_OF, names):
            found[row["feature_name"]].append(row)
    return found


async def feature_in_project(conn: Conn, name: str, project_id: str) -> FeatureRows | None:
    row = await conn.fetchrow(FEATURE_IN_PROJECT, name, project_id)
    return None if row is None else (await features(conn, [row]))[0]


# --- state of decisions -----------------------------------------------------------------------

# The environments of a project ($P) in display order, as three arrays (what a new flag shows).
_PROJECT_ENVIRONMENTS = """
SELECT coalesce(array_agg(e.name ORDER BY e.sort_order, e.name), '{}') AS names,
       coalesce(array_agg(e.type ORDER BY e.sort_order, e.name), '{}') AS types,
       coalesce(array_agg(e.sort_order ORDER BY e.sort_order, e.name), '{}') AS sort_orders
FROM project_environments pe JOIN environments e ON e.name = pe.environment
WHERE pe.project_id = $P
"""
# What a create decides on and answers with, read after the project's row is share-locked
# (LOCK_PROJECT_SHARED: archiving the project waits for the create, and an environment enabled
# meanwhile has committed before this is read).
CREATE_CONTEXT = """
SELECT (SELECT f.archived_at IS NOT NULL FROM features f WHERE f.name = $2) AS holder_archived,
       e.names, e.types, e.sort_orders
FROM (ENVIRONMENTS_OF_PROJECT) e
""".replace("ENVIRONMENTS_OF_PROJECT", _PROJECT_ENVIRONMENTS.replace("$P", "$1"))
LOCK_PROJECT_SHARED = "SELECT archived_at IS NULL FROM projects WHERE id = $1 FOR SHARE"
# The archive's row locks (in name order): concurrent archives, revives and deletions of one
# flag queue, and the later ones see the state the first one left (READ COMMITTED re-reads a
# row it waited for). The flags' environments and dependencies are read after the locks.
_ARCHIVE_FLAG = """
SELECT name, project, type, description, stale, impression_data, created_at, archived_at
FROM features
"""
LOCK_ARCHIVE_FLAGS = (
    _ARCHIVE_FLAG
    + """
WHERE name = ANY($1::text[]) AND project = $2 ORDER BY name FOR UPDATE
"""
)
LOCK_ARCHIVE_FLAG = _ARCHIVE_FLAG + "WHERE name = $1 FOR UPDATE"
ENABLED_IN = """
SELECT feature_name, environment FROM feature_environments
WHERE feature_name = ANY($1::text[]) AND enabled ORDER BY feature_name, environment
"""
# Dependencies of and on the flags: a new one on a flag waits for its lock (LOCK_PAIR).
LINKS = """
SELECT child, parent FROM feature_dependencies
WHERE child = ANY($1::text[]) OR parent = ANY($1::text[]) ORDER BY child, parent
"""
PROJECT_EXISTS = "SELECT EXISTS (SELECT 1 FROM projects WHERE id = $1)"
# The archive's list (Unleash's archivedFeatureSchema): each flag with the environments an SDK
# reported it in (telemetry, not the log, as in _FEATURE), newest archive first.
ARCHIVED_FEATURES = """
SELECT f.name, f.description, f.type, f.project, f.stale, f.created_at, f.impression_data,
       f.archived_at,
       (SELECT max(l.last_seen_at) FROM telemetry.feature_last_seen l
        WHERE l.feature_name = f.name AND l.last_seen_at >= f.created_at) AS last_seen_at,
       array(SELECT l.environment FROM telemetry.feature_last_seen l
             WHERE l.feature_name = f.name AND l.last_seen_at >= f.created_at
             ORDER BY l.environment) AS seen_in,
       array(SELECT l.last_seen_at FROM telemetry.feature_last_seen l
             WHERE l.feature_name = f.name AND l.last_seen_at >= f.created_at
             ORDER BY l.environment) AS seen_at,
       array(SELECT coalesce(fe.enabled, false) FROM telemetry.feature_last_seen l
             LEFT JOIN feature_environments fe
                    ON fe.feature_name = f.name AND fe.environment = l.environment
             WHERE l.feature_name = f.name AND l.last_seen_at >= f.created_at
             ORDER BY l.environment) AS seen_enabled
FROM features f
WHERE f.archived_at IS NOT NULL AND ($1::text IS NULL OR f.project = $1)
ORDER BY f.archived_at DESC, f.name
"""
LOCK_FLAGS = """
SELECT name, project, stale FROM features WHERE name = ANY($1::text[]) ORDER BY name FOR UPDATE
"""
NAME_HOLDER_ARCHIVED = "SELECT archived_at IS NOT NULL FROM features WHERE name = $1"
# What a PATCH of the flag decides on (domain.FlagFields), the flag's row locked.
LOCK_FLAG_FIELDS = """
SELECT description, type, stale, impression_data FROM features
WHERE name = $1 AND project = $2 AND archived_at IS NULL FOR UPDATE
"""
ACTIVE_FEATURE = "SELECT 1 FROM features WHERE name = $1 AND project = $2 AND archived_at IS NULL"
# Every change to a flag's configuration locks its row first: changes to one flag queue.
LOCK_ACTIVE_FEATURE = ACTIVE_FEATURE + " FOR UPDATE"
ENVIRONMENT_STATE = """
SELECT EXISTS (SELECT 1 FROM project_environments WHERE project_id = $2 AND environment = $3)
       AS environment_enabled,
       coalesce((SELECT enabled FROM feature_environments
                 WHERE feature_name = $1 AND environment = $3), false) AS enabled
"""
NEXT_STRATEGY_SORT_ORDER = """
SELECT coalesce(max(sort_order) + 1, 0) FROM feature_strategies
WHERE feature_name = $1 AND environment = $2
"""
STRATEGY_SORT_ORDER = """
SELECT sort_order FROM feature_strategies WHERE id = $1 AND feature_name = $2 AND environment = $3
"""
# Strategies take FOR SHARE on the segments they reference, deletes take FOR UPDATE:
# a segment cannot vanish under a strategy that is being saved with it.
LOCK_SEGMENTS_SHARED = "SELECT id FROM segments WHERE id = ANY($1::integer[]) FOR SHARE"
LOCK_FEATURE_BY_NAME = """
SELECT project FROM features WHERE name = $1 AND archived_at IS NULL FOR UPDATE
"""
# Tagging a flag share-locks the tag type (before the flag): a type cannot be deleted while a
# flag is being tagged with it, and its deletion sees every tag put on meanwhile.
LOCK_TAG_TYPE_SHARED = "SELECT 1 FROM tag_types WHERE name = $1 FOR SHARE"
# The tag types of a set of tags that exist ($1 their names), locked as above.
LOCK_TAG_TYPES_SHARED = "SELECT name FROM tag_types WHERE name = ANY($1::text[]) FOR SHARE"
HAS_TAG = """
SELECT EXISTS (SELECT 1 FROM feature_tags WHERE feature_name = $1 AND type = $2 AND value = $3)
"""
# Lock both flags of a dependency in name order (no deadlock between opposite requests).
LOCK_PAIR = """
SELECT name, project FROM features
WHERE name = ANY($1::text[]) AND archived_at IS NULL ORDER BY name FOR UPDATE
"""
DEPENDENCY_STATE = """
SELECT EXISTS (SELECT 1 FROM feature_dependencies WHERE child = $2) AS parent_has_parents,
       EXISTS (SELECT 1 FROM feature_dependencies WHERE parent = $1) AS child_has_children
"""
DEPENDENCIES = """
SELECT parent, enabled, variants::text AS variants FROM feature_dependencies WHERE child = $1
ORDER BY parent
"""
# The dependency dialog: the flags of the project that the child may depend on (active, not
# itself, not depending on another: one level only), and the variants a parent may resolve
# to (its strategies' and its environments'), in code-point order as Unleash sorts them.
PARENT_OPTIONS = """
SELECT f.name FROM features f
WHERE f.project = $2 AND f.archived_at IS NULL AND f.name <> $1
  AND NOT EXISTS (SELECT 1 FROM feature_dependencies d WHERE d.child = f.name)
ORDER BY f.name COLLATE "C"
"""
PARENT_VARIANTS = """
SELECT name FROM (
    SELECT v ->> 'name' AS name FROM (
        SELECT jsonb_array_elements(variants) AS v FROM feature_strategies WHERE feature_name = $1
        UNION ALL
        SELECT jsonb_array_elements(variants) FROM feature_environments WHERE feature_name = $1
    ) variants
    GROUP BY 1
) found
ORDER BY name COLLATE "C"
"""
PROJECT_HAS_DEPENDENCIES = """
SELECT EXISTS (SELECT 1 FROM feature_dependencies d JOIN features f ON f.name = d.child
               WHERE f.project = $1)
"""
# The source is share-locked: it cannot be archived or changed while it is copied.
LOCK_CLONE_SOURCE = """
SELECT name, project, type, description, impression_data FROM features
WHERE name = $1 AND archived_at IS NULL FOR SHARE
"""
# Everything the copy takes from its source, whether its name is free, and the target project's
# environments as the answer shows them, in one round trip (after the locks).
COPY_CONTEXT = """
SELECT
  (SELECT f.archived_at IS NOT NULL FROM features f WHERE f.name = $3) AS holder_archived,
  (SELECT coalesce(array_agg(environment ORDER BY environment), '{}')
   FROM project_environments WHERE project_id = $2) AS environments,
  e.names, e.types, e.sort_orders,
  (SELECT coalesce(json_agg(json_build_object(
              'environment', s.environment, 'id', s.id, 'name', s.name, 'title', s.title,
              'disabled', s.disabled, 'sort_order', s.sort_order,
              'constraints', s.constraints, 'parameters', s.parameters,
              'variants', s.variants, 'segments', s.segments)
              ORDER BY s.environment, s.sort_order, s.created_at, s.id), '[]')
   FROM feature_strategies s
   JOIN project_environments pe ON pe.project_id = $2 AND pe.environment = s.environment
   WHERE s.feature_name = $1) AS strategies,
  (SELECT coalesce(json_object_agg(fe.environment, fe.variants), '{}')
   FROM feature_environments fe
   JOIN project_environments pe ON pe.project_id = $2 AND pe.environment = fe.environment
   WHERE fe.feature_name = $1) AS variants,
  (SELECT coalesce(json_agg(json_build_object(
              'parent', d.parent, 'enabled', d.enabled, 'variants', d.variants)
              ORDER BY d.parent), '[]')
   FROM feature_dependencies d JOIN features p ON p.name = d.parent
   WHERE d.child = $1 AND p.project = $2 AND p.archived_at IS NULL) AS dependencies,
  (SELECT coalesce(json_agg(json_build_object('tag_type', t.type, 'value', t.value)
              ORDER BY t.type, t.value), '[]')
   FROM feature_tags t WHERE t.feature_name = $1) AS tags
FROM (ENVIRONMENTS_OF_PROJECT) e
""".replace("ENVIRONMENTS_OF_PROJECT", _PROJECT_ENVIRONMENTS.replace("$P", "$2"))
NEXT_SEGMENT_ID = "SELECT nextval('segment_ids')::integer"
SEGMENT_NAME_TAKEN = "SELECT EXISTS (SELECT 1 FROM segments WHERE name = $1 AND id <> $2)"
LOCK_SEGMENT = "SELECT name FROM segments WHERE id = $1 FOR UPDATE"
SEGMENT_USED_BY = "SELECT count(*) FROM feature_strategies WHERE $1 = ANY(segments)"
# The strategies that use a segment (GET /api/admin/segments/:id/strategies): those of archived
# flags too, since they keep it from being deleted, as SEGMENT_USED_BY counts them
# (docs/behavior.md, "Segment names and usage").
STRATEGIES_USING_SEGMENT = """
SELECT s.id::text AS id, f.project, s.feature_name, s.name, s.environment
FROM feature_strategies s JOIN features f ON f.name = s.feature_name
WHERE $1 = ANY(s.segments)
ORDER BY s.feature_name, s.environment, s.sort_order, s.created_at, s.id
"""


class _SourceStrategy(msgspec.Struct, frozen=True, kw_only=True):
    """A strategy of the source as COPY_CONTEXT reads it (jsonb columns in their shapes)."""

    environment: str
    id: str
    name: str
    title: str | None
    disabled: bool
    sort_order: int
    constraints: list[ConstraintColumn]
    parameters: dict[str, str]
    variants: list[StrategyVariantColumn]
    segments: list[int]


_source_strategies = msgspec.json.Decoder(list[_SourceStrategy])
_source_variants = msgspec.json.Decoder(dict[str, list[VariantColumn]])
_dependencies = msgspec.json.Decoder(list[ClonedDependency])
_tags = msgspec.json.Decoder(list[ClonedTag])
_names = msgspec.json.Decoder(list[str])


async def environment_state(
    conn: Conn, target: domain.Target, *, lock: bool = False
) -> domain.EnvironmentState | None:
    """How the target environment sees the active flag; `lock`: lock the flag's row first (a
    change is being decided), so the state read next is what the previous change left."""
    query = LOCK_ACTIVE_FEATURE if lock else ACTIVE_FEATURE
    if await conn.fetchval(query, target.feature, target.project) is None:
        return None
    row = await conn.fetchrow(ENVIRONMENT_STATE, target.feature, target.project, target.environment)
    assert row is not None  # a SELECT without FROM has its one row
    return domain.EnvironmentState(
        environment_enabled=row["environment_enabled"], enabled=row["enabled"]
    )


async def missing_segments(conn: Conn, segments: list[int]) -> list[int]:
    """The referenced segments that do not exist; the others stay (share-locked) until the
    transaction ends."""
    if not segments:
        return []
    found = {r["id"] for r in await conn.fetch(LOCK_SEGMENTS_SHARED, segments)}
    return [s for s in segments if s not in found]


LOCK_STRATEGY_TYPE = "SELECT name FROM strategy_definitions WHERE name = $1 FOR SHARE"


async def strategy_type_known(conn: Conn, name: str) -> bool:
    """Whether a flag's strategy may name this type: a built-in one, or a custom one, whose row
    stays share-locked until the transaction ends (its deletion waits, then counts this
    strategy: service/strategies/handlers.py)."""
    if name in BUILT_IN_STRATEGY_TYPES:
        return True
    return await conn.fetchval(LOCK_STRATEGY_TYPE, name) is not None


async def lock_dependencies(conn: Conn, child: str, parent: str | None) -> domain.DependencyState:
    """Lock the child (and the parent) in name order, then read what the rules look at."""
    names = sorted({child} if parent is None else {child, parent})
    projects = {r["name"]: r["project"] for r in await conn.fetch(LOCK_PAIR, names)}
    row = await conn.fetchrow(DEPENDENCY_STATE, child, parent)
    assert row is not None  # a SELECT without FROM has its one row
    current = [
        domain.Dependency(
            parent=r["parent"], enabled=r["enabled"], variants=_names.decode(r["variants"])
        )
        for r in await conn.fetch(DEPENDENCIES, child)
    ]
    return domain.DependencyState(
        projects=projects,
        parent_has_parents=row["parent_has_parents"],
        child_has_children=row["child_has_children"],
        current=current,
    )


class CloneContext(NamedTuple):
    """What a clone decides on, and the target project's environments (`names`, `types`,
    `sort_orders` in display order) that its answer shows."""

    source: domain.CloneSource | None
    holder_archived: bool | None
    environments: asyncpg.Record | None


async def lock_clone_source(
    conn: Conn, source_name: str, project_id: str, name: str
) -> CloneContext:
    """The source (share-locked), what a copy into the project takes from it, and whether the
    copy's name is free."""
    source = await conn.fetchrow(LOCK_CLONE_SOURCE, source_name)
    if source is None:
        return CloneContext(None, None, None)
    context = await conn.fetchrow(COPY_CONTEXT, source_name, project_id, name)
    assert context is not None  # a SELECT without FROM has its one row
    strategies = [
        (s.environment, msgspec.convert(s, StrategyData, from_attributes=True))
        for s in _source_strategies.decode(context["strategies"])
    ]
    variants = msgspec.convert(
        _source_variants.decode(context["variants"]), dict[str, list[Variant]], from_attributes=True
    )
    position = await eventlog.last_position(conn, domain.stream(source_name))
    clone_source = domain.CloneSource(
        name=source["name"],
        project=source["project"],
        feature_type=source["type"],
        description=source["description"],
        impression_data=source["impression_data"],
        position=position or 0,
        environments=list(context["environments"]),
        strategies=strategies,
        variants=variants,
        dependencies=_dependencies.decode(context["dependencies"]),
        tags=_tags.decode(context["tags"]),
    )
    return CloneContext(clone_source, context["holder_archived"], context)


async def strategies_in(conn: Conn, target: domain.Target) -> list[StrategyData]:
    found = await conn.fetchval(STRATEGIES_DATA_IN, target.feature, target.environment)
    return [
        msgspec.convert(s, StrategyData, from_attributes=True)
        for s in _source_strategies.decode(found)
    ]


async def strategy_sort_order(
    conn: Conn, target: domain.Target, strategy_id: uuid.UUID
) -> int | None:
    """The strategy's sortOrder; None when it is not the flag's in that environment."""
    value = await conn.fetchval(
        STRATEGY_SORT_ORDER, strategy_id, target.feature, target.environment
    )
    return None if value is None else int(value)


def _archive_flag(row: asyncpg.Record, enabled_in: list[str]) -> domain.ArchiveFlag:
    return domain.ArchiveFlag(
        name=row["name"],
        project=row["project"],
        feature_type=row["type"],
        description=row["description"],
        stale=row["stale"],
        impression_data=row["impression_data"],
        created_at=row["created_at"],
        archived_at=row["archived_at"],
        enabled_in=enabled_in,
    )


async def _archive_state(
    conn: Conn, rows: list[asyncpg.Record], names: list[str]
) -> tuple[dict[str, domain.ArchiveFlag], list[domain.Link]]:
    found = [row["name"] for row in rows]
    enabled: dict[str, list[str]] = {name: [] for name in found}
    for r in await conn.fetch(ENABLED_IN, found) if found else []:
        enabled[r["feature_name"]].append(r["environment"])
    links = [domain.Link(r["child"], r["parent"]) for r in await conn.fetch(LINKS, names)]
    return {row["name"]: _archive_flag(row, enabled[row["name"]]) for row in rows}, links


async def lock_archive_flags(
    conn: Conn, names: list[str], project_id: str
) -> tuple[dict[str, domain.ArchiveFlag], list[domain.Link]]:
    """The project's flags among names (row-locked, in name order), and every dependency of or
    on one of the names."""
    unique = sorted(set(names))
    return await _archive_state(
        conn, await conn.fetch(LOCK_ARCHIVE_FLAGS, unique, project_id), unique
    )


async def lock_archive_flag(
    conn: Conn, name: str
) -> tuple[domain.ArchiveFlag | None, list[domain.Link]]:
    """The flag of that name in any project (row-locked), and its dependencies either way."""
    row = await conn.fetchrow(LOCK_ARCHIVE_FLAG, name)
    flags, links = await _archive_state(conn, [] if row is None else [row], [name])
    return flags.get(name), links


async def freed_stream(conn: Conn, name: str) -> int | None:
    """The version of the stream of a deleted flag of that name, None when no flag ever had it.
    A new flag continues that stream at exactly that version (docs/events.md, "Streams"), so
    of two creates of one freed name the second finds it moved and is refused as taken.

    Read it before the statement that looks for the name's holder: a create that commits in
    between is then that holder (a 409), or it moved the stream past the version read (the
    append refuses it). Read after, a create committed in between would go unseen by both."""
    return await eventlog.stream_version(conn, domain.stream(name))


# A project environment's default strategy, the project's row share-locked (its archive and
# a change of the default wait; flag creates share-lock it too): NULL when it has none.
DEFAULT_STRATEGY = """
SELECT pe.default_strategy FROM project_environments pe
WHERE pe.project_id = $1 AND pe.environment = $2
"""
# Whether the active project has the environment (NULL: no such active project), its row
# locked: changes of its environments' default strategies queue.
LOCK_PROJECT_ENVIRONMENT = """
SELECT EXISTS (SELECT 1 FROM project_environments pe
               WHERE pe.project_id = p.id AND pe.environment = $2)
FROM projects p WHERE p.id = $1 AND p.archived_at IS NULL FOR UPDATE
"""
_default_strategy = msgspec.json.Decoder(DefaultStrategyData)


async def default_strategy(
    conn: Conn, project: str, environment: str
) -> DefaultStrategyData | None:
    """The project environment's default strategy; None: the built-in one."""
    found = await conn.fetchval(DEFAULT_STRATEGY, project, environment)
    return None if found is None else _default_strategy.decode(found)


# --- every flag at once (`python -m service import-unleash`: service/switchover/flags.py) ----

# The import locks what its flags refer to (share) before the flags (update), in the order a
# person's requests take them: tag types, strategy types and segments, projects, flags.
LOCK_ALL_TAG_TYPES_SHARED = "SELECT name FROM tag_types ORDER BY name FOR SHARE"
LOCK_ALL_STRATEGY_TYPES_SHARED = "SELECT name FROM strategy_definitions ORDER BY name FOR SHARE"
LOCK_ALL_SEGMENTS_SHARED = "SELECT id, name FROM segments ORDER BY id FOR SHARE"
LOCK_ALL_PROJECTS_SHARED = """
SELECT p.id,
       array(SELECT pe.environment FROM project_environments pe WHERE pe.project_id = p.id
             ORDER BY pe.environment) AS environments
FROM projects p WHERE p.archived_at IS NULL ORDER BY p.id FOR SHARE
"""
LOCK_ALL_FLAGS = """
SELECT name, project, type, description, impression_data, stale, created_at, archived_at
FROM features ORDER BY name FOR UPDATE
"""
ALL_FEATURE_ENVIRONMENTS = """
SELECT feature_name, environment, enabled, variants::text AS variants FROM feature_environments
"""
ALL_STRATEGIES = f"""
SELECT {_STRATEGY_COLUMNS} FROM feature_strategies s
ORDER BY s.feature_name, s.environment, s.sort_order, s.created_at, s.id
"""  # noqa: S608 - constants
ALL_TAGS = "SELECT feature_name, type, value FROM feature_tags"
ALL_DEPENDENCIES = """
SELECT child, parent, enabled, variants::text AS variants FROM feature_dependencies
"""
ALL_LINKS = """
SELECT feature_name, id, url, title FROM feature_links ORDER BY feature_name, created_at, id
"""
