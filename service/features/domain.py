"""Flags, their configuration and segments: pure decisions, no I/O.

Each command has one function here: it takes the request and the state the handler loaded
under locks (None where the thing does not exist), checks every rule in the order the API
reports them, and returns the events to append.
"""

from __future__ import annotations

import math
import re
import urllib.parse
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, NamedTuple, TypeVar, get_args

import msgspec

from eventlog.events.features import (
    ClonedDependency,
    ClonedEnvironment,
    ClonedTag,
    Constraint,
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
    SegmentCreated,
    SegmentDeleted,
    SegmentUpdated,
    StrategiesReordered,
    StrategyAdded,
    StrategyData,
    StrategyRemoved,
    StrategySortOrder,
    StrategyUpdated,
    StrategyVariant,
    Variant,
)
from eventlog.events.flag_extras import (
    FeatureCompleted,
    FeatureLinkAdded,
    FeatureLinkRemoved,
    FeatureLinkUpdated,
    FeatureUncompleted,
)
from eventlog.events.projects import DefaultStrategyData, DefaultStrategySet
from service import names
from service.errors import Conflict, InvalidOperation, NameExists, NotFound, ValidationError
from service.features import commands, patches
from service.names import validate_name

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

    from service.features.commands import (
        CloneFeature,
        CreateFeature,
        DependencyBody,
        SegmentBody,
        StrategyBody,
        TagBody,
    )

V = TypeVar("V", commands.StrategyVariant, commands.Variant)
E = TypeVar("E")

FLAG_EXISTS = "A flag with that name already exists"
ARCHIVED_FLAG_EXISTS = "An archived flag with that name already exists"
# What archiving, reviving and deleting append to a flag's stream.
FlagEvent = (
    DependencyRemoved
    | FeatureArchived
    | FeatureRevived
    | FeatureEnvironmentDisabled
    | FeatureDeleted
)


def stream(name: str) -> tuple[str, str]:
    return ("feature", name)


def segment_stream(segment_id: int) -> tuple[str, str]:
    return ("segment", str(segment_id))


def project_missing(project_id: str) -> NotFound:
    return NotFound(f"Project {project_id} does not exist")


def _name_free(*, holder_archived: bool | None) -> None:
    """holder_archived: None when no flag has the name, else whether the one that has it is
    archived (names are unique across projects and the archive)."""
    if holder_archived is not None:
        raise NameExists(ARCHIVED_FLAG_EXISTS if holder_archived else FLAG_EXISTS)


def _as(value: object, shape: type[E]) -> E:
    """A request's nested values as the stored event's shapes (same field names)."""
    return msgspec.convert(value, shape, from_attributes=True)


# --- the flag ---------------------------------------------------------------------------------


def create_feature(
    cmd: CreateFeature,
    project_id: str,
    *,
    project_active: bool,
    holder_archived: bool | None,
    now: datetime,
) -> FeatureCreated:
    validate_name(cmd.name)
    if not project_active:
        raise project_missing(project_id)
    _name_free(holder_archived=holder_archived)
    return FeatureCreated(
        name=cmd.name,
        project=project_id,
        feature_type=cmd.type,
        description=cmd.description or None,  # an empty description is stored as null
        impression_data=cmd.impression_data,
        created_at=now,
    )


# --- the archive: archive, revive, delete (docs/behavior.md, "The archive") ---------------


class ArchiveFlag(msgspec.Struct, frozen=True, kw_only=True):
    """A flag as the archive's rules see it, read with its row locked: its record (what a
    deletion keeps for the audit trail) and the environments it is switched on in."""

    name: str
    project: str
    feature_type: str
    description: str | None
    stale: bool
    impression_data: bool
    created_at: datetime
    archived_at: datetime | None
    enabled_in: list[str] = []


class Link(NamedTuple):
    """A dependency: `child` depends on `parent`."""

    child: str
    parent: str


NAMED_AT_MOST = 10  # flags a refusal names; the count of the others follows


def _named(names: Sequence[str]) -> str:
    shown = ", ".join(names[:NAMED_AT_MOST])
    more = len(names) - NAMED_AT_MOST
    return f"{shown} and {more} more" if more > 0 else shown


def _listed(names: Sequence[str]) -> list[str]:
    """Each name once, in the order given."""
    return list(dict.fromkeys(names))


def parents_with_children(names: Sequence[str], links: Sequence[Link]) -> list[str]:
    """The flags among `names` that other flags, not among them, depend on (Unleash's orphan
    parents), in name order."""
    listed = set(names)
    return sorted(
        {link.parent for link in links if link.parent in listed and link.child not in listed}
    )


def _no_children_left(verb: str, names: Sequence[str], links: Sequence[Link]) -> None:
    parents = parents_with_children(names, links)
    if parents:
        listed = set(names)
        children = sorted(
            {link.child for link in links if link.parent in parents and link.child not in listed}
        )
        them = "it" if len(parents) == 1 else "them"
        raise InvalidOperation(
            f"You can not {verb} {_named(parents)} since other flags depend on {them}:"
            f" {_named(children)}"
        )


def _archived(name: str, project_id: str, links: Sequence[Link], now: datetime) -> list[FlagEvent]:
    """A flag's events of an archive: its own dependencies go first (as in Unleash, an
    archived flag depends on nothing), then the archive."""
    events: list[FlagEvent] = [
        DependencyRemoved(name=name, project=project_id, parent=parent)
        for parent in sorted({link.parent for link in links if link.child == name})
    ]
    events.append(FeatureArchived(name=name, project=project_id, archived_at=now))
    return events


def archive_feature(
    name: str,
    project_id: str,
    flag: ArchiveFlag | None,
    *,
    links: Sequence[Link],
    now: datetime,
) -> list[FlagEvent]:
    """flag: the project's flag of that name, None when it has none."""
    if flag is None or flag.archived_at is not None:
        raise NotFound(f"Could not find an active flag named {name} in project {project_id}")
    _no_children_left("archive", [name], links)
    return _archived(name, project_id, links, now)


def archive_features(
    names: Sequence[str],
    project_id: str,
    *,
    flags: Mapping[str, ArchiveFlag],
    links: Sequence[Link],
    now: datetime,
) -> list[FlagEvent]:
    """All or nothing: every name must be an active flag of this project (unlike Unleash, which
    skips the others), and no flag outside the list may depend on one in it."""
    unique = _listed(names)
    missing = [n for n in unique if n not in flags or flags[n].archived_at is not None]
    if missing:
        raise NotFound(f"No active flag named {_named(missing)} in project {project_id}")
    _no_children_left("archive", unique, links)
    return [event for n in unique for event in _archived(n, project_id, links, now)]


def _revived(flag: ArchiveFlag, now: datetime) -> list[FlagEvent]:
    """Revived as in Unleash: at lifecycle `initial`, and switched off wherever it was on."""
    events: list[FlagEvent] = [
        FeatureRevived(
            name=flag.name, project=flag.project, revived_at=now, lifecycle_stage="initial"
        )
    ]
    events += [
        FeatureEnvironmentDisabled(name=flag.name, project=flag.project, environment=environment)
        for environment in sorted(flag.enabled_in)
    ]
    return events


def revive_features(
    names: Sequence[str],
    project_id: str,
    *,
    project_active: bool,
    flags: Mapping[str, ArchiveFlag],
    now: datetime,
) -> list[FlagEvent]:
    """All or nothing: every name must be an archived flag of this project. flags: the
    project's flags among names."""
    if not project_active:
        raise project_missing(project_id)
    unique = _listed(names)
    missing = [n for n in unique if n not in flags or flags[n].archived_at is None]
    if missing:
        raise NotFound(f"No archived flag named {_named(missing)} in project {project_id}")
    return [event for n in unique for event in _revived(flags[n], now)]


def revive_feature(
    name: str, flag: ArchiveFlag | None, *, project_active: bool, now: datetime
) -> list[FlagEvent]:
    """The archive's own revive, by name alone: into the flag's project, which must be active.
    flag: the flag of that name, None when there is none."""
    if flag is None or flag.archived_at is None:
        raise NotFound(f"No archived flag named {name}")
    if not project_active:
        raise project_missing(flag.project)
    return _revived(flag, now)


def _deleted(flag: ArchiveFlag, now: datetime) -> FeatureDeleted:
    assert flag.archived_at is not None  # only archived flags are deleted
    return FeatureDeleted(
        name=flag.name,
        project=flag.project,
        feature_type=flag.feature_type,
        description=flag.description,
        stale=flag.stale,
        impression_data=flag.impression_data,
        created_at=flag.created_at,
        archived_at=flag.archived_at,
        deleted_at=now,
    )


def delete_feature(
    name: str, flag: ArchiveFlag | None, *, links: Sequence[Link], now: datetime
) -> FeatureDeleted:
    """Only an archived flag is deleted (unlike Unleash, which answers 200 for an active one,
    deletes nothing and still records a deletion). flag: the flag of that name, or None."""
    if flag is None:
        raise NotFound(f"No archived flag named {name}")
    if flag.archived_at is None:
        raise NotFound(f"Flag {name} is not archived: archive it before deleting it")
    _no_children_left("delete", [name], links)
    return _deleted(flag, now)


def delete_features(
    names: Sequence[str],
    project_id: str,
    *,
    flags: Mapping[str, ArchiveFlag],
    links: Sequence[Link],
    now: datetime,
) -> list[FeatureDeleted]:
    """All or nothing: every name must be an archived flag of this project (unlike Unleash,
    which skips the others), and no flag outside the list may depend on one in it."""
    unique = _listed(names)
    missing = [n for n in unique if n not in flags or flags[n].archived_at is None]
    if missing:
        raise NotFound(f"No archived flag named {_named(missing)} in project {project_id}")
    _no_children_left("delete", unique, links)
    return [_deleted(flags[n], now) for n in unique]


def mark_stale(
    names: list[str], project_id: str, *, stale: bool, flags: dict[str, tuple[str, bool]]
) -> list[FeatureStaleSet]:
    """As Unleash: names that are no flag are ignored; a flag of another project refuses the
    whole request; one event per flag whose staleness changes. flags: name -> (project,
    stale) of the flags among names."""
    others = sorted({project for project, _ in flags.values() if project != project_id})
    if others:
        raise InvalidOperation(
            "The operation could not be completed. The features exist, but the provided project "
            f'ids ("{",".join(others)}") does not match the project provided in request URL '
            f'("{project_id}").'
        )
    return [
        FeatureStaleSet(name=name, project=project_id, stale=stale)
        for name in dict.fromkeys(names)
        if name in flags and flags[name][1] != stale
    ]


# --- strategies, switches, variants -------------------------------------------------------


class Target(msgspec.Struct, frozen=True):
    """A flag in one environment, as the configuration routes name it."""

    feature: str
    project: str
    environment: str


class EnvironmentState(msgspec.Struct, frozen=True, kw_only=True):
    """The flag (active, in the target's project) as one environment sees it."""

    environment_enabled: bool  # in the project
    enabled: bool  # the flag's switch there


def check_target(target: Target, state: EnvironmentState | None) -> None:
    if state is None:
        raise NotFound(f"There is no flag named {target.feature} in project {target.project}")
    if not state.environment_enabled:
        raise NotFound(
            f"Environment {target.environment} is not enabled in project {target.project}"
        )


def _check_segments(missing: Sequence[int]) -> None:
    if missing:
        raise ValidationError(f"Segment {missing[0]} does not exist - at `$.segments`")


def check_strategy_type(
    target: Target, state: EnvironmentState | None, name: str, *, known: bool
) -> None:
    """A strategy names a strategy type that exists (built in or custom; a deprecated one
    too), as in Unleash; checked after the flag and environment are found."""
    check_target(target, state)
    if not known:
        raise ValidationError(f"Could not find strategy type with name {name} - at `$.name`")


def strategy_not_found(strategy_id: object) -> NotFound:
    return NotFound(f"Could not find strategy with id={strategy_id}")


def add_strategy(  # noqa: PLR0913 - the facts the rules need
    target: Target,
    body: StrategyBody,
    state: EnvironmentState | None,
    *,
    missing_segments: Sequence[int],
    strategy_id: str,
    next_sort_order: int,
    now: datetime,
    spread: bool = True,
) -> StrategyAdded:
    """spread: variable variants share what fixed ones leave (a request's variants); False
    keeps weights another server spread already (an import: spread_weights, kept_weights)."""
    check_target(target, state)
    _check_segments(missing_segments)
    return StrategyAdded(
        name=target.feature,
        project=target.project,
        environment=target.environment,
        strategy=strategy_data(body, strategy_id, next_sort_order, spread=spread),
        added_at=now,
    )


def update_strategy(  # noqa: PLR0913 - the facts the rules need
    target: Target,
    body: StrategyBody,
    state: EnvironmentState | None,
    *,
    strategy_id: str,
    current_sort_order: int | None,
    missing_segments: Sequence[int],
    spread: bool = True,
) -> StrategyUpdated:
    """current_sort_order: the strategy's, None when it is not the flag's there. A PUT without
    sortOrder keeps the strategy's place. spread: as add_strategy takes it."""
    check_target(target, state)
    if current_sort_order is None:
        raise strategy_not_found(strategy_id)
    _check_segments(missing_segments)
    return StrategyUpdated(
        name=target.feature,
        project=target.project,
        environment=target.environment,
        strategy=strategy_data(body, strategy_id, current_sort_order, spread=spread),
    )


def remove_strategy(
    target: Target, state: EnvironmentState | None, *, strategy_id: str, exists: bool
) -> StrategyRemoved:
    check_target(target, state)
    if not exists:
        raise strategy_not_found(strategy_id)
    return StrategyRemoved(
        name=target.feature,
        project=target.project,
        environment=target.environment,
        strategy_id=strategy_id,
    )


def switch_environment(
    target: Target, state: EnvironmentState | None, *, on: bool
) -> FeatureEnvironmentEnabled | FeatureEnvironmentDisabled | None:
    """None: the flag is already in that state there, which records nothing."""
    check_target(target, state)
    assert state is not None
    if state.enabled == on:
        return None
    kind = FeatureEnvironmentEnabled if on else FeatureEnvironmentDisabled
    return kind(name=target.feature, project=target.project, environment=target.environment)


def set_environment_variants(
    target: Target,
    variants: Sequence[commands.Variant],
    state: EnvironmentState | None,
    *,
    spread: bool = True,
) -> EnvironmentVariantsSet:
    """spread: as add_strategy takes it."""
    check_target(target, state)
    check_variant_names(variants, "$")
    weighed = spread_weights(variants, "$") if spread else kept_weights(variants, "$")
    return EnvironmentVariantsSet(
        name=target.feature,
        project=target.project,
        environment=target.environment,
        variants=_as(weighed, list[Variant]),
    )


# Operators that compare against one `value`; the rest take a `values` list.
_SINGLE_VALUE = frozenset(
    op for op in get_args(commands.Operator) if op.startswith(("NUM_", "DATE_", "SEMVER_"))
)
_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$"
)
TOTAL_WEIGHT = 1000


def by_name(variants: Iterable[V]) -> list[V]:
    """Variants as Unleash 6.10.1 stores them (and SDKs then weigh them): by name, in the
    order of JavaScript's `localeCompare` (ICU's root collation): collation_key."""
    return sorted(variants, key=lambda v: collation_key(v.name))


# ICU's root collation orders ASCII's spaces, punctuation and symbols so, before digits.
_PUNCTUATION: Final = " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$"


def collation_key(text: str) -> tuple[tuple[tuple[int, int], ...], tuple[bool, ...]]:
    """A sort key ordering as `localeCompare` does, exactly for ASCII: punctuation and
    symbols, then digits, then letters regardless of case; a tie goes to lower case first.
    Other characters come after the ASCII ones of their kind, by code point."""

    def primary(c: str) -> tuple[int, int]:
        if c.isdigit():
            return 1, ord(c)
        if c.isalpha():
            return 2, ord(c.casefold()[0])
        at = _PUNCTUATION.find(c)
        return 0, at if at >= 0 else len(_PUNCTUATION) + ord(c)

    return tuple(primary(c) for c in text), tuple(c.isupper() for c in text)


def spread_weights(variants: Sequence[V], path: str) -> list[V]:
    """Fixed variants keep their weight; variable ones share the rest so all total 1000 (the
    first ones sent one more when it does not divide); then stored by name."""
    if not variants:
        return []
    fixed = sum(v.weight for v in variants if v.weight_type == "fix")
    variable = [i for i, v in enumerate(variants) if v.weight_type != "fix"]
    if fixed > TOTAL_WEIGHT:
        raise ValidationError(f"Fixed variant weights total {fixed}, more than 1000 - at `{path}`")
    if not variable:
        if fixed != TOTAL_WEIGHT:
            raise ValidationError(
                f"Variant weights must total 1000 (got {fixed}) or include a variable variant"
                f" - at `{path}`"
            )
        return by_name(variants)
    share, extra = divmod(TOTAL_WEIGHT - fixed, len(variable))
    weights = {i: share + (1 if n < extra else 0) for n, i in enumerate(variable)}
    return by_name(
        msgspec.structs.replace(v, weight=weights[i]) if i in weights else v
        for i, v in enumerate(variants)
    )


def kept_weights(variants: Sequence[V], path: str) -> list[V]:
    """Weights another server spread already (Unleash gives the remainder of a division to
    the variants in the order they were sent, then stores them by name, so spreading them
    again here could move a point of weight): kept when they total 1000, as spread ones do,
    and stored by name."""
    if not variants:
        return []
    total = sum(v.weight for v in variants)
    if total != TOTAL_WEIGHT:
        raise ValidationError(f"Variant weights must total 1000 (got {total}) - at `{path}`")
    return by_name(variants)


def check_variant_names(
    variants: Sequence[commands.StrategyVariant | commands.Variant], path: str
) -> None:
    """Names are unique, and a payload's value fits its type (json parses, number is one)."""
    names = [v.name for v in variants]
    if len(names) != len(set(names)):
        raise ValidationError(f"Variant names must be unique - at `{path}`")
    for i, variant in enumerate(variants):
        payload = variant.payload
        if payload is None:
            continue
        where = f"{path}[{i}].payload.value"
        if payload.type == "number" and not _is_number(payload.value):
            raise ValidationError(f"A number payload needs a number - at `{where}`")
        if payload.type == "json":
            try:
                msgspec.json.decode(payload.value)
            except msgspec.DecodeError:
                raise ValidationError(f"A json payload needs valid JSON - at `{where}`") from None


def _is_number(value: str) -> bool:
    try:
        return math.isfinite(float(value))
    except ValueError:
        return False


def check_constraints(constraints: Sequence[commands.Constraint]) -> None:
    for i, c in enumerate(constraints):
        check_constraint(c, f"$.constraints[{i}]")


def check_constraint(c: commands.Constraint, path: str = "$") -> None:
    """One constraint's values fit its operator: a number, a date or a semantic version as
    `value` for the NUM_, DATE_ and SEMVER_ operators, a non-empty `values` list for the others
    (what `POST /api/admin/constraints/validate` checks, and every strategy and segment)."""
    if c.operator in _SINGLE_VALUE:
        _check_single_value(c.operator, c.value, f"{path}.value")
    elif not c.values:
        raise ValidationError(f"{c.operator} needs a non-empty `values` list - at `{path}`")


def _check_single_value(operator: str, value: str | None, path: str) -> None:
    if value is None or not value.strip():
        raise ValidationError(f"{operator} needs a `value` - at `{path}`")
    if operator.startswith("NUM_"):
        if not _is_number(value):
            raise ValidationError(f"{operator} needs a number - at `{path}`")
    elif operator.startswith("DATE_"):
        try:
            datetime.fromisoformat(value)
        except ValueError:
            raise ValidationError(f"{operator} needs an ISO 8601 date - at `{path}`") from None
    elif not _SEMVER.fullmatch(value):
        raise ValidationError(f"{operator} needs a semantic version - at `{path}`")


def strategy_data(
    body: StrategyBody, strategy_id: str, default_sort_order: int, *, spread: bool = True
) -> StrategyData:
    """Validate a strategy body and decide what is stored (variant weights spread, or kept
    as given: add_strategy)."""
    check_constraints(body.constraints)
    check_variant_names(body.variants, "$.variants")
    weigh = spread_weights if spread else kept_weights
    return StrategyData(
        id=strategy_id,
        name=body.name,
        title=body.title,
        disabled=bool(body.disabled),
        sort_order=default_sort_order if body.sort_order is None else body.sort_order,
        constraints=_as(body.constraints, list[Constraint]),
        parameters=dict(body.parameters),
        variants=_as(weigh(body.variants, "$.variants"), list[StrategyVariant]),
        segments=list(dict.fromkeys(body.segments)),
    )


# --- tags ---------------------------------------------------------------------------------------


def tag_value(body_value: str) -> str:
    """Tag values are trimmed and 2..50 characters long (service/names.py)."""
    return names.tag_value(body_value)


def _active_flag_project(name: str, project: str | None) -> str:
    """The project of an active flag; None stands for no active flag of that name."""
    if project is None:
        raise NotFound(f"There is no active flag named {name}")
    return project


def add_tag(  # noqa: PLR0913 - the facts the rules need
    name: str,
    body: TagBody,
    *,
    type_exists: bool,
    project: str | None,
    has_tag: bool,
    now: datetime,
) -> FeatureTagged:
    """`project`: the flag's, None when no active flag has that name; `type_exists`: whether
    the tag type exists (as in Unleash, a tag of an unknown type is a 400)."""
    value = tag_value(body.value)
    if not type_exists:
        raise ValidationError(f"Tag type {body.type} does not exist - at `$.type`")
    project = _active_flag_project(name, project)
    if has_tag:
        raise Conflict(f"Flag {name} already has the tag {body.type}:{value}")
    return FeatureTagged(name=name, tag_type=body.type, value=value, tagged_at=now, project=project)


def remove_tag(
    name: str, tag_type: str, value: str, *, project: str | None, has_tag: bool
) -> FeatureUntagged:
    project = _active_flag_project(name, project)
    if not has_tag:
        raise NotFound(f"Flag {name} has no tag {tag_type}:{value}")
    return FeatureUntagged(name=name, tag_type=tag_type, value=value, project=project)


# --- dependencies -----------------------------------------------------------------------------


class Dependency(msgspec.Struct, frozen=True, kw_only=True):
    """A child's dependency on one parent, as it stands."""

    parent: str
    enabled: bool
    variants: list[str]


class DependencyState(msgspec.Struct, frozen=True, kw_only=True):
    """What the dependency rules look at, read with both flags locked."""

    projects: dict[str, str]  # active flags among child and parent -> their project
    parent_has_parents: bool
    child_has_children: bool
    current: list[Dependency]  # the child's dependencies now


def _check_child(child: str, project: str, projects: dict[str, str]) -> None:
    if projects.get(child) != project:
        raise NotFound(f"There is no active flag named {child} in project {project}")


def add_dependency(
    child: str, project: str, body: DependencyBody, state: DependencyState
) -> DependencyAdded:
    """One level only: no self-dependency, no parent with a parent, no child with children.
    A dependency that stands exactly so already is a 409; one with other settings is replaced."""
    _check_child(child, project, state.projects)
    if body.feature == child:
        raise ValidationError("A flag cannot depend on itself - at `$.feature`")
    if state.projects.get(body.feature) != project:
        raise ValidationError(
            f"The parent {body.feature} must be an active flag in project {project}"
            " - at `$.feature`"
        )
    if state.parent_has_parents:
        raise ValidationError(
            f"{body.feature} depends on another flag itself; chains are not allowed"
            " - at `$.feature`"
        )
    if state.child_has_children:
        raise ValidationError(f"{child} is a parent of other flags; it cannot depend on one itself")
    if body.variants and not body.enabled:
        raise ValidationError("variants apply only when enabled is true - at `$.variants`")
    wanted = Dependency(
        parent=body.feature, enabled=body.enabled, variants=list(dict.fromkeys(body.variants))
    )
    if any(_same_dependency(wanted, d) for d in state.current):
        raise Conflict(f"{child} already depends on {body.feature} with these settings")
    return DependencyAdded(
        name=child,
        project=project,
        parent=wanted.parent,
        enabled=wanted.enabled,
        variants=wanted.variants,
    )


def _same_dependency(a: Dependency, b: Dependency) -> bool:
    """The variants a parent must resolve to are a set: their order means nothing."""
    return (a.parent, a.enabled, set(a.variants)) == (b.parent, b.enabled, set(b.variants))


def remove_dependency(
    child: str, project: str, parent: str, state: DependencyState
) -> DependencyRemoved:
    _check_child(child, project, state.projects)
    if parent not in {d.parent for d in state.current}:
        raise NotFound(f"{child} does not depend on {parent}")
    return DependencyRemoved(name=child, project=project, parent=parent)


def remove_dependencies(
    child: str, project: str, state: DependencyState
) -> list[DependencyRemoved]:
    _check_child(child, project, state.projects)
    return [DependencyRemoved(name=child, project=project, parent=d.parent) for d in state.current]


# --- clone --------------------------------------------------------------------------------------


class CloneSource(msgspec.Struct, frozen=True, kw_only=True):
    """The source flag (active, share-locked) and everything a copy into the target project
    takes from it (docs/behavior.md, "Cloning a flag")."""

    name: str
    project: str
    feature_type: str
    description: str | None
    impression_data: bool
    position: int  # of the source stream's latest event
    environments: list[str]  # the target project's
    strategies: list[tuple[str, StrategyData]]  # (environment, strategy) in order
    variants: dict[str, list[Variant]]  # by environment
    dependencies: list[ClonedDependency]  # parents in the target project
    tags: list[ClonedTag]


def clone_feature(  # noqa: PLR0913 - the facts the rules need
    cmd: CloneFeature,
    source_name: str,
    project_id: str,
    source: CloneSource | None,
    *,
    project_active: bool,
    holder_archived: bool | None,
    new_id: Callable[[], str],
    now: datetime,
) -> FeatureCloned:
    if source is None:
        raise NotFound(f"Could not find feature flag with name {source_name}")
    if not project_active:
        raise project_missing(project_id)
    validate_name(cmd.name)
    _name_free(holder_archived=holder_archived)
    strategies: dict[str, list[StrategyData]] = {env: [] for env in source.environments}
    for environment, strategy in source.strategies:
        if environment in strategies:
            strategies[environment].append(
                clone_strategy(strategy, cmd.name, new_id(), replace_group_id=cmd.replace_group_id)
            )
    return FeatureCloned(
        name=cmd.name,
        project=project_id,
        feature_type=source.feature_type,
        description=source.description,
        impression_data=source.impression_data,
        created_at=now,
        source=source.name,
        source_project=source.project,
        source_position=source.position,
        environments=[
            ClonedEnvironment(
                environment=env, strategies=found, variants=source.variants.get(env, [])
            )
            for env, found in strategies.items()
        ],
        dependencies=source.dependencies,
        tags=source.tags,
    )


def clone_strategy(
    strategy: StrategyData, new_name: str, new_id: str, *, replace_group_id: bool
) -> StrategyData:
    """A copy with a new id; groupId follows the new name unless told otherwise."""
    parameters = dict(strategy.parameters)
    if replace_group_id and "groupId" in parameters:
        parameters["groupId"] = new_name
    return msgspec.structs.replace(strategy, id=new_id, parameters=parameters)


# --- segments ---------------------------------------------------------------------------------


def _segment_name_free(body: SegmentBody, *, name_taken: bool) -> None:
    segment_name_free(body.name, taken=name_taken)


def segment_name_free(name: str, *, taken: bool) -> None:
    """A segment may take the name (its form is the body's to check): else 409, as a create of
    it would answer."""
    if taken:
        raise NameExists(f"A segment named {name} already exists")


def segment_missing(segment_id: object) -> NotFound:
    return NotFound(f"No segment with id {segment_id}")


def create_segment(
    body: SegmentBody, *, segment_id: int, name_taken: bool, now: datetime
) -> SegmentCreated:
    check_constraints(body.constraints)
    _segment_name_free(body, name_taken=name_taken)
    return SegmentCreated(
        segment_id=segment_id,
        name=body.name,
        description=body.description,
        constraints=_as(body.constraints, list[Constraint]),
        created_at=now,
    )


def update_segment(
    segment_id: int, body: SegmentBody, *, found: bool, name_taken: bool
) -> SegmentUpdated:
    check_constraints(body.constraints)
    if not found:
        raise segment_missing(segment_id)
    _segment_name_free(body, name_taken=name_taken)
    return SegmentUpdated(
        segment_id=segment_id,
        name=body.name,
        description=body.description,
        constraints=_as(body.constraints, list[Constraint]),
    )


def delete_segment(segment_id: int, *, name: str | None, used_by: int) -> SegmentDeleted:
    """name: the segment's, None when there is no such segment."""
    if name is None:
        raise segment_missing(segment_id)
    if used_by:
        raise Conflict(
            f"Segment {segment_id} is used by {used_by} strategy(ies); remove it there first"
        )
    return SegmentDeleted(segment_id=segment_id, name=name)


# --- the flag's page (issue 42) ---------------------------------------------------------------


def validate_feature_name(name: str, *, holder_archived: bool | None) -> None:
    """`POST /api/admin/features/validate`: the name follows the rule and no flag has it."""
    validate_name(name)
    _name_free(holder_archived=holder_archived)


def initial_tags(tags: Sequence[TagBody], known_types: Collection[str]) -> list[tuple[str, str]]:
    """The tags a new flag is created with, checked as adding each would check it: (type,
    value) pairs, values trimmed, each once. known_types: the tag types that exist. Unlike
    Unleash, whose create fails with a 500 (after creating the flag) when a tag is not yet one
    of its tags: here a tag needs only its type."""
    found: dict[tuple[str, str], None] = {}
    for i, tag in enumerate(tags):
        found[_checked_tag(tag, f"$.tags[{i}]", known_types)] = None
    return list(found)


def tag_new_feature(event: FeatureCreated, tags: Sequence[tuple[str, str]]) -> list[FeatureTagged]:
    return [
        FeatureTagged(
            name=event.name,
            tag_type=tag_type,
            value=value,
            tagged_at=event.created_at,
            project=event.project,
        )
        for tag_type, value in tags
    ]


def _checked_tag(tag: TagBody, path: str, known_types: Collection[str]) -> tuple[str, str]:
    """As add_tag checks one: the value trimmed, 2..50 characters, of a type that exists."""
    value = names.tag_value(tag.value, f"{path}.value")
    if tag.type not in known_types:
        raise ValidationError(f"Tag type {tag.type} does not exist - at `{path}.type`")
    return (tag.type, value)


def update_tags(  # noqa: PLR0913 - the facts the rules need
    name: str,
    added: Sequence[TagBody],
    removed: Sequence[TagBody],
    *,
    known_types: Collection[str],
    project: str | None,
    current: set[tuple[str, str]],
    now: datetime,
) -> list[FeatureTagged | FeatureUntagged]:
    """`PUT /api/admin/features/:name/tags`: the flag gets the added tags it lacks and loses
    the removed ones it has; the others are no change. Both lists are checked as a tag is; a
    tag both added and removed is a 400 (Unleash removes it then, silently)."""
    adding = list(
        dict.fromkeys(
            _checked_tag(t, f"$.addedTags[{i}]", known_types) for i, t in enumerate(added)
        )
    )
    removing = list(
        dict.fromkeys(
            _checked_tag(t, f"$.removedTags[{i}]", known_types) for i, t in enumerate(removed)
        )
    )
    both = [t for t in adding if t in removing]
    if both:
        raise ValidationError(
            f"The tag {both[0][0]}:{both[0][1]} is both added and removed - at `$.removedTags`"
        )
    project = _active_flag_project(name, project)
    return [
        *(
            FeatureUntagged(name=name, tag_type=kind, value=value, project=project)
            for kind, value in removing
            if (kind, value) in current
        ),
        *(
            FeatureTagged(name=name, tag_type=kind, value=value, tagged_at=now, project=project)
            for kind, value in adding
            if (kind, value) not in current
        ),
    ]


class FlagFields(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """What a PATCH of a flag may change; a member the patch removes takes its default here,
    as in Unleash (its schema's defaults fill it in)."""

    description: commands.Description | None = None
    type: commands.FeatureType = "release"
    stale: bool = False
    impression_data: bool = False


PATCHABLE: Final = ("description", "type", "stale", "impressionData")


def _member(pointer: str, where: str) -> str | None:
    """The top-level member a JSON pointer names (None: the whole document)."""
    found = patches.tokens(pointer, where)
    return found[0] if found else None


def _check_flag_patch(operations: Sequence[patches.Operation]) -> None:
    """Each operation may change (or move from) only a member of PATCHABLE; `test` and the
    source of `copy` may read any member of the flag's document."""
    for i, operation in enumerate(operations):
        if operation.op == "test":
            continue
        written = [(operation.path, f"$[{i}].path")]
        if operation.op == "move" and isinstance(operation.source, str):
            written.append((operation.source, f"$[{i}].from"))
        for pointer, where in written:
            member = _member(pointer, where)
            if member in PATCHABLE:
                continue
            if member == "variants":
                raise ValidationError(
                    "Variants are changed per environment: PATCH or PUT .../environments/"
                    f":environment/variants - at `{where}`"
                )
            raise ValidationError(
                f"`{pointer}` cannot be changed: a flag's PATCH changes "
                f"{', '.join('/' + m for m in PATCHABLE)} - at `{where}`"
            )


def patch_feature(
    name: str,
    project_id: str,
    operations: Sequence[patches.Operation],
    state: FlagFields | None,
) -> list[FeatureUpdated | FeatureStaleSet]:
    """`PATCH /api/admin/projects/:projectId/features/:name` (JSON Patch over the flag's
    name, project, description, type, stale, impressionData and archived). A change of the
    description, type or impression data records one FeatureUpdated with all three; a change
    of staleness a FeatureStaleSet, as the stale route does; no change records nothing.
    state: the active flag's fields, None when the project has no such active flag."""
    _check_flag_patch(operations)
    if state is None:
        raise NotFound(f"There is no active flag named {name} in project {project_id}")
    document = {"name": name, "project": project_id, "archived": False}
    document |= msgspec.to_builtins(state)
    patched = patches.apply(document, operations)
    try:
        new = msgspec.convert({m: patched[m] for m in PATCHABLE if m in patched}, FlagFields)
    except msgspec.ValidationError as exc:
        raise ValidationError(f"The patched flag is not valid: {exc}") from None
    return flag_changes(name, project_id, new, state)


def update_feature(
    name: str, project_id: str, body: commands.UpdateFeature, state: FlagFields | None
) -> list[FeatureUpdated | FeatureStaleSet]:
    """`PUT /api/admin/projects/:projectId/features/:name` (Unleash's updateFeatureSchema):
    the fields as a whole, recorded as a PATCH of them records them (archiving, when asked,
    is the archive's decision: archive_feature). state: as patch_feature takes it."""
    if body.name is not msgspec.UNSET and body.name != name:
        raise ValidationError("Cannot change name of feature flag - at `$.name`")
    if state is None:
        raise NotFound(f'There\'s no feature named "{name}" in project "{project_id}".')
    new = FlagFields(
        description=body.description,
        type=body.type,
        stale=body.stale,
        impression_data=body.impression_data,
    )
    return flag_changes(name, project_id, new, state)


def flag_changes(
    name: str, project_id: str, new: FlagFields, state: FlagFields
) -> list[FeatureUpdated | FeatureStaleSet]:
    """The events that take the flag's fields from `state` to `new`: none when equal."""
    description = new.description or None  # as in create: an empty description is null
    events: list[FeatureUpdated | FeatureStaleSet] = []
    if (new.type, description, new.impression_data) != (
        state.type,
        state.description,
        state.impression_data,
    ):
        events.append(
            FeatureUpdated(
                name=name,
                project=project_id,
                feature_type=new.type,
                description=description,
                impression_data=new.impression_data,
            )
        )
    if new.stale != state.stale:
        events.append(FeatureStaleSet(name=name, project=project_id, stale=new.stale))
    return events


def reorder_strategies(
    target: Target,
    orders: Sequence[commands.StrategySortOrder],
    state: EnvironmentState | None,
    *,
    current: dict[str, int],
) -> StrategiesReordered | None:
    """`POST .../strategies/set-sort-order`: each listed strategy (of this flag, here) gets its
    sort order; the others keep theirs. current: the flag's strategies there -> sort order.
    None when nothing changes. Unlike Unleash, which sets the sort order of any strategy the
    body names, of any flag."""
    check_target(target, state)
    seen: set[str] = set()
    for i, order in enumerate(orders):
        if order.id in seen:
            raise ValidationError(f"Strategy {order.id} is listed twice - at `$[{i}].id`")
        seen.add(order.id)
        if order.id not in current:
            raise strategy_not_found(order.id)
    changed = [
        StrategySortOrder(strategy_id=o.id, sort_order=o.sort_order)
        for o in orders
        if current[o.id] != o.sort_order
    ]
    if not changed:
        return None
    return StrategiesReordered(
        name=target.feature,
        project=target.project,
        environment=target.environment,
        sort_orders=changed,
    )


_FIXED_IN_STRATEGY: Final = ("id", "featureName")


def patched_strategy(
    current: dict[str, Any], operations: Sequence[patches.Operation]
) -> commands.StrategyBody:
    """`PATCH .../strategies/:id`: the strategy as the API shows it (`current`), patched, read
    as the body of a PUT (its rules follow). Its id and flag cannot be changed."""
    for i, operation in enumerate(operations):
        if operation.op != "test" and _member(operation.path, f"$[{i}].path") in (
            *_FIXED_IN_STRATEGY,
            None,
        ):
            raise ValidationError(
                f"`{operation.path}` cannot be changed: a strategy's id and flag stay"
                f" - at `$[{i}].path`"
            )
    patched = patches.apply(current, operations)
    try:
        return msgspec.convert(patched, commands.StrategyBody)
    except msgspec.ValidationError as exc:
        raise ValidationError(f"The patched strategy is not valid: {exc}") from None


def strategy_segments_set(
    target: Target,
    current: dict[str, Any],
    state: EnvironmentState | None,
    *,
    segment_ids: Sequence[int],
    missing_segments: Sequence[int],
) -> StrategyUpdated | None:
    """POST /api/admin/segments/strategies: the strategy as the API shows it (`current`) with
    these segments, saved as a PUT saves it. Unlike Unleash, which records nothing, the change
    is a StrategyUpdated (Unleash's `feature-strategy-update`); None: the strategy uses these
    segments already, nothing recorded."""
    check_target(target, state)
    if missing_segments:
        raise ValidationError(f"Segment {missing_segments[0]} does not exist - at `$.segmentIds`")
    wanted = list(dict.fromkeys(segment_ids))  # each once, in the order given
    if wanted == current["segments"]:
        return None
    body = msgspec.convert(current | {"segments": wanted}, commands.StrategyBody)
    return update_strategy(
        target,
        body,
        state,
        strategy_id=current["id"],
        current_sort_order=current["sortOrder"],
        missing_segments=(),
    )


def patched_variants(
    current: list[Any], operations: Sequence[patches.Operation]
) -> list[commands.Variant]:
    """`PATCH .../environments/:environment/variants`: the environment's variants as the API
    shows them (`current`), patched, read as the body of a PUT (whose rules follow)."""
    patched = patches.apply(current, operations)
    try:
        return msgspec.convert(patched, commands.Variants)
    except msgspec.ValidationError as exc:
        raise ValidationError(f"The patched variants are not valid: {exc}") from None


def set_variants_batch(
    feature: str,
    project: str,
    body: commands.VariantsBatch,
    states: dict[str, EnvironmentState | None],
) -> list[EnvironmentVariantsSet]:
    """`PUT .../features/:name/variants-batch`: the same variants in each listed environment.
    states: per listed environment, as set_environment_variants takes it."""
    if not body.environments:
        raise ValidationError("No environments provided - at `$.environments`")
    return [
        set_environment_variants(Target(feature, project, environment), body.variants, state)
        for environment, state in states.items()
    ]


def default_strategy(
    feature: str, strategy_id: str, sort_order: int, default: DefaultStrategyData | None = None
) -> StrategyData:
    """What switching a flag on adds where it has no strategy that runs: the project
    environment's default strategy (`default`), else Unleash's, a gradual rollout to everyone,
    grouped by the flag's name (docs/behavior.md, "Default strategies")."""
    if default is None:
        return StrategyData(
            id=strategy_id,
            name="flexibleRollout",
            title=None,
            disabled=False,
            sort_order=sort_order,
            constraints=[],
            parameters={"rollout": "100", "stickiness": "default", "groupId": feature},
            variants=[],
            segments=[],
        )
    # Unleash's rule, quirk included: "" is the flag's name, an absent groupId stays "".
    group_id = default.parameters.get("groupId")
    group_id = feature if group_id == "" else group_id or ""
    return StrategyData(
        id=strategy_id,
        name=default.name,
        title=default.title,
        disabled=default.disabled,
        sort_order=sort_order,
        constraints=list(default.constraints),
        parameters=default.parameters | {"groupId": group_id},
        variants=list(default.variants),
        segments=list(default.segments),
    )


SwitchEvent = (
    StrategyUpdated | StrategyAdded | FeatureEnvironmentEnabled | FeatureEnvironmentDisabled
)


def switch_on(  # noqa: PLR0913 - the facts the rules need
    target: Target,
    state: EnvironmentState | None,
    *,
    strategies: Sequence[StrategyData],
    activate: bool,
    new_id: Callable[[], str],
    now: datetime,
    default: DefaultStrategyData | None = None,
) -> list[SwitchEvent]:
    """Switch the flag on in the environment, as Unleash does (docs/behavior.md, "Switching
    a flag on"): with `activate` (shouldActivateDisabledStrategies) its disabled strategies
    there are enabled first; when none would run (no strategy, or only disabled ones left
    so), the default strategy is added (`default`: the project environment's, if it has one).
    strategies: the flag's there, in order. Already on with a strategy that runs: no event."""
    check_target(target, state)
    assert state is not None
    enabling = [s for s in strategies if s.disabled] if activate else []
    events: list[SwitchEvent] = [
        StrategyUpdated(
            name=target.feature,
            project=target.project,
            environment=target.environment,
            strategy=msgspec.structs.replace(strategy, disabled=False),
        )
        for strategy in enabling
    ]
    if all(s.disabled for s in strategies) and not enabling:
        sort_order = max((s.sort_order for s in strategies), default=-1) + 1
        events.append(
            StrategyAdded(
                name=target.feature,
                project=target.project,
                environment=target.environment,
                strategy=default_strategy(target.feature, new_id(), sort_order, default),
                added_at=now,
            )
        )
    if not state.enabled:
        events.append(
            FeatureEnvironmentEnabled(
                name=target.feature, project=target.project, environment=target.environment
            )
        )
    return events


def set_default_strategy(
    project: str,
    environment: str,
    body: StrategyBody,
    *,
    environment_enabled: bool | None,
    missing_segments: Sequence[int],
) -> DefaultStrategySet:
    """`POST .../projects/:id/environments/:env/default-strategy`: only a `flexibleRollout`, as
    in Unleash. environment_enabled: whether the project has the environment; None: there is
    no such active project."""
    if environment_enabled is None:
        raise NotFound(f"Project {project} does not exist")
    if not environment_enabled:
        raise NotFound(f"Environment {environment} is not enabled in project {project}")
    if body.name != "flexibleRollout":
        raise ValidationError(
            'Only "flexibleRollout" strategy can be used as a default strategy for an environment'
        )
    _check_segments(missing_segments)
    data = strategy_data(body, "", 0)
    return DefaultStrategySet(
        project_id=project,
        environment=environment,
        strategy=DefaultStrategyData(
            name=data.name,
            title=data.title,
            disabled=data.disabled,
            constraints=data.constraints,
            parameters=data.parameters,
            variants=data.variants,
            segments=data.segments,
        ),
    )


# --- links and the lifecycle (issue 43) -------------------------------------------------------

LINK_SCHEMES: Final = ("http", "https")
MAX_LINKS: Final = 100  # a flag's links, at most: each GET of the flag carries them all


def _link_url(url: str) -> str:
    """An absolute http(s) URL, as the UI opens it in a new tab (never a `javascript:` one)."""
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme.lower() not in LINK_SCHEMES or not parts.netloc:
        raise ValidationError(f"{url!r} is not an absolute http or https URL - at `$.url`")
    return url.strip()


def add_link(  # noqa: PLR0913 - the link and what it is decided on
    name: str,
    project_id: str,
    body: commands.LinkBody,
    *,
    active: bool,
    links: int,
    link_id: str,
    now: datetime,
) -> FeatureLinkAdded:
    """`POST .../features/:name/link`. active: whether the project has this active flag;
    links: how many it has."""
    if not active:
        raise NotFound(f"There is no active flag named {name} in project {project_id}")
    url = _link_url(body.url)
    if links >= MAX_LINKS:
        raise InvalidOperation(f"A flag has at most {MAX_LINKS} links")
    return FeatureLinkAdded(
        name=name,
        project=project_id,
        link_id=link_id,
        url=url,
        title=body.title or None,
        added_at=now,
    )


def _check_link(
    name: str, project_id: str, link_id: str, *, active: bool, owner: str | None
) -> None:
    if not active:
        raise NotFound(f"There is no active flag named {name} in project {project_id}")
    if owner != name:
        raise NotFound(f"Flag {name} has no link with id {link_id}")


def update_link(  # noqa: PLR0913 - the link and what it is decided on
    name: str,
    project_id: str,
    link_id: str,
    body: commands.LinkBody,
    *,
    active: bool,
    owner: str | None,
) -> FeatureLinkUpdated:
    """`PUT .../link/:id`: its URL and title from now on. owner: the flag the link belongs
    to, None when there is no such link."""
    _check_link(name, project_id, link_id, active=active, owner=owner)
    return FeatureLinkUpdated(
        name=name,
        project=project_id,
        link_id=link_id,
        url=_link_url(body.url),
        title=body.title or None,
    )


def remove_link(
    name: str, project_id: str, link_id: str, *, active: bool, owner: str | None
) -> FeatureLinkRemoved:
    """`DELETE .../link/:id`; owner as update_link takes it."""
    _check_link(name, project_id, link_id, active=active, owner=owner)
    return FeatureLinkRemoved(name=name, project=project_id, link_id=link_id)


class Completion(NamedTuple):
    """A flag's completion as it is: `status` None when it is not completed."""

    status: str | None
    status_value: str | None


def complete_feature(
    name: str,
    project_id: str,
    body: commands.CompleteFeature,
    state: Completion | None,
    now: datetime,
) -> FeatureCompleted | None:
    """`POST .../lifecycle/complete`: the flag enters `completed` (again, with a new status
    when it was completed otherwise); None when it is completed so already. state: None when
    the project has no such flag (Unleash answers 200 and does nothing: docs/behavior.md)."""
    if state is None:
        raise NotFound(f"There is no flag named {name} in project {project_id}")
    value = body.status_value or None
    if (state.status, state.status_value) == (body.status, value):
        return None
    return FeatureCompleted(
        name=name, project=project_id, status=body.status, status_value=value, completed_at=now
    )


def uncomplete_feature(
    name: str, project_id: str, state: Completion | None
) -> FeatureUncompleted | None:
    """`POST .../lifecycle/uncomplete`: back at the stage its switches give it; None when it
    is not completed."""
    if state is None:
        raise NotFound(f"There is no flag named {name} in project {project_id}")
    if state.status is None:
        return None
    return FeatureUncompleted(name=name, project=project_id)
