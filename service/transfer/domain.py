"""Importing an export file: pure decisions, no I/O (docs/behavior.md, "Export and import").

`plan` takes the file, where it goes, and what this service holds of what the file names (read
by service/transfer/imports.py, under locks for an import). It checks the file as Unleash's
validate does (its messages, its errors and warnings), and decides every change with the domain
functions a person's requests use, so that the same rules apply and the log holds the same
events. An import appends what its plan says, and only when the plan has no error. A file that
matches what is here plans no event: importing it again changes nothing.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Final, NamedTuple

import msgspec

from eventlog.events.features import StrategyData, Variant
from service import auth
from service.context import domain as context
from service.context.commands import CreateField
from service.errors import AppError, NotFound, ValidationError
from service.features import domain as feature_domain
from service.features.commands import CreateFeature, StrategyBody, TagBody
from service.tag_types import domain as tag_types
from service.tag_types.commands import TagTypeBody

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from datetime import datetime

    from eventlog.codec import DomainEvent
    from eventlog.events.context_fields import ContextFieldCreated
    from eventlog.events.tags import TagTypeCreated
    from service.features.commands import DependencyBody
    from service.transfer.commands import (
        ExportData,
        FileEnvironment,
        FileFeature,
        FileStrategy,
        FileTagType,
        ImportToggles,
    )

# Unleash's messages (its import validation), so that its UI's import dialog reads as it does
# there; the last ones are ours, for what Unleash finds only half-way through an import.
UNSUPPORTED_STRATEGIES: Final = (
    "We detected the following custom strategy that needs to be created first:"
)
UNSUPPORTED_CONTEXT_FIELDS: Final = (
    "We detected the following context fields that do not have matching legal values with the"
    " imported ones:"
)
DUPLICATES: Final = "We detected the following features are duplicate in your import data:"
MISSING_SEGMENTS: Final = "We detected the following segments that need to be created first:"
MISSING_PARENTS: Final = "We detected the following dependencies that need to be created first:"
MISSING_TAG_TYPES: Final = "We detected the following tag types that need to be created first:"
UNLISTED: Final = (
    "We detected the following flags that the file's strategies, environments, tags or"
    " dependencies name but its features do not list:"
)
REFUSED: Final = "We detected the following that this service's rules refuse (what: why):"
CUSTOM_STRATEGIES: Final = (
    "The following strategy types will be used in import. Please make sure the strategy type"
    " parameters are configured as in source environment:"
)
ARCHIVED: Final = (
    "The following features will not be imported as they are currently archived. To import"
    " them, please unarchive them first:"
)
EXISTING: Final = "The following features already exist in this project and will be overwritten:"
MISSING_PERMISSIONS: Final = "We detected you are missing the following permissions:"


def other_projects(project: str) -> str:
    return (
        "You cannot import a features that already exist in other projects. You already have"
        f" the following features defined outside of project {project}:"
    )


class Item(NamedTuple):
    """An error or a warning: what was found, and the names it concerns."""

    message: str
    affected: tuple[str, ...]


# What an import needs: Unleash's display name of each permission it checks, and ours that
# grants it (a flag's strategies and variants are changed with UPDATE_FEATURE here).
UPDATE_FLAGS: Final = ("Update feature flags", auth.UPDATE_FEATURE)
CREATE_TAG_TYPES: Final = ("Create tag types", auth.CREATE_TAG_TYPE)
CREATE_CONTEXT_FIELDS: Final = ("Create context fields", auth.CREATE_CONTEXT_FIELD)
DELETE_STRATEGIES: Final = ("Delete activation strategies", auth.UPDATE_FEATURE)
CREATE_STRATEGIES: Final = ("Create activation strategies", auth.UPDATE_FEATURE)
UPDATE_VARIANTS: Final = ("Update variants", auth.UPDATE_FEATURE)
CREATE_FLAGS: Final = ("Create feature flags", auth.CREATE_FEATURE)


# --- what is here -----------------------------------------------------------------------------


class Here(msgspec.Struct, frozen=True, kw_only=True):
    """A flag the file names (as a flag or as a parent), as it is here."""

    name: str
    project: str
    archived: bool
    fields: feature_domain.FlagFields


class EnvironmentHere(msgspec.Struct, frozen=True, kw_only=True):
    """A flag's switch and variants in the file's environment."""

    enabled: bool
    variants: list[Variant]


class State(msgspec.Struct, frozen=True, kw_only=True):
    """What this service holds of what the file names. The flags' parts (strategies,
    environments, tags) are those of the flags of the target project only; `dependencies`
    those of the file's flags and of the parents it names; `children` the flags that depend on
    one of the file's flags."""

    flags: dict[str, Here]
    strategies: dict[str, list[StrategyData]]  # in the environment, in order
    environments: dict[str, EnvironmentHere]
    tags: dict[str, set[tuple[str, str]]]
    dependencies: dict[str, list[feature_domain.Dependency]]
    children: dict[str, list[str]]
    strategy_types: dict[str, bool]  # the known ones the file names -> custom
    context_fields: dict[str, context.Field]
    segments: dict[str, int]  # the file's segments that exist here: name -> our id
    tag_types: set[str]  # the file's tag types that exist here
    freed: dict[str, int]  # a new flag's name whose stream goes on -> its version


def check_destination(
    project: str, environment: str, *, project_active: bool, environment_enabled: bool | None
) -> None:
    """The project exists (active), and has the environment. environment_enabled: whether the
    project has it, None when no environment has that name. (Unleash checks neither, and
    reports a missing project as flags that exist in other projects.)"""
    if not project_active:
        raise feature_domain.project_missing(project)
    if environment_enabled is None:
        raise NotFound(f"Environment {environment} does not exist")
    if not environment_enabled:
        raise NotFound(f"Environment {environment} is not enabled in project {project}")


# --- the plan ---------------------------------------------------------------------------------


class FlagAppend(NamedTuple):
    """One flag's events, appended to its stream: a new stream for a new flag, or the stream of
    a deleted namesake at its version (`at_version`)."""

    name: str
    events: list[DomainEvent]
    created: bool
    at_version: int | None


class Plan(NamedTuple):
    errors: list[Item]
    warnings: list[Item]
    needed: list[tuple[str, str]]  # what the import needs: (Unleash's name, our permission)
    tag_types: list[TagTypeCreated]
    context_fields: list[ContextFieldCreated]
    flags: list[FlagAppend]  # flags with changes, in the file's order

    @property
    def events(self) -> int:
        return (
            len(self.tag_types) + len(self.context_fields) + sum(len(f.events) for f in self.flags)
        )


def _reason(exc: AppError | msgspec.ValidationError) -> str:
    return exc.message if isinstance(exc, AppError) else str(exc)


class _Flag(NamedTuple):
    """A flag of the file with everything the file says of it."""

    feature: FileFeature
    strategies: list[FileStrategy]
    environment: FileEnvironment | None  # None: the file has none for the flag
    tags: list[tuple[str, str]]  # (type, value) as the file gives them
    parents: list[DependencyBody]


def plan(cmd: ImportToggles, state: State, *, now: datetime, new_id: Callable[[], str]) -> Plan:
    """Unleash's checks of the file (errors, warnings, the permissions it needs), and the
    events an import appends (docs/behavior.md, "Export and import")."""
    data, project = cmd.data, cmd.project
    listed = list(dict.fromkeys(f.name for f in data.features))
    counts = Counter(f.name for f in data.features)
    archived = [n for n in listed if n in state.flags and state.flags[n].archived]
    elsewhere = [
        n
        for n in listed
        if n in state.flags and not state.flags[n].archived and state.flags[n].project != project
    ]
    skipped = set(archived) | set(elsewhere)
    existing = [n for n in listed if n in state.flags and n not in skipped]
    imported = _flags(data, [n for n in listed if n not in skipped])
    refused: list[str] = []
    errors: list[Item] = []
    warnings: list[Item] = []

    def found(items: list[Item], message: str, affected: Sequence[str]) -> None:
        if affected:
            items.append(Item(message, tuple(affected)))

    used_types = list(dict.fromkeys(s.name for f in imported.values() for s in f.strategies))
    found(errors, UNSUPPORTED_STRATEGIES, [t for t in used_types if t not in state.strategy_types])
    found(errors, UNSUPPORTED_CONTEXT_FIELDS, _unmatched_fields(data, state))
    found(
        errors,
        other_projects(project),
        [f"{n} (in project {state.flags[n].project})" for n in elsewhere],
    )
    found(errors, DUPLICATES, [n for n in listed if counts[n] > 1])
    segment_ids, missing_segments = _segments(data, imported, state)
    found(errors, MISSING_SEGMENTS, missing_segments)
    found(errors, MISSING_PARENTS, _missing_parents(imported, state))
    new_tag_types, missing_tag_types = _tag_types(data, imported, state)
    found(errors, MISSING_TAG_TYPES, missing_tag_types)
    found(errors, UNLISTED, _unlisted(data, set(listed)))

    tag_type_events = _created_tag_types(new_tag_types, now, refused)
    field_events = _created_fields(data, state, now, refused)
    ctx = _Import(
        cmd=cmd,
        state=state,
        imported=imported,
        segment_ids=segment_ids,
        known_tags=state.tag_types | {e.name for e in tag_type_events},
        with_children=_with_children(imported, state),
        now=now,
        new_id=new_id,
    )
    appends: list[FlagAppend] = []
    for flag in imported.values():
        try:
            events = _flag_events(ctx, flag)
        except (AppError, msgspec.ValidationError) as exc:
            refused.append(f"flag {flag.feature.name}: {_reason(exc)}")
            continue
        name = flag.feature.name
        if events:
            created = name not in state.flags
            version = state.freed.get(name) if created else None
            appends.append(FlagAppend(name, events, created, version))
    found(errors, REFUSED, refused)

    found(warnings, CUSTOM_STRATEGIES, [t for t in used_types if state.strategy_types.get(t)])
    found(warnings, ARCHIVED, archived)
    found(warnings, EXISTING, existing)
    return Plan(
        errors=errors,
        warnings=warnings,
        needed=_needed(imported, state, tag_type_events, field_events),
        tag_types=tag_type_events,
        context_fields=field_events,
        flags=appends,
    )


def _flags(data: ExportData, names: list[str]) -> dict[str, _Flag]:
    """The file's flags that are imported, by name, in the file's order (a name listed twice:
    its first listing; the duplicate is an error)."""
    features: dict[str, FileFeature] = {}
    for feature in data.features:
        features.setdefault(feature.name, feature)
    wanted = set(names)
    strategies: dict[str, list[FileStrategy]] = {n: [] for n in names}
    for strategy in data.feature_strategies:
        if strategy.feature_name in wanted:
            strategies[strategy.feature_name].append(strategy)
    environments = {e.feature: e for e in data.feature_environments if e.feature in wanted}
    tags: dict[str, list[tuple[str, str]]] = {n: [] for n in names}
    for tag in data.feature_tags:
        kind, text = tag.kind, tag.text
        # A tag without a type is passed over, as Unleash's import passes it over.
        if tag.feature_name in wanted and kind is not None and text is not None:
            tags[tag.feature_name].append((kind, text))
    parents: dict[str, list[DependencyBody]] = {n: [] for n in names}
    for entry in data.dependencies:
        if entry.feature in wanted:
            parents[entry.feature].extend(entry.dependencies)
    return {
        n: _Flag(features[n], strategies[n], environments.get(n), tags[n], parents[n])
        for n in names
    }


def _unlisted(data: ExportData, listed: set[str]) -> list[str]:
    named = [s.feature_name for s in data.feature_strategies]
    named += [e.feature for e in data.feature_environments]
    named += [t.feature_name for t in data.feature_tags]
    named += [d.feature for d in data.dependencies]
    return [n for n in dict.fromkeys(named) if n not in listed]


def _unmatched_fields(data: ExportData, state: State) -> list[str]:
    """Context fields that exist here without every legal value the file's field has
    (Unleash's rule: a new field is created; an existing one must take the file's values)."""
    unmatched = []
    for field in data.context_fields:
        here = state.context_fields.get(field.name)
        if here is None:
            continue
        values = {v.value for v in here.legal_values}
        if any(v.value not in values for v in field.legal_values):
            unmatched.append(field.name)
    return list(dict.fromkeys(unmatched))


def _segments(
    data: ExportData, imported: dict[str, _Flag], state: State
) -> tuple[dict[int, int], list[str]]:
    """The source's segment ids the strategies use -> ours (the segment of the same name
    here), and what is missing: a name no segment has here, or an id the file's `segments`
    do not name."""
    names = {s.id: s.name for s in data.segments}
    mapped: dict[int, int] = {}
    missing: list[str] = []
    for flag in imported.values():
        for strategy in flag.strategies:
            for source_id in strategy.segments:
                name = names.get(source_id)
                if name is None:
                    missing.append(f"id {source_id} (not among the file's segments)")
                elif name in state.segments:
                    mapped[source_id] = state.segments[name]
                else:
                    missing.append(name)
    return mapped, list(dict.fromkeys(missing))


def _after(name: str, imported: dict[str, _Flag], state: State) -> list[str]:
    """The parents a flag has once the file is imported."""
    if name in imported:
        return [p.feature for p in imported[name].parents]
    return [d.parent for d in state.dependencies.get(name, [])]


def _missing_parents(imported: dict[str, _Flag], state: State) -> list[str]:
    """Parents neither imported nor an active flag here."""
    missing = [
        p.feature
        for flag in imported.values()
        for p in flag.parents
        if p.feature not in imported
        and (p.feature not in state.flags or state.flags[p.feature].archived)
    ]
    return list(dict.fromkeys(missing))


def _tag_types(
    data: ExportData, imported: dict[str, _Flag], state: State
) -> tuple[list[FileTagType], list[str]]:
    """The file's tag types to create (those the imported tags use that are not here, as
    Unleash creates them), and the types tags use that neither exist nor are in the file."""
    used = list(dict.fromkeys(kind for f in imported.values() for kind, _ in f.tags))
    described: dict[str, FileTagType] = {}
    for tag_type in data.tag_types:
        described.setdefault(tag_type.name, tag_type)
    new = [described[k] for k in used if k not in state.tag_types and k in described]
    missing = [k for k in used if k not in state.tag_types and k not in described]
    return new, missing


def _created_tag_types(
    new: list[FileTagType], now: datetime, refused: list[str]
) -> list[TagTypeCreated]:
    events = []
    for tag_type in new:
        fields = msgspec.to_builtins(tag_type)
        if fields.get("color") is None:
            fields.pop("color", None)
        try:
            body = msgspec.convert(fields, TagTypeBody)
            events.append(tag_types.create_tag_type(body, exists=False, now=now))
        except (AppError, msgspec.ValidationError) as exc:
            refused.append(f"tag type {tag_type.name}: {_reason(exc)}")
    return events


def _created_fields(
    data: ExportData, state: State, now: datetime, refused: list[str]
) -> list[ContextFieldCreated]:
    """The file's context fields that do not exist here, as Unleash creates them (with the
    file's sort order, which Unleash drops)."""
    events: list[ContextFieldCreated] = []
    seen: set[str] = set()
    for field in data.context_fields:
        if field.name in state.context_fields or field.name in seen:
            continue
        seen.add(field.name)
        try:
            body = msgspec.convert(msgspec.to_builtins(field), CreateField)
            events.append(context.create_field(body, current=None, now=now))
        except (AppError, msgspec.ValidationError) as exc:
            refused.append(f"context field {field.name}: {_reason(exc)}")
    return events


def _needed(
    imported: dict[str, _Flag],
    state: State,
    tag_type_events: list[TagTypeCreated],
    field_events: list[ContextFieldCreated],
) -> list[tuple[str, str]]:
    """The permissions Unleash checks for this import, in the order it checks them."""
    needed = [UPDATE_FLAGS]
    if tag_type_events:
        needed.append(CREATE_TAG_TYPES)
    if field_events:
        needed.append(CREATE_CONTEXT_FIELDS)
    if any(state.strategies.get(n) for n in imported):
        needed.append(DELETE_STRATEGIES)
    if any(f.strategies for f in imported.values()):
        needed.append(CREATE_STRATEGIES)
    if any(f.environment is not None and f.environment.variants for f in imported.values()):
        needed.append(UPDATE_VARIANTS)
    if any(n not in state.flags for n in imported):
        needed.append(CREATE_FLAGS)
    return needed


def _with_children(imported: dict[str, _Flag], state: State) -> set[str]:
    """The flags that other flags depend on once the file is imported."""
    found = {p.feature for flag in imported.values() for p in flag.parents}
    found |= {p for p, children in state.children.items() if set(children) - imported.keys()}
    return found


# --- one flag ---------------------------------------------------------------------------------


class _Import(NamedTuple):
    """What every flag's decisions take."""

    cmd: ImportToggles
    state: State
    imported: dict[str, _Flag]
    segment_ids: dict[int, int]  # the source's -> ours
    known_tags: set[str]  # tag types here once the import's are created
    with_children: set[str]  # flags others depend on once the file is imported
    now: datetime
    new_id: Callable[[], str]


def _flag_events(ctx: _Import, flag: _Flag) -> list[DomainEvent]:
    """The flag created or updated, its strategies there replaced, its switch and variants
    there set, its tags and its parents made the file's: each by the domain's own decision, and
    only where the file differs from what is here."""
    cmd, state, now = ctx.cmd, ctx.state, ctx.now
    feature, project = flag.feature, cmd.project
    name = feature.name
    target = feature_domain.Target(name, project, cmd.environment)
    wanted = msgspec.convert(
        {
            "description": feature.description,
            "type": feature.type,
            "stale": feature.stale,
            "impressionData": feature.impression_data,
        },
        feature_domain.FlagFields,
    )
    events: list[DomainEvent] = []
    here = state.flags.get(name)
    if here is None:
        created = feature_domain.create_feature(
            CreateFeature(
                name=name,
                type=wanted.type,
                description=wanted.description,
                impression_data=wanted.impression_data,
            ),
            project,
            project_active=True,
            holder_archived=None,
            now=now,
        )
        events.append(created)
        current = feature_domain.FlagFields(
            description=created.description,
            type=wanted.type,
            impression_data=created.impression_data,
        )
    else:
        current = here.fields
    events += feature_domain.flag_changes(name, project, wanted, current)
    switch = state.environments.get(name)
    environment = feature_domain.EnvironmentState(
        environment_enabled=True, enabled=switch is not None and switch.enabled
    )
    events += _strategies(
        target,
        flag.strategies,
        state.strategies.get(name, []),
        environment,
        segment_ids=ctx.segment_ids,
        new_id=ctx.new_id,
        now=now,
    )
    if flag.environment is not None:
        events += _environment(target, flag.environment, switch, environment)
    # A tag of a type found nowhere, a parent found nowhere: errors of the plan already.
    known = ctx.known_tags
    tags = [(kind, value) for kind, value in flag.tags if kind in known]
    events += _tags(name, project, tags, state.tags.get(name, set()), known=known, now=now)
    missing = set(_missing_parents({name: flag}, state)) - ctx.imported.keys()
    events += _parents(ctx, name, [p for p in flag.parents if p.feature not in missing])
    return events


def _body(strategy: FileStrategy, place: int, segment_ids: dict[int, int]) -> StrategyBody:
    return StrategyBody(
        name=strategy.name,
        title=strategy.title,
        disabled=strategy.disabled,
        sort_order=place if strategy.sort_order is None else strategy.sort_order,
        constraints=strategy.constraints,
        parameters=strategy.parameters,
        variants=strategy.variants,
        # A segment not found here is an error of the plan (MISSING_SEGMENTS) already.
        segments=[segment_ids[s] for s in strategy.segments if s in segment_ids],
    )


def _content(strategy: StrategyData) -> StrategyData:
    """A strategy without what tells two equal ones apart (its id, its place)."""
    return msgspec.structs.replace(strategy, id="", sort_order=0)


def _matched(
    wanted: list[tuple[FileStrategy, StrategyData]], current: list[StrategyData]
) -> dict[int, StrategyData]:
    """Which strategy here each of the file's becomes (by its index in `wanted`): the one with
    its id, else one equal to it, else the next one of its type; the others are new."""
    free = list(current)
    matched: dict[int, StrategyData] = {}

    def take(i: int, found: StrategyData | None) -> None:
        if found is not None:
            matched[i] = found
            free.remove(found)

    for i, (strategy, _) in enumerate(wanted):
        take(i, next((c for c in free if strategy.id and c.id == strategy.id), None))
    for i, (_, data) in enumerate(wanted):
        if i not in matched:
            take(i, next((c for c in free if _content(c) == _content(data)), None))
    for i, (_, data) in enumerate(wanted):
        if i not in matched:
            take(i, next((c for c in free if c.name == data.name), None))
    return matched


def _strategies(  # noqa: PLR0913 - what the decisions take
    target: feature_domain.Target,
    strategies: list[FileStrategy],
    current: list[StrategyData],
    environment: feature_domain.EnvironmentState,
    *,
    segment_ids: dict[int, int],
    new_id: Callable[[], str],
    now: datetime,
) -> list[DomainEvent]:
    """The flag's strategies there become the file's, in its order: one that is here already
    (matched by `_matched`) is kept, or updated where it differs; the others here are removed,
    the remaining ones of the file added."""
    bodies: list[StrategyBody] = []
    wanted: list[tuple[FileStrategy, StrategyData]] = []
    for place, strategy in enumerate(strategies):
        body = _body(strategy, place, segment_ids)
        try:
            data = feature_domain.strategy_data(body, "", place)
        except AppError as exc:
            raise ValidationError(f"strategy {place} ({strategy.name}): {exc.message}") from None
        bodies.append(body)
        wanted.append((strategy, data))
    matched = _matched(wanted, current)
    kept = {m.id for m in matched.values()}
    events: list[DomainEvent] = [
        feature_domain.remove_strategy(target, environment, strategy_id=c.id, exists=True)
        for c in current
        if c.id not in kept
    ]
    for i, (body, (_, data)) in enumerate(zip(bodies, wanted, strict=True)):
        here = matched.get(i)
        if here is None:
            events.append(
                feature_domain.add_strategy(
                    target,
                    body,
                    environment,
                    missing_segments=(),
                    strategy_id=new_id(),
                    next_sort_order=data.sort_order,
                    now=now,
                )
            )
        elif msgspec.structs.replace(data, id=here.id) != here:
            events.append(
                feature_domain.update_strategy(
                    target,
                    body,
                    environment,
                    strategy_id=here.id,
                    current_sort_order=here.sort_order,
                    missing_segments=(),
                )
            )
    return events


def _environment(
    target: feature_domain.Target,
    given: FileEnvironment,
    here: EnvironmentHere | None,
    environment: feature_domain.EnvironmentState,
) -> list[DomainEvent]:
    """The flag's variants there become the file's (none: none), and its switch the file's."""
    events: list[DomainEvent] = []
    variants = feature_domain.set_environment_variants(target, given.variants, environment)
    if variants.variants != ([] if here is None else here.variants):
        events.append(variants)
    switch = feature_domain.switch_environment(target, environment, on=given.enabled)
    if switch is not None:
        events.append(switch)
    return events


def _tags(  # noqa: PLR0913 - what the decision takes
    name: str,
    project: str,
    given: list[tuple[str, str]],
    current: set[tuple[str, str]],
    *,
    known: set[str],
    now: datetime,
) -> list[DomainEvent]:
    """The flag's tags become the file's: it loses the others, as in Unleash."""
    wanted = {(kind, feature_domain.tag_value(value)) for kind, value in given}
    return list(
        feature_domain.update_tags(
            name,
            [TagBody(type=kind, value=value) for kind, value in given],
            [TagBody(type=kind, value=value) for kind, value in sorted(current - wanted)],
            known_types=known,
            project=project,
            current=current,
            now=now,
        )
    )


def _parents(ctx: _Import, child: str, given: list[DependencyBody]) -> list[DomainEvent]:
    """The flag's parents become the file's (Unleash only adds the file's): the others are
    removed, a parent with other settings replaced, a new one added, each under the rules of
    one level (the graph as it is once the file is imported)."""
    state, imported, project = ctx.state, ctx.imported, ctx.cmd.project
    current = state.dependencies.get(child, [])
    wanted = {p.feature for p in given}

    def dependency_state(parent: str | None) -> feature_domain.DependencyState:
        projects = {child: project}
        if parent in imported:
            projects[parent] = project
        elif parent is not None and parent in state.flags and not state.flags[parent].archived:
            projects[parent] = state.flags[parent].project
        return feature_domain.DependencyState(
            projects=projects,
            parent_has_parents=parent is not None and bool(_after(parent, imported, state)),
            child_has_children=child in ctx.with_children,
            current=current,
        )

    events: list[DomainEvent] = [
        feature_domain.remove_dependency(child, project, d.parent, dependency_state(None))
        for d in current
        if d.parent not in wanted
    ]
    for body in given:
        same = feature_domain.Dependency(
            parent=body.feature, enabled=body.enabled, variants=list(dict.fromkeys(body.variants))
        )
        if any(_same_dependency(same, d) for d in current):
            continue
        events.append(
            feature_domain.add_dependency(child, project, body, dependency_state(body.feature))
        )
    return events


def _same_dependency(a: feature_domain.Dependency, b: feature_domain.Dependency) -> bool:
    return (a.parent, a.enabled, set(a.variants)) == (b.parent, b.enabled, set(b.variants))


# --- a file of several projects -----------------------------------------------------------------

DEFAULT_PROJECT: Final = "default"


def by_project(data: ExportData) -> dict[str, ExportData]:
    """A file's flags by the project each one names (`default` when it names none), each part
    with its flags' strategies, switches, variants, tags and dependencies, and the file's
    context fields, segments and tag types: the imports, one a project, that put every flag
    back where it came from (`python -m service import-unleash --file`)."""
    projects: dict[str, set[str]] = {}
    for feature in data.features:
        projects.setdefault(feature.project or DEFAULT_PROJECT, set()).add(feature.name)
    return {
        project: msgspec.structs.replace(
            data,
            features=[f for f in data.features if f.name in names],
            feature_strategies=[s for s in data.feature_strategies if s.feature_name in names],
            feature_environments=[e for e in data.feature_environments if e.feature in names],
            feature_tags=[t for t in data.feature_tags if t.feature_name in names],
            dependencies=[d for d in data.dependencies if d.feature in names],
        )
        for project, names in projects.items()
    }
