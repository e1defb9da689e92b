"""Pure decisions of the flags' import: a source flag in this service's terms (read through the
request Structs and the domain's rules, with our segment, strategy and link ids), compared with
ours, and the events that take ours there, each made by the domain function a person's request
would run (service/features/domain.py), in the order the requests would come.

No I/O here: service/switchover/flags.py reads both sides, then calls these."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, NamedTuple

import msgspec

from eventlog.events.features import StrategyData, Variant
from service.errors import ValidationError
from service.features import commands, domain

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping, Sequence

    from eventlog.codec import DomainEvent
    from service.switchover.flag_source import Flag, SourceStrategy

UNORDERED = -1  # a strategy's sortOrder not read yet (from an export)


class Strategy(NamedTuple):
    """A strategy as it is stored here, and (for a source's) the body a request would send."""

    data: StrategyData
    body: commands.StrategyBody | None = None


class EnvState(msgspec.Struct, kw_only=True):
    """One environment of a flag. `enabled` None: unknown (kept as it is here); `ordered`
    False: the strategies' sort orders are not known yet."""

    enabled: bool | None
    strategies: list[Strategy] = []
    variants: list[Variant] = []
    variant_bodies: list[commands.Variant] = []
    ordered: bool = True


class LinkState(NamedTuple):
    url: str
    title: str | None


class FlagState(msgspec.Struct, kw_only=True):
    """A flag in this service's terms: ours as the read models hold it, or the source's as an
    import would leave it."""

    name: str
    project: str
    type: str
    description: str | None
    impression_data: bool
    stale: bool
    created_at: datetime
    archived_at: datetime | None
    environments: dict[str, EnvState]
    tags: frozenset[tuple[str, str]]
    dependencies: dict[str, domain.Dependency]
    links: dict[str, LinkState]  # by id, in the order added

    @property
    def archived(self) -> bool:
        return self.archived_at is not None


class Facts(NamedTuple):
    """What this service has that a source flag refers to."""

    projects: Mapping[str, Sequence[str]]  # active projects -> their environments
    tag_types: Collection[str]
    strategy_types: Collection[str]
    segments: Mapping[int, int]  # the source's segment id -> ours
    segment_names: Mapping[int, str]  # the source's segment id -> its name
    strategy_owners: Mapping[str, str]  # a strategy id here -> its flag
    link_owners: Mapping[str, str]  # a link id here -> its flag
    origin: str


# --- the source's flag in our terms ----------------------------------------------------------


def wanted(flag: Flag, facts: Facts, now: datetime) -> FlagState:
    """The flag as an import leaves it here; a ValidationError (or another AppError) names the
    rule it breaks. now: the created time when the source gives none."""
    create = msgspec.convert(
        {
            "name": flag.name,
            "type": flag.type,
            "description": flag.description,
            "impressionData": flag.impression_data,
        },
        commands.CreateFeature,
    )
    if flag.project not in facts.projects:
        raise domain.project_missing(flag.project)
    created = domain.create_feature(
        create, flag.project, project_active=True, holder_archived=None, now=now
    )
    environments: dict[str, EnvState] = {}
    here = facts.projects[flag.project]
    for env, found in flag.environments.items():
        if env not in here:
            if found.enabled or found.strategies or found.variants:
                raise ValidationError(
                    f"its environment {env} is not one of project {flag.project}'s here"
                )
            continue
        strategies = [_strategy(flag.name, s, found.ordered, facts) for s in found.strategies]
        bodies = msgspec.convert(found.variants, commands.Variants)
        domain.check_variant_names(bodies, f"$.environments.{env}.variants")
        kept = domain.kept_weights(bodies, f"$.environments.{env}.variants")
        environments[env] = EnvState(
            enabled=found.enabled,
            strategies=strategies,
            variants=msgspec.convert(kept, list[Variant], from_attributes=True),
            variant_bodies=bodies,
            ordered=found.ordered or len(strategies) == 0,
        )
    tags = msgspec.convert(
        [{"type": t, "value": v} for t, v in flag.tags or []], list[commands.TagBody]
    )
    dependencies = {}
    for d in flag.dependencies or []:
        body = msgspec.convert(msgspec.to_builtins(d), commands.DependencyBody)
        dependencies[body.feature] = domain.Dependency(
            parent=body.feature, enabled=body.enabled, variants=list(dict.fromkeys(body.variants))
        )
    return FlagState(
        name=flag.name,
        project=flag.project,
        type=created.feature_type,
        description=created.description,
        impression_data=created.impression_data,
        stale=flag.stale,
        created_at=flag.created_at or now,
        archived_at=flag.archived_at,
        environments=environments,
        tags=frozenset(domain.initial_tags(tags, facts.tag_types)),
        dependencies=dependencies,
        links=_links(flag, facts, now),
    )


def _strategy(feature: str, source: SourceStrategy, ordered: bool, facts: Facts) -> Strategy:  # noqa: FBT001 - one fact
    if source.name not in facts.strategy_types:
        raise ValidationError(f"its strategy {source.id} is of type {source.name}, unknown here")
    segments = []
    for segment in source.segments:
        ours = facts.segments.get(segment)
        if ours is None:
            name = facts.segment_names.get(segment, "?")
            raise ValidationError(
                f"its strategy {source.id} uses segment {name} (id {segment}), which is not here"
            )
        segments.append(ours)
    sort_order = source.sort_order if ordered and source.sort_order is not None else UNORDERED
    body = msgspec.convert(
        {
            "name": source.name,
            "title": source.title,
            "disabled": source.disabled,
            "sortOrder": None if sort_order == UNORDERED else sort_order,
            "constraints": source.constraints,
            "parameters": {k: _text(v) for k, v in source.parameters.items()},
            "variants": source.variants,
            "segments": sorted(set(segments)),
        },
        commands.StrategyBody,
    )
    strategy_id = our_id(source.id, feature, facts.strategy_owners, facts.origin, uuids=True)
    return Strategy(domain.strategy_data(body, strategy_id, sort_order, spread=False), body)


def _text(value: object) -> object:
    """A parameter as Unleash keeps it: a string (an old number becomes its text)."""
    if isinstance(value, bool):
        return str(value).lower()
    return str(value) if isinstance(value, int | float) else value


def _links(flag: Flag, facts: Facts, now: datetime) -> dict[str, LinkState]:
    found: dict[str, LinkState] = {}
    for i, link in enumerate(flag.links or []):
        body = msgspec.convert({"url": link.url, "title": link.title}, commands.LinkBody)
        link_id = our_id(link.id, flag.name, facts.link_owners, facts.origin, uuids=False)
        event = domain.add_link(
            flag.name,
            flag.project,
            body,
            active=True,
            links=i,
            link_id=link_id,
            now=now,
        )
        found[link_id] = LinkState(event.url, event.title)
    return found


def our_id(
    source_id: str, feature: str, owners: Mapping[str, str], origin: str, *, uuids: bool
) -> str:
    """The source's id of a flag's strategy or link, kept here unless another flag here has
    it (or, for a strategy, it is no UUID): then one made of it and the source, the same on
    every run."""
    kept: str | None = source_id
    if uuids:
        try:
            kept = str(uuid.UUID(source_id))
        except ValueError:
            kept = None
    if kept is not None and owners.get(kept, feature) == feature:
        return kept
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{origin}/{feature}/{source_id}"))


def unordered(
    want: FlagState, ours: FlagState | None, moved: Collection[tuple[str, str]] | None = None
) -> list[str]:
    """The environments whose strategies' sort orders are still to be read: where the source
    has several (their order counts), unless ours holds them as they are (the same ids, the
    same content) and `moved` (the flags' environments whose order the source may have
    changed since this source was first imported; None: not known) does not name the
    environment; a single strategy is read only when ours does not hold it as it is."""
    missing = []
    for env, state in want.environments.items():
        if state.ordered:
            continue
        mine = None if ours is None else ours.environments.get(env)
        settled = len(state.strategies) == 1 or (
            moved is not None and (want.name, env) not in moved
        )
        if settled and mine is not None and _held(state.strategies, mine.strategies):
            theirs = {s.data.id: s for s in state.strategies}
            state.strategies = [Strategy(h.data, theirs[h.data.id].body) for h in mine.strategies]
            state.ordered = True
            continue
        missing.append(env)
    return missing


def _held(theirs: Sequence[Strategy], mine: Sequence[Strategy]) -> bool:
    """Whether ours holds the source's strategies, the same ids with the same content."""
    held = {s.data.id: s.data for s in mine}
    return len(held) == len(theirs) and all(
        s.data.id in held and _same_content(s.data, held[s.data.id]) for s in theirs
    )


def _same_content(a: StrategyData, b: StrategyData) -> bool:
    return msgspec.structs.replace(a, sort_order=0, segments=sorted(a.segments)) == (
        msgspec.structs.replace(b, sort_order=0, segments=sorted(b.segments))
    )


# --- ours compared with it ------------------------------------------------------------------


def differences(want: FlagState, ours: FlagState) -> list[str]:
    """What differs, in words (empty: nothing)."""
    found = [
        label
        for label, a, b in (
            ("type", want.type, ours.type),
            ("description", want.description, ours.description),
            ("impression data", want.impression_data, ours.impression_data),
            ("stale", want.stale, ours.stale),
            ("archived", want.archived, ours.archived),
            ("tags", want.tags, ours.tags),
            ("links", want.links, ours.links),
        )
        if a != b
    ]
    if not _same_dependencies(want.dependencies, ours.dependencies):
        found.append("dependencies")
    for env in sorted(set(want.environments) | set(ours.environments)):
        empty = EnvState(enabled=False)
        a = want.environments.get(env, empty)
        b = ours.environments.get(env, empty)
        if a.enabled is not None and a.enabled != b.enabled:
            found.append(f"switch in {env}")
        if _strategy_map(a) != _strategy_map(b) and _contents(a) != _contents(b):
            found.append(f"strategies in {env}")
        if a.variants != b.variants:
            found.append(f"variants in {env}")
    return found


def _contents(state: EnvState) -> list[StrategyData]:
    """The strategies in order without their ids: what another way in (an export file, whose
    import makes new ids as Unleash's does) brought with the same content is the same."""
    ordered = sorted(state.strategies, key=lambda s: s.data.sort_order)
    return [
        msgspec.structs.replace(s.data, id="", sort_order=i, segments=sorted(s.data.segments))
        for i, s in enumerate(ordered)
    ]


def _strategy_map(state: EnvState) -> dict[str, StrategyData]:
    return {
        s.data.id: msgspec.structs.replace(s.data, segments=sorted(s.data.segments))
        for s in state.strategies
    }


def _same_dependencies(
    a: Mapping[str, domain.Dependency], b: Mapping[str, domain.Dependency]
) -> bool:
    def key(d: Mapping[str, domain.Dependency]) -> dict[str, tuple[bool, frozenset[str]]]:
        return {p: (x.enabled, frozenset(x.variants)) for p, x in d.items()}

    return key(a) == key(b)


# --- the events that take ours there ---------------------------------------------------------


class After(NamedTuple):
    """The flags as they stand once the import is written: what dependency and archive rules
    look at."""

    active: Mapping[str, str]  # active flags -> their project
    parents: Mapping[str, Collection[str]]  # a child -> its parents


def children(after: After, name: str) -> list[str]:
    return sorted(c for c, parents in after.parents.items() if name in parents)


def created(want: FlagState, after: After, now: datetime) -> list[DomainEvent]:
    """A new flag: created (at the source's time) with its tags, as one create request makes
    it, then configured and archived as `changed` takes it there."""
    create = msgspec.convert(
        {
            "name": want.name,
            "type": want.type,
            "description": want.description,
            "impressionData": want.impression_data,
        },
        commands.CreateFeature,
    )
    event = domain.create_feature(
        create, want.project, project_active=True, holder_archived=None, now=want.created_at
    )
    tags = sorted(want.tags)
    events: list[DomainEvent] = [event, *domain.tag_new_feature(event, tags)]
    fresh = FlagState(
        name=want.name,
        project=want.project,
        type=event.feature_type,
        description=event.description,
        impression_data=event.impression_data,
        stale=False,
        created_at=want.created_at,
        archived_at=None,
        environments={},
        tags=frozenset(tags),
        dependencies={},
        links={},
    )
    return events + changed(want, fresh, after, now)


def changed(  # noqa: C901 - a step a part of the flag, in the requests' order
    want: FlagState, ours: FlagState, after: After, now: datetime
) -> list[DomainEvent]:
    """The events that take ours to `want` (none when they are alike). `now`: when this import
    adds strategies, tags and links (the source gives no such times); a flag is archived at
    the source's time."""
    name, project = want.name, want.project
    events: list[DomainEvent] = []
    enabled = {env: state.enabled for env, state in ours.environments.items()}
    if ours.archived and not want.archived:
        events += domain.revive_feature(
            name, _archive_flag(ours, enabled, ours.archived_at), project_active=True, now=now
        )
        enabled = dict.fromkeys(enabled, False)
    events += domain.flag_changes(name, project, _fields(want), _fields(ours))
    if want.tags != ours.tags:
        events += domain.update_tags(
            name,
            [commands.TagBody(type=t, value=v) for t, v in sorted(want.tags - ours.tags)],
            [commands.TagBody(type=t, value=v) for t, v in sorted(ours.tags - want.tags)],
            known_types={t for t, _ in want.tags | ours.tags},
            project=project,
            current=set(ours.tags),
            now=now,
        )
    tick = 0
    for env, state in want.environments.items():
        mine = ours.environments.get(env, EnvState(enabled=False))
        target = domain.Target(name, project, env)
        here = domain.EnvironmentState(
            environment_enabled=True, enabled=bool(enabled.get(env, False))
        )
        added, env_events = _strategies(
            target, here, state, mine, now + timedelta(microseconds=tick)
        )
        tick += added
        events += env_events
        if state.variants != mine.variants:
            events.append(
                domain.set_environment_variants(target, state.variant_bodies, here, spread=False)
            )
        if state.enabled is not None:
            switch = domain.switch_environment(target, here, on=state.enabled)
            if switch is not None:
                events.append(switch)
    events += _dependencies(want, ours, after)
    for link_id in ours.links.keys() - want.links.keys():
        events.append(domain.remove_link(name, project, link_id, active=True, owner=name))
    count = len(ours.links.keys() & want.links.keys())
    for link_id, link in want.links.items():
        body = commands.LinkBody(url=link.url, title=link.title)
        if link_id not in ours.links:
            events.append(
                domain.add_link(
                    name,
                    project,
                    body,
                    active=True,
                    links=count,
                    link_id=link_id,
                    now=now + timedelta(microseconds=tick),
                )
            )
            count += 1
            tick += 1
        elif ours.links[link_id] != link:
            events.append(domain.update_link(name, project, link_id, body, active=True, owner=name))
    if want.archived and not ours.archived:
        assert want.archived_at is not None
        links = [domain.Link(name, p) for p in want.dependencies]
        links += [domain.Link(c, name) for c in children(after, name) if c in after.active]
        flag = _archive_flag(want, {}, None)
        events += domain.archive_feature(name, project, flag, links=links, now=want.archived_at)
    return events


def _fields(flag: FlagState) -> domain.FlagFields:
    return msgspec.convert(
        {
            "description": flag.description,
            "type": flag.type,
            "stale": flag.stale,
            "impressionData": flag.impression_data,
        },
        domain.FlagFields,
    )


def _strategies(
    target: domain.Target,
    here: domain.EnvironmentState,
    want: EnvState,
    ours: EnvState,
    now: datetime,
) -> tuple[int, list[DomainEvent]]:
    """Strategies removed, updated (content), added (at the source's sort order), then
    reordered; returns how many were added and the events."""
    assert want.ordered, "sort orders are read before a flag is decided"
    mine = {s.data.id: s.data for s in ours.strategies}
    theirs = {s.data.id: s for s in want.strategies}
    events: list[DomainEvent] = [
        domain.remove_strategy(target, here, strategy_id=i, exists=True)
        for i in mine
        if i not in theirs
    ]
    added = 0
    for i, strategy in theirs.items():
        assert strategy.body is not None
        if i not in mine:
            events.append(
                domain.add_strategy(
                    target,
                    strategy.body,
                    here,
                    missing_segments=(),
                    strategy_id=i,
                    next_sort_order=strategy.data.sort_order,
                    now=now + timedelta(microseconds=added),
                    spread=False,
                )
            )
            added += 1
        elif not _same_content(strategy.data, mine[i]):
            events.append(
                domain.update_strategy(
                    target,
                    msgspec.structs.replace(strategy.body, sort_order=None),
                    here,
                    strategy_id=i,
                    current_sort_order=mine[i].sort_order,
                    missing_segments=(),
                    spread=False,
                )
            )
    kept = {i: mine[i].sort_order for i in mine if i in theirs}
    orders = [
        commands.StrategySortOrder(id=i, sort_order=theirs[i].data.sort_order)
        for i in kept
        if kept[i] != theirs[i].data.sort_order
    ]
    if orders:
        reordered = domain.reorder_strategies(target, orders, here, current=kept)
        if reordered is not None:
            events.append(reordered)
    return added, events


def _dependencies(want: FlagState, ours: FlagState, after: After) -> list[DomainEvent]:
    name, project = want.name, want.project
    current = list(ours.dependencies.values())
    state = domain.DependencyState(
        projects={name: project},
        parent_has_parents=False,
        child_has_children=False,
        current=current,
    )
    events: list[DomainEvent] = [
        domain.remove_dependency(name, project, parent, state)
        for parent in sorted(ours.dependencies.keys() - want.dependencies.keys())
    ]
    for parent, dependency in sorted(want.dependencies.items()):
        mine = ours.dependencies.get(parent)
        if mine is not None and _same_dependencies({parent: mine}, {parent: dependency}):
            continue
        projects = {name: project}
        if parent in after.active:
            projects[parent] = after.active[parent]
        events.append(
            domain.add_dependency(
                name,
                project,
                commands.DependencyBody(
                    feature=parent, enabled=dependency.enabled, variants=dependency.variants
                ),
                domain.DependencyState(
                    projects=projects,
                    parent_has_parents=bool(after.parents.get(parent)),
                    child_has_children=any(c in after.active for c in children(after, name)),
                    current=current,
                ),
            )
        )
    return events


def _archive_flag(
    flag: FlagState, enabled: Mapping[str, bool | None], archived_at: datetime | None
) -> domain.ArchiveFlag:
    return domain.ArchiveFlag(
        name=flag.name,
        project=flag.project,
        feature_type=flag.type,
        description=flag.description,
        stale=flag.stale,
        impression_data=flag.impression_data,
        created_at=flag.created_at,
        archived_at=archived_at,
        enabled_in=sorted(env for env, on in enabled.items() if on),
    )


def deleted(ours: FlagState, after: After, now: datetime) -> list[DomainEvent]:
    """A flag an earlier run brought and the source no longer has: archived (if it is not),
    then deleted, as a person would."""
    events: list[DomainEvent] = []
    kept = [domain.Link(c, ours.name) for c in children(after, ours.name) if c in after.active]
    archived_at = ours.archived_at
    if archived_at is None:
        own = [domain.Link(ours.name, p) for p in ours.dependencies]
        flag = _archive_flag(ours, {}, None)
        events += domain.archive_feature(ours.name, ours.project, flag, links=own + kept, now=now)
        archived_at = now
    flag = _archive_flag(ours, {}, archived_at)
    events.append(domain.delete_feature(ours.name, flag, links=kept, now=now))
    return events
