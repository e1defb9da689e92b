"""Flags: every flag of every project, archived ones included, with its environments'
switches, strategies in order, variants, tags, dependencies and links, written here as the
events a person's requests make (read: service/switchover/flag_source.py; decided:
service/switchover/flag_plan.py).

The write locks ours in a few statements (what flags refer to, then every flag), reads the
strategies' sort orders the source's export left out where they are needed, decides each
flag, and appends: the new flags' streams in one call, one call a changed flag. Flags come
before the flags that depend on them, deletions last."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Final

import msgspec

import eventlog
from eventlog.events.features import Constraint, StrategyData, StrategyVariant, Variant
from projections.collaborators import API_TOKEN_USER, SYSTEM_USER
from projections.shapes import ConstraintColumn, StrategyVariantColumn, VariantColumn
from service.errors import AppError
from service.features import domain, queries
from service.strategies.builtins import NAMES as BUILT_IN_STRATEGY_TYPES
from service.switchover import flag_plan, flag_source, origin
from service.switchover.run import Outcome
from service.work import NewStream

if TYPE_CHECKING:
    from eventlog.codec import DomainEvent
    from eventlog.connections import Conn
    from eventlog.events.base import Metadata
    from service.switchover.run import Context
    from service.work import UnitOfWork

# New flags' streams an append starts at once: the inline projections order one call's writes
# in a time that grows faster than the writes do, so many new flags go in calls of this many
# (docs/benchmarks.md, "import-unleash").
NEW_CHUNK: Final = 100
_constraints = msgspec.json.Decoder(list[ConstraintColumn])
_strategy_variants = msgspec.json.Decoder(list[StrategyVariantColumn])
_variants = msgspec.json.Decoder(list[VariantColumn])
_parameters = msgspec.json.Decoder(dict[str, str])
_names = msgspec.json.Decoder(list[str])


class Flags:
    name = "flags"

    async def read(self, ctx: Context) -> flag_source.Flags:
        return await flag_source.read_flags(ctx)

    async def write(self, ctx: Context, data: flag_source.Flags, uow: UnitOfWork) -> Outcome:
        outcome = Outcome(kind=self.name, in_source=len(data.flags))
        ours = await _Ours.lock(uow.conn)
        marks = await origin.provenance(uow.conn, "feature", ctx.origin)
        facts = ours.facts(ctx, data)
        wants = await _wanted(ctx, data, ours, facts, marks, outcome)
        after = _after(wants, ours, marks)
        ctx.progress.phase("writing flags", len(data.flags))
        new: list[tuple[str, list[DomainEvent]]] = []
        changes: list[tuple[str, list[DomainEvent]]] = []
        for want in sorted(wants.values(), key=lambda w: (bool(w.dependencies), w.name)):
            ctx.progress.advance()
            try:
                _decide(ctx, want, ours.flags.get(want.name), marks, after, outcome, new, changes)
            except (msgspec.ValidationError, AppError) as exc:
                outcome.refused.append((want.name, _reason(exc)))
        gone = _gone(ctx, data, ours, marks, after, outcome)
        if not outcome.problems:
            made_by = {f.name: made_by_metadata(ctx, f.created_by) for f in data.flags}
            changed_by = await _changed_by(ctx, data, {name for name, _ in changes})
            await _append(ctx, uow, new, changes + gone, marks, made_by, changed_by)
        ctx.progress.done()
        return outcome


def _decide(  # noqa: PLR0913, PLR0917 - one flag's decision and where it goes
    ctx: Context,
    want: flag_plan.FlagState,
    mine: flag_plan.FlagState | None,
    marks: dict[str, origin.Provenance],
    after: flag_plan.After,
    outcome: Outcome,
    new: list[tuple[str, list[DomainEvent]]],
    changes: list[tuple[str, list[DomainEvent]]],
) -> None:
    if mine is None:
        events = flag_plan.created(want, after, ctx.now)
        new.append((want.name, events))
        outcome.created.append(want.name)
        outcome.events += len(events)
        return
    if mine.project != want.project:
        outcome.conflicts.append(
            (want.name, f"in project {mine.project} here, in {want.project} in the source")
        )
        return
    differs = flag_plan.differences(want, mine)
    if not differs:
        outcome.unchanged += 1
        return
    if not origin.may_overwrite(marks.get(want.name), prefer_source=ctx.prefer_source):
        outcome.conflicts.append((want.name, "differs here in " + ", ".join(differs)))
        return
    if mine.archived and want.archived:
        outcome.skipped.append(
            (want.name, "archived here and in the source: its changes are not carried")
        )
        return
    events = flag_plan.changed(want, mine, after, ctx.now)
    if not events:
        outcome.unchanged += 1
        return
    changes.append((want.name, events))
    outcome.updated.append(want.name)
    outcome.events += len(events)


async def _wanted(  # noqa: PLR0913, PLR0917 - both sides and what the report says
    ctx: Context,
    data: flag_source.Flags,
    ours: _Ours,
    facts: flag_plan.Facts,
    marks: dict[str, origin.Provenance],
    outcome: Outcome,
) -> dict[str, flag_plan.FlagState]:
    """Each source flag in our terms, its strategies' sort orders read where the export left
    them out and ours does not settle them; a flag our rules refuse is named in `outcome`."""
    wants: dict[str, flag_plan.FlagState] = {}
    unordered: list[tuple[flag_source.Flag, str]] = []
    moved = _moved(data, marks)
    for flag in data.flags:
        try:
            want = flag_plan.wanted(flag, facts, ctx.now)
        except (msgspec.ValidationError, AppError) as exc:
            outcome.refused.append((flag.name, _reason(exc)))
            continue
        wants[flag.name] = want
        mine = ours.flags.get(flag.name)
        mark = marks.get(flag.name)
        known = moved if mark is not None and mark.imported else None
        unordered += [(flag, env) for env in flag_plan.unordered(want, mine, known)]
    if not unordered:
        return wants
    ctx.progress.phase("reading strategies' order", len(unordered))
    found = await asyncio.gather(*(_ordered(ctx, flag, env) for flag, env in unordered))
    ctx.progress.done()
    for (flag, env), strategies in zip(unordered, found, strict=True):
        state = flag.environments[env]
        state.strategies, state.ordered = strategies, True
    for flag in {id(f): f for f, _ in unordered}.values():
        try:
            want = flag_plan.wanted(flag, facts, ctx.now)
            left = flag_plan.unordered(want, ours.flags.get(flag.name))
            assert not left, f"{flag.name}: the strategies of {left} are read in order"
            wants[flag.name] = want
        except (msgspec.ValidationError, AppError) as exc:
            del wants[flag.name]
            outcome.refused.append((flag.name, _reason(exc)))
    return wants


def _moved(
    data: flag_source.Flags, marks: dict[str, origin.Provenance]
) -> set[tuple[str, str]] | None:
    """Where the source may have re-ordered strategies since it was first imported, from the
    event log the read took (None: not known, or no flag of an earlier run here)."""
    since = [m.first_imported for m in marks.values() if m.first_imported is not None]
    if not since or data.log is None:
        return None
    return data.log.moved(min(since), data.flags)


async def _ordered(
    ctx: Context, flag: flag_source.Flag, env: str
) -> list[flag_source.SourceStrategy]:
    path = f"/api/admin/projects/{flag.project}/features/{flag.name}/environments/{env}/strategies"
    found = await ctx.source.get(path, list[flag_source.SourceStrategy])
    ctx.progress.advance()
    return sorted(found, key=lambda s: s.sort_order or 0)


def _after(
    wants: dict[str, flag_plan.FlagState],
    ours: _Ours,
    marks: dict[str, origin.Provenance],
) -> flag_plan.After:
    """The flags as the import leaves them: the source's, and ours that it keeps (not those
    an earlier run brought that the source no longer has)."""
    active: dict[str, str] = {}
    parents: dict[str, set[str]] = {}
    for name, mine in ours.flags.items():
        mark = marks.get(name)
        if name in wants or (mark is not None and mark.imported):
            continue
        if not mine.archived:
            active[name] = mine.project
            parents[name] = set(mine.dependencies)
    for name, want in wants.items():
        if not want.archived:
            active[name] = want.project
            parents[name] = set(want.dependencies)
    return flag_plan.After(active=active, parents=parents)


def _gone(  # noqa: PLR0913, PLR0917 - the state a deletion compares
    ctx: Context,
    data: flag_source.Flags,
    ours: _Ours,
    marks: dict[str, origin.Provenance],
    after: flag_plan.After,
    outcome: Outcome,
) -> list[tuple[str, list[DomainEvent]]]:
    """What an earlier run brought from this source and the source no longer has is
    deleted here, as a person deletes a flag; what was made here is never touched."""
    kept = {f.name for f in data.flags}
    found: list[tuple[str, list[DomainEvent]]] = []
    for name in sorted(set(ours.flags) - kept):
        mark = marks.get(name)
        if mark is None or not mark.imported:
            continue
        if mark.changed_here and not ctx.prefer_source:
            outcome.conflicts.append((name, "gone from the source, changed here since"))
            continue
        try:
            events = flag_plan.deleted(ours.flags[name], after, ctx.now)
        except AppError as exc:
            outcome.refused.append((name, _reason(exc)))
            continue
        found.append((name, events))
        outcome.deleted.append(name)
        outcome.events += len(events)
    return found


async def _changed_by(
    ctx: Context, data: flag_source.Flags, changed: set[str]
) -> dict[str, Metadata]:
    """The metadata of a changed flag's events: the source's latest collaborator of the flag
    as their actor (who changed it there last), as made_by_metadata names them."""
    flags = [f for f in data.flags if f.name in changed]
    found = await asyncio.gather(*(flag_source.last_changed_by(ctx, f) for f in flags))
    return {
        f.name: made_by_metadata(ctx, who)
        for f, who in zip(flags, found, strict=True)
        if who is not None
    }


def made_by_metadata(ctx: Context, creator: flag_source.Creator | None) -> Metadata:
    """The metadata of a new flag's events: the run's, with the source's creator as the actor
    where this service can name them as Unleash does (an API token, the system, an imported
    account), so that the flag's `createdBy` and collaborators say who made it; else the
    importer's. `source` and `origin` still say that an import wrote them."""
    if creator is None:
        return ctx.metadata
    name = creator.name or ctx.metadata.actor_name
    if creator.id == API_TOKEN_USER:
        return msgspec.structs.replace(
            ctx.metadata, actor_kind="api-token", actor_id="api-token:source", actor_name=name
        )
    if creator.id == SYSTEM_USER:
        return msgspec.structs.replace(ctx.metadata, actor_name=name)
    for kind, actor in (("user", "user"), ("service account", "service-account")):
        ours = ctx.ids.get(kind, {}).get(creator.id)
        if ours is not None:
            return msgspec.structs.replace(
                ctx.metadata, actor_kind=actor, actor_id=f"{actor}:{ours}", actor_name=name
            )
    return ctx.metadata


async def _append(  # noqa: PLR0913, PLR0917 - what the decisions made, and by whom
    ctx: Context,
    uow: UnitOfWork,
    new: list[tuple[str, list[DomainEvent]]],
    changes: list[tuple[str, list[DomainEvent]]],
    marks: dict[str, origin.Provenance],
    made_by: dict[str, Metadata],
    changed_by: dict[str, Metadata],
) -> None:
    """New flags' streams at once (a name a deleted flag had continues its stream), then one
    append a changed flag, in the order decided."""
    fresh = [
        NewStream(domain.stream(name), events, made_by.get(name, ctx.metadata))
        for name, events in new
        if name not in marks
    ]
    for i in range(0, len(fresh), NEW_CHUNK):
        await uow.append_new(fresh[i : i + NEW_CHUNK])
    for name, events in new:
        if name in marks:
            version = await eventlog.stream_version(uow.conn, domain.stream(name))
            metadata = made_by.get(name, ctx.metadata)
            await uow.append(domain.stream(name), events, metadata, at_version=version)
    for name, events in changes:
        await uow.append(domain.stream(name), events, changed_by.get(name, ctx.metadata))


def _reason(exc: Exception) -> str:
    return exc.message if isinstance(exc, AppError) else str(exc)


# --- ours ------------------------------------------------------------------------------------


class _Ours:
    """Every flag here in the import's terms, and what flags refer to, read under locks."""

    def __init__(self) -> None:
        self.flags: dict[str, flag_plan.FlagState] = {}
        self.projects: dict[str, list[str]] = {}
        self.tag_types: set[str] = set()
        self.strategy_types: set[str] = set(BUILT_IN_STRATEGY_TYPES)
        self.segments: dict[str, int] = {}  # name -> id
        self.strategy_owners: dict[str, str] = {}
        self.link_owners: dict[str, str] = {}

    @classmethod
    async def lock(cls, conn: Conn) -> _Ours:
        ours = cls()
        ours.tag_types = {r["name"] for r in await conn.fetch(queries.LOCK_ALL_TAG_TYPES_SHARED)}
        ours.strategy_types |= {
            r["name"] for r in await conn.fetch(queries.LOCK_ALL_STRATEGY_TYPES_SHARED)
        }
        ours.segments = {
            r["name"]: r["id"] for r in await conn.fetch(queries.LOCK_ALL_SEGMENTS_SHARED)
        }
        ours.projects = {
            r["id"]: list(r["environments"])
            for r in await conn.fetch(queries.LOCK_ALL_PROJECTS_SHARED)
        }
        for row in await conn.fetch(queries.LOCK_ALL_FLAGS):
            ours.flags[row["name"]] = flag_plan.FlagState(
                name=row["name"],
                project=row["project"],
                type=row["type"],
                description=row["description"],
                impression_data=row["impression_data"],
                stale=row["stale"],
                created_at=row["created_at"],
                archived_at=row["archived_at"],
                environments={},
                tags=frozenset(),
                dependencies={},
                links={},
            )
        await ours._parts(conn)
        return ours

    async def _parts(self, conn: Conn) -> None:
        flags = self.flags
        for row in await conn.fetch(queries.ALL_FEATURE_ENVIRONMENTS):
            flag = flags.get(row["feature_name"])
            if flag is not None:
                env = self._env(flag, row["environment"])
                env.enabled = row["enabled"]
                env.variants = _as(_variants.decode(row["variants"]), list[Variant])
        for row in await conn.fetch(queries.ALL_STRATEGIES):
            self.strategy_owners[str(row["id"])] = row["feature_name"]
            flag = flags.get(row["feature_name"])
            if flag is not None:
                env = self._env(flag, row["environment"])
                env.strategies.append(flag_plan.Strategy(_strategy(row)))
        await self._tags_and_links(conn)

    async def _tags_and_links(self, conn: Conn) -> None:
        flags = self.flags
        tags: dict[str, set[tuple[str, str]]] = {}
        for row in await conn.fetch(queries.ALL_TAGS):
            tags.setdefault(row["feature_name"], set()).add((row["type"], row["value"]))
        for name, found in tags.items():
            if name in flags:
                flags[name].tags = frozenset(found)
        for row in await conn.fetch(queries.ALL_DEPENDENCIES):
            flag = flags.get(row["child"])
            if flag is not None:
                flag.dependencies[row["parent"]] = domain.Dependency(
                    parent=row["parent"],
                    enabled=row["enabled"],
                    variants=_names.decode(row["variants"]),
                )
        for row in await conn.fetch(queries.ALL_LINKS):
            self.link_owners[row["id"]] = row["feature_name"]
            flag = flags.get(row["feature_name"])
            if flag is not None:
                flag.links[row["id"]] = flag_plan.LinkState(row["url"], row["title"])

    @staticmethod
    def _env(flag: flag_plan.FlagState, name: str) -> flag_plan.EnvState:
        env = flag.environments.get(name)
        if env is None:
            env = flag.environments[name] = flag_plan.EnvState(enabled=False)
        return env

    def facts(self, ctx: Context, data: flag_source.Flags) -> flag_plan.Facts:
        """What source flags refer to, here: a source segment is the one the segments' import
        mapped it to, else ours of the same name."""
        mapped: dict[int, int] = dict(ctx.ids.get("segment", {}))
        for source_id, name in data.segments.items():
            if source_id not in mapped and name in self.segments:
                mapped[source_id] = self.segments[name]
        return flag_plan.Facts(
            projects=self.projects,
            tag_types=self.tag_types,
            strategy_types=self.strategy_types,
            segments=mapped,
            segment_names=data.segments,
            strategy_owners=self.strategy_owners,
            link_owners=self.link_owners,
            origin=ctx.origin,
        )


def _as(value: object, shape: type[Any]) -> Any:
    return msgspec.convert(value, shape, from_attributes=True)


def _strategy(row: Any) -> StrategyData:
    return StrategyData(
        id=str(row["id"]),
        name=row["name"],
        title=row["title"],
        disabled=row["disabled"],
        sort_order=row["sort_order"],
        constraints=_as(_constraints.decode(row["constraints"]), list[Constraint]),
        parameters=_parameters.decode(row["parameters"]),
        variants=_as(_strategy_variants.decode(row["variants"]), list[StrategyVariant]),
        segments=list(row["segments"]),
    )
