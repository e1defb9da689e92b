"""Read SQL of export and import: an export file made from the read models (`export`, which
`python -m service` can call as well as the route), and what an import of a file decides on
(`load`), read after the locks that queue it with the commands it would otherwise race."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

import eventlog
from eventlog.events.features import StrategyData, Variant
from projections.shapes import ConstraintColumn, StrategyVariantColumn, VariantColumn
from service.context import queries as context_queries
from service.errors import NotFound
from service.features import domain as flags
from service.features import queries as flag_queries
from service.strategies.builtins import NAMES as BUILT_IN_STRATEGY_TYPES
from service.tag_types import queries as tag_type_queries
from service.transfer import domain, responses

if TYPE_CHECKING:
    from eventlog.connections import Conn
    from service.context.domain import Field
    from service.transfer.commands import ExportQuery, ImportToggles

# --- the export -------------------------------------------------------------------------------

ENVIRONMENT_EXISTS = "SELECT EXISTS (SELECT 1 FROM environments WHERE name = $1)"
NAMES_WITH_TAG = "SELECT DISTINCT feature_name FROM feature_tags WHERE value = $1"
ACTIVE_NAMES = "SELECT name FROM features WHERE archived_at IS NULL"
ACTIVE_NAMES_OF_PROJECT = ACTIVE_NAMES + " AND project = $1"
# The flags by name (archived ones too, as Unleash exports them), in name order.
FEATURES = """
SELECT name, description, type, project, stale, impression_data, archived_at IS NOT NULL AS archived
FROM features WHERE name = ANY($1::text[]) ORDER BY name
"""
# Each flag whose project has the environment: its switch and variants there (no row yet: off,
# none). Unleash's open-source export says "enabled" of every flag of an enabled environment
# (its query reads the environment's own `enabled`); this is the flag's.
ENVIRONMENTS = """
SELECT f.name AS feature_name, pe.environment, coalesce(fe.enabled, false) AS enabled,
       coalesce(fe.variants, '[]'::jsonb)::text AS variants
FROM features f
JOIN project_environments pe ON pe.project_id = f.project AND pe.environment = $2
LEFT JOIN feature_environments fe ON fe.feature_name = f.name AND fe.environment = $2
WHERE f.name = ANY($1::text[])
ORDER BY f.name
"""
STRATEGIES = """
SELECT s.id, s.feature_name, s.name, s.title, s.disabled, s.sort_order, s.segments,
       s.constraints::text AS constraints, s.variants::text AS variants,
       s.parameters::text AS parameters
FROM feature_strategies s
WHERE s.feature_name = ANY($1::text[]) AND s.environment = $2
ORDER BY s.feature_name, s.sort_order, s.created_at, s.id
"""
SEGMENTS = "SELECT id, name FROM segments WHERE id = ANY($1::integer[]) ORDER BY id"
TAGS = """
SELECT feature_name, type, value FROM feature_tags WHERE feature_name = ANY($1::text[])
ORDER BY feature_name, type, value
"""
TAG_TYPES = (
    "SELECT name, description, icon, color FROM tag_types WHERE name = ANY($1::text[])"
    " ORDER BY created_at, name"
)
DEPENDENCIES = """
SELECT child, parent, enabled, variants::text AS variants FROM feature_dependencies
WHERE child = ANY($1::text[]) ORDER BY child, parent
"""
_names = msgspec.json.Decoder(list[str])


async def _export_names(conn: Conn, query: ExportQuery) -> list[str]:
    """Unleash's choice: by tag value, else the names given, else the project's active flags,
    else (an empty list of names) every active flag."""
    if query.tag is not None:
        return [r["feature_name"] for r in await conn.fetch(NAMES_WITH_TAG, query.tag)]
    if query.features:
        return list(dict.fromkeys(query.features))
    if query.project is not None:
        if await conn.fetchval(flag_queries.PROJECT_EXISTS, query.project) is not True:
            raise flags.project_missing(query.project)
        return [r["name"] for r in await conn.fetch(ACTIVE_NAMES_OF_PROJECT, query.project)]
    return [r["name"] for r in await conn.fetch(ACTIVE_NAMES)]


def _uses(
    strategies: list[responses.ExportedStrategy],
    environments: list[responses.ExportedEnvironment],
) -> set[str]:
    """The context fields the flags use there: in constraints, as stickiness (of a strategy, of
    its variants, of the environment's variants), in overrides."""
    used: set[str] = set()
    for s in strategies:
        used.update(c.context_name for c in s.constraints)
        used.update(v.stickiness for v in s.variants)
        if "stickiness" in s.parameters:
            used.add(s.parameters["stickiness"])
    for e in environments:
        for v in e.variants:
            used.add(v.stickiness)
            used.update(o.context_name for o in v.overrides)
    return used


def _context_field(field: Field) -> responses.ExportedContextField:
    return responses.ExportedContextField(
        name=field.name,
        description=field.description,
        stickiness=field.stickiness,
        sort_order=field.sort_order,
        legal_values=[
            responses.ExportedLegalValue(value=v.value, description=v.description)
            for v in field.legal_values
        ],
    )


async def export(conn: Conn, query: ExportQuery) -> responses.ExportResult:
    """The export file of the flags the query chooses, from its environment (a 404 for an
    environment or a project that does not exist: Unleash answers an empty file)."""
    if not await conn.fetchval(ENVIRONMENT_EXISTS, query.environment):
        raise NotFound(f"Environment {query.environment} does not exist")
    names = await _export_names(conn, query)
    environment = query.environment
    features = [responses.ExportedFeature.from_row(r) for r in await conn.fetch(FEATURES, names)]
    names = [f.name for f in features]
    strategies = [
        responses.ExportedStrategy.from_row(r)
        for r in await conn.fetch(STRATEGIES, names, environment)
    ]
    environments = [
        responses.ExportedEnvironment.from_row(r)
        for r in await conn.fetch(ENVIRONMENTS, names, environment)
    ]
    used = _uses(strategies, environments)
    fields = [_context_field(f) for f in await context_queries.fields(conn) if f.name in used]
    segment_ids = sorted({s for strategy in strategies for s in strategy.segments})
    tags = [
        responses.ExportedTag(
            feature_name=r["feature_name"], tag_type=r["type"], tag_value=r["value"]
        )
        for r in await conn.fetch(TAGS, names)
    ]
    tag_types = sorted({t.tag_type for t in tags})
    parents: dict[str, list[responses.ExportedParent]] = {}
    for r in await conn.fetch(DEPENDENCIES, names):
        parents.setdefault(r["child"], []).append(
            responses.ExportedParent(
                feature=r["parent"], enabled=r["enabled"], variants=_names.decode(r["variants"])
            )
        )
    return responses.ExportResult(
        features=features,
        feature_strategies=strategies,
        feature_environments=environments,
        context_fields=fields,
        feature_tags=tags,
        segments=[
            responses.ExportedSegment(id=r["id"], name=r["name"])
            for r in await conn.fetch(SEGMENTS, segment_ids)
        ],
        tag_types=[
            responses.ExportedTagType(
                name=r["name"], description=r["description"], icon=r["icon"], color=r["color"]
            )
            for r in await conn.fetch(TAG_TYPES, tag_types)
        ],
        dependencies=[
            responses.ExportedDependencies(feature=child, dependencies=found)
            for child, found in parents.items()
        ],
    )


# --- what an import decides on ----------------------------------------------------------------

# Whether the project is active (NULL: no such project) and has the environment (NULL: no such
# environment); with FOR SHARE on the project's row when importing (flag creates take it too:
# archiving the project waits for the import).
_DESTINATION = """
SELECT p.archived_at IS NULL AS project_active,
       (SELECT EXISTS (SELECT 1 FROM project_environments pe
                       WHERE pe.project_id = p.id AND pe.environment = $2)
        FROM environments e WHERE e.name = $2) AS environment_enabled
FROM projects p WHERE p.id = $1
"""
_FLAGS = """
SELECT name, project, type, description, stale, impression_data, archived_at IS NOT NULL AS archived
FROM features WHERE name = ANY($1::text[]) ORDER BY name
"""
# The flags' strategies there, in order, as StrategyData (json per flag).
_STRATEGIES = """
SELECT s.feature_name, json_agg(json_build_object(
           'id', s.id, 'name', s.name, 'title', s.title, 'disabled', s.disabled,
           'sort_order', s.sort_order, 'constraints', s.constraints, 'parameters', s.parameters,
           'variants', s.variants, 'segments', s.segments)
           ORDER BY s.sort_order, s.created_at, s.id)::text AS strategies
FROM feature_strategies s
WHERE s.feature_name = ANY($1::text[]) AND s.environment = $2
GROUP BY s.feature_name
"""
_ENVIRONMENTS = """
SELECT feature_name, enabled, variants::text AS variants FROM feature_environments
WHERE feature_name = ANY($1::text[]) AND environment = $2
"""
_TAGS = "SELECT feature_name, type, value FROM feature_tags WHERE feature_name = ANY($1::text[])"
_DEPENDENCIES = """
SELECT child, parent, enabled, variants::text AS variants FROM feature_dependencies
WHERE child = ANY($1::text[]) ORDER BY child, parent
"""
_CHILDREN = """
SELECT parent, child FROM feature_dependencies WHERE parent = ANY($1::text[])
ORDER BY parent, child
"""
_CUSTOM_STRATEGY_TYPES = "SELECT name FROM strategy_definitions WHERE name = ANY($1::text[])"
_SEGMENTS = "SELECT id, name FROM segments WHERE name = ANY($1::text[])"
_TAG_TYPES = "SELECT name FROM tag_types WHERE name = ANY($1::text[])"
# The import's row locks, each taken where the commands it may meet take theirs: tag types and
# the project before the flags (as a create, a tagging), strategy types and segments after
# them (as a strategy's add); flags in name order.
_SHARE = " FOR SHARE"
_UPDATE = " FOR UPDATE"


class _Strategy(msgspec.Struct, frozen=True, kw_only=True):
    """A strategy as _STRATEGIES reads it (jsonb columns in their shapes)."""

    id: str
    name: str
    title: str | None
    disabled: bool
    sort_order: int
    constraints: list[ConstraintColumn]
    parameters: dict[str, str]
    variants: list[StrategyVariantColumn]
    segments: list[int]


_strategies = msgspec.json.Decoder(list[_Strategy])
_variants = msgspec.json.Decoder(list[VariantColumn])


def _as(value: Any, shape: type[Any]) -> Any:
    return msgspec.convert(value, shape, from_attributes=True)


async def destination(conn: Conn, cmd: ImportToggles, *, lock: bool) -> None:
    """The import's project and environment exist (docs/behavior.md, "Export and import")."""
    if lock:
        await conn.fetchval(flag_queries.LOCK_PROJECT_SHARED, cmd.project)
    row = await conn.fetchrow(_DESTINATION, cmd.project, cmd.environment)
    domain.check_destination(
        cmd.project,
        cmd.environment,
        project_active=row is not None and row["project_active"],
        environment_enabled=None if row is None else row["environment_enabled"],
    )


async def load(conn: Conn, cmd: ImportToggles, *, lock: bool) -> domain.State:
    """What the import of the file decides on (domain.State); `lock`: an import, which takes
    the locks first (an import's check reads without them)."""
    data = cmd.data
    field_names = sorted({f.name for f in data.context_fields})
    used_types = sorted({t.kind for t in data.feature_tags if t.kind is not None})
    if lock:
        for name in field_names:  # a field's creation queues on its name
            await context_queries.lock_name(conn, name)
        for name in sorted(set(used_types) | {t.name for t in data.tag_types}):
            await conn.execute(tag_type_queries.LOCK_TAG_TYPE_NAME, name)
    suffix = _SHARE if lock else ""
    tag_types = {r["name"] for r in await conn.fetch(_TAG_TYPES + suffix, used_types)}
    await destination(conn, cmd, lock=lock)
    listed = {f.name for f in data.features}
    parents = {p.feature for d in data.dependencies for p in d.dependencies}
    # Before the names' holders are read (features/queries.py, freed_stream): a flag created
    # meanwhile is then a holder, or has moved its stream past the version read.
    versions = await eventlog.stream_versions(conn, "feature", sorted(listed))
    flag_rows = await conn.fetch(_FLAGS + (_UPDATE if lock else ""), sorted(listed | parents))
    here = {
        r["name"]: domain.Here(
            name=r["name"],
            project=r["project"],
            archived=r["archived"],
            fields=flags.FlagFields(
                description=r["description"],
                type=r["type"],
                stale=r["stale"],
                impression_data=r["impression_data"],
            ),
        )
        for r in flag_rows
    }
    ours = sorted(
        n for n in listed if n in here and here[n].project == cmd.project and not here[n].archived
    )
    custom = sorted({s.name for s in data.feature_strategies} - BUILT_IN_STRATEGY_TYPES)
    strategy_types = dict.fromkeys(BUILT_IN_STRATEGY_TYPES, False)
    strategy_types |= {
        r["name"]: True for r in await conn.fetch(_CUSTOM_STRATEGY_TYPES + suffix, custom)
    }
    segment_names = sorted({s.name for s in data.segments})
    segments = {r["name"]: r["id"] for r in await conn.fetch(_SEGMENTS + suffix, segment_names)}
    strategies = {
        r["feature_name"]: [_as(s, StrategyData) for s in _strategies.decode(r["strategies"])]
        for r in await conn.fetch(_STRATEGIES, ours, cmd.environment)
    }
    environments = {
        r["feature_name"]: domain.EnvironmentHere(
            enabled=r["enabled"], variants=_as(_variants.decode(r["variants"]), list[Variant])
        )
        for r in await conn.fetch(_ENVIRONMENTS, ours, cmd.environment)
    }
    tags: dict[str, set[tuple[str, str]]] = {}
    for r in await conn.fetch(_TAGS, ours):
        tags.setdefault(r["feature_name"], set()).add((r["type"], r["value"]))
    dependencies: dict[str, list[flags.Dependency]] = {}
    for r in await conn.fetch(_DEPENDENCIES, sorted(set(ours) | parents)):
        dependencies.setdefault(r["child"], []).append(
            flags.Dependency(
                parent=r["parent"], enabled=r["enabled"], variants=_names.decode(r["variants"])
            )
        )
    children: dict[str, list[str]] = {}
    for r in await conn.fetch(_CHILDREN, ours):
        children.setdefault(r["parent"], []).append(r["child"])
    fields = {f.name: f for f in await context_queries.fields(conn)}
    freed = {name: version for name, version in versions.items() if name not in here}
    return domain.State(
        flags=here,
        strategies=strategies,
        environments=environments,
        tags=tags,
        dependencies=dependencies,
        children=children,
        strategy_types=strategy_types,
        context_fields=fields,
        segments=segments,
        tag_types=tag_types,
        freed=freed,
    )
