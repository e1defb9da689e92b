"""The source's flags as the importer reads them: every flag of every project, archived ones
included, in as few answers as Unleash 6.10.1 gives them (docs/migrating.md, "What is read").

- a project's lists: its active flags (`GET /api/admin/projects/:id/features`: fields, created
  time, each environment's switch, tags) and its archived ones (`GET
  /api/admin/archive/features/:id`: the archive's time too);
- one export a project and environment (`POST /api/admin/features-batch/export`): strategies
  (with their segments), environment variants, tags and dependencies of every active flag,
  and of the archived ones by name. Its `enabled` is not read: Unleash's open-source edition
  answers the environment's own switch there, not the flag's;
- a strategy's `sortOrder`, which the export leaves out (listing a flag's strategies in the
  order they were added), from the source's event log (`GET /api/admin/search/events`: the
  strategy add, update and re-order events of LOG_FLAGS flags a search, once a run), only
  where the log proves it (StrategyLog.sort_orders): the strategy's latest add or update
  names the same flag and environment and a sortOrder, the environment was never re-ordered
  (a re-order's event names ids, no numbers), no two strategies there share a number, and the
  search answered the flag's events whole. Never a guess: what the log does not prove is read
  as below;
- what neither gives, flag by flag, 8 in flight: a sortOrder the log does not prove (`GET
  .../environments/:env/strategies`, where the write needs it: service/switchover/flags.py;
  not where ours holds the same strategies and the same log shows no re-order or strategy
  update of that flag's environment since this source was first imported); a flag's links,
  where the source keeps links (its `featureLinks` flag is not off) and its list leaves
  them out, and everything of a flag when the source has no export (`GET
  .../features/:name`).

A list that carries more (this service's lists hold each environment's strategies and
variants, the dependencies and the links) is taken as it is: what an answer holds is not
asked again. Unleash's answers are decoded in lenient Structs of this module's own."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, NamedTuple

import msgspec

from service.switchover.source import SourceError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from service.switchover.run import Context
    from service.switchover.source import Unleash

EXPORT_CHUNK: Final = 1_000  # archived flags' names an export asks for at once
Json = dict[str, Any]


# --- Unleash's answers ---------------------------------------------------------------------


class SourceStrategy(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A strategy (featureStrategySchema); its nested values stay JSON for the request
    Struct to read (so that a refusal names the field)."""

    id: str
    name: str
    title: str | None = None
    disabled: bool | None = False
    sort_order: int | None = None  # absent from an export
    constraints: list[Json] = []
    parameters: dict[str, Any] = {}
    variants: list[Json] = []
    segments: list[int] = []


class ListedEnvironment(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    enabled: bool = False
    # This service's lists (and a flag's GET) carry these; Unleash's project list does not.
    strategies: list[SourceStrategy] | None = None
    variants: list[Json] | None = None


class ListedTag(msgspec.Struct, frozen=True):
    type: str
    value: str


class Dependency(msgspec.Struct, frozen=True, kw_only=True):
    feature: str
    enabled: bool = True
    variants: list[str] = []


class Link(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    url: str
    title: str | None = None


class ListedFlag(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A flag as a project's list, the archive's list or a flag's GET answers it."""

    name: str
    type: str = "release"
    description: str | None = None
    project: str | None = None
    stale: bool = False
    impression_data: bool = False
    created_at: datetime | None = None
    archived_at: datetime | None = None
    environments: list[ListedEnvironment] = []
    tags: list[ListedTag] | None = None
    dependencies: list[Dependency] | None = None
    links: list[Link] | None = None


class FlagList(msgspec.Struct, frozen=True):
    features: list[ListedFlag]


class Creator(msgspec.Struct, frozen=True, kw_only=True):
    """Who made a flag in the source (Unleash's createdBy): a user's id, -42 an API token,
    -1337 the system."""

    id: int
    name: str | None = None


class Collaborators(msgspec.Struct, frozen=True, kw_only=True):
    users: list[Creator] = []  # the latest to change the flag first


class People(msgspec.Struct, frozen=True, kw_only=True):
    """Of a flag's GET: who changed it."""

    collaborators: Collaborators | None = None


async def last_changed_by(ctx: Context, flag: Flag) -> Creator | None:
    """Who changed the (active) flag last in the source, as its GET names them; None when the
    source does not say."""
    if flag.archived:
        return None
    path = f"/api/admin/projects/{flag.project}/features/{flag.name}"
    found = await ctx.source.get(path, People)
    users = found.collaborators.users if found.collaborators else []
    return users[0] if users else None


class SearchedEnvironment(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    enabled: bool = False


class SearchedFlag(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    name: str
    created_by: Creator | None = None
    environments: list[SearchedEnvironment] = []


class SearchPage(msgspec.Struct, frozen=True, kw_only=True):
    features: list[SearchedFlag]
    total: int = 0


class Project(msgspec.Struct, frozen=True):
    id: str


class Projects(msgspec.Struct, frozen=True):
    projects: list[Project]


class ProjectEnvironment(msgspec.Struct, frozen=True):
    name: str
    visible: bool = True  # Unleash: whether the project has it


class ProjectEnvironments(msgspec.Struct, frozen=True):
    environments: list[ProjectEnvironment]


class ExportedStrategy(SourceStrategy, frozen=True, kw_only=True, rename="camel"):
    feature_name: str


class ExportedEnvironment(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    feature_name: str
    variants: list[Json] = []


class ExportedTag(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    feature_name: str
    tag_type: str
    tag_value: str


class ExportedDependencies(msgspec.Struct, frozen=True, kw_only=True):
    feature: str
    dependencies: list[Dependency] = []


class Export(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """exportResultSchema: one environment's configuration of the flags asked for."""

    feature_strategies: list[ExportedStrategy] = []
    feature_environments: list[ExportedEnvironment] = []
    feature_tags: list[ExportedTag] = []
    dependencies: list[ExportedDependencies] = []


class Segment(msgspec.Struct, frozen=True):
    id: int
    name: str


class Segments(msgspec.Struct, frozen=True):
    segments: list[Segment]


class UiFlags(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    feature_links: bool | None = None


class UiConfig(msgspec.Struct, frozen=True):
    flags: UiFlags = msgspec.field(default_factory=UiFlags)


# --- what the importer holds of each flag --------------------------------------------------


class Environment(msgspec.Struct, kw_only=True):
    """One environment of a source flag. `enabled` None: not known from what was read (an
    archived flag's switch, which Unleash's lists and export do not give); `ordered` False:
    the strategies came from an export, in no order and without their sortOrder."""

    enabled: bool | None = None
    strategies: list[SourceStrategy] = []
    variants: list[Json] = []
    known: bool = False  # strategies and variants read
    ordered: bool = False


class Flag(msgspec.Struct, kw_only=True):
    name: str
    project: str
    type: str
    description: str | None
    impression_data: bool
    stale: bool
    created_at: datetime | None
    archived_at: datetime | None
    environments: dict[str, Environment]
    tags: list[tuple[str, str]] | None = None
    dependencies: list[Dependency] | None = None
    links: list[Link] | None = None
    created_by: Creator | None = None

    @property
    def archived(self) -> bool:
        return self.archived_at is not None


class Flags(msgspec.Struct, kw_only=True):
    """Everything read: the flags in the source's order, the environments of each project,
    the source's segments (id -> name)."""

    flags: list[Flag]
    environments: dict[str, list[str]]
    segments: dict[int, str]
    log: StrategyLog | None = None  # None: not read (no export left an order out) or unanswered


# --- reading -------------------------------------------------------------------------------


async def read_flags(ctx: Context) -> Flags:
    source = ctx.source
    ctx.progress.phase("reading flags", 1)
    config = await source.get("/api/admin/ui-config", UiConfig)
    projects = (await source.get("/api/admin/projects", Projects)).projects
    lists = await asyncio.gather(*(_project(source, p.id) for p in projects))
    environments = {p.id: envs for p, (envs, _) in zip(projects, lists, strict=True)}
    flags = [f for _, found in lists for f in found]
    ctx.progress.done()
    await _searched(ctx, flags)
    await _exports(ctx, flags, environments)
    # Unleash 6.10.1 keeps links only with its `featureLinks` flag on; said off, there are none.
    links_kept = config.flags.feature_links is not False
    await _one_by_one(ctx, flags, links_kept=links_kept)
    log = await _from_log(ctx, flags)
    segments: dict[int, str] = {}
    if any(s.segments for f in flags for e in f.environments.values() for s in e.strategies):
        found = await source.get("/api/admin/segments", Segments)
        segments = {s.id: s.name for s in found.segments}
    return Flags(flags=flags, environments=environments, segments=segments, log=log)


async def _project(source: Unleash, project: str) -> tuple[list[str], list[Flag]]:
    base = f"/api/admin/projects/{project}/features"
    envs, active, archived = await asyncio.gather(
        source.get(f"/api/admin/environments/project/{project}", ProjectEnvironments),
        source.get(base, FlagList),
        source.get(f"/api/admin/archive/features/{project}", FlagList),
    )
    names = [e.name for e in envs.environments if e.visible]
    found = [_listed(f, project, names) for f in active.features]
    found += [_listed(f, project, names, archived=True) for f in archived.features]
    return names, found


def _listed(flag: ListedFlag, project: str, names: list[str], *, archived: bool = False) -> Flag:
    """What a list says of a flag. An archived flag's entry says nothing of its environments
    (its `environments` are where SDKs saw it), tags or dependencies."""
    archived_at = flag.archived_at
    if archived and archived_at is None:
        raise SourceError(f"the archive of {project} lists {flag.name} without its archive time")
    given = {} if archived else {e.name: e for e in flag.environments}
    return Flag(
        name=flag.name,
        project=project,
        type=flag.type,
        description=flag.description,
        impression_data=flag.impression_data,
        stale=flag.stale,
        created_at=flag.created_at,
        archived_at=archived_at if archived else None,
        environments={name: _environment(given.get(name), archived=archived) for name in names},
        tags=None if archived or flag.tags is None else [(t.type, t.value) for t in flag.tags],
        dependencies=None if archived else flag.dependencies,
        links=None if archived else flag.links,
    )


def _environment(env: ListedEnvironment | None, *, archived: bool) -> Environment:
    if env is None:
        return Environment(enabled=None if archived else False)
    if env.strategies is None or env.variants is None:
        return Environment(enabled=env.enabled)
    return Environment(
        enabled=env.enabled,
        strategies=_in_order(env.strategies),
        variants=env.variants,
        known=True,
        ordered=True,
    )


def _in_order(strategies: Sequence[SourceStrategy]) -> list[SourceStrategy]:
    """As Unleash lists them: by sortOrder (the answer's order breaks ties)."""
    return sorted(strategies, key=lambda s: s.sort_order or 0)


def _configured(flag: Flag) -> bool:
    """Whether the reads so far gave the flag's environments, tags and dependencies."""
    return (
        flag.tags is not None
        and flag.dependencies is not None
        and all(e.known for e in flag.environments.values())
    )


SEARCH_PAGE: Final = 100  # the most Unleash 6.10.1's flag search gives at once
SEARCH = "/api/admin/search/features?sortBy=name&sortOrder=asc&limit={limit}&offset={offset}"


async def _searched(ctx: Context, flags: list[Flag]) -> None:
    """What only the flag search gives, a page of 100 at a time: who made each flag, and an
    archived flag's switches (Unleash's archive list and export do not say them). Nothing
    when the source has no search."""
    by_name = {f.name: f for f in flags}
    for archived in (False, True):
        wanted = sum(f.archived == archived for f in flags)
        if not wanted:
            continue
        pages = range(0, wanted, SEARCH_PAGE)
        ctx.progress.phase("searching " + ("archived flags" if archived else "flags"), len(pages))
        try:
            found = await asyncio.gather(*(_page(ctx, offset, archived) for offset in pages))
        except _NoSearch:
            ctx.progress.done()
            return
        ctx.progress.done()
        for page in found:
            for item in page.features:
                flag = by_name.get(item.name)
                if flag is None or flag.archived != archived:
                    continue
                flag.created_by = item.created_by
                if archived:
                    for env in item.environments:
                        if env.name in flag.environments:
                            flag.environments[env.name].enabled = env.enabled


class _NoSearch(Exception):
    pass


async def _page(ctx: Context, offset: int, archived: bool) -> SearchPage:  # noqa: FBT001
    path = SEARCH.format(limit=SEARCH_PAGE, offset=offset)
    if archived:
        path += "&archived=IS:true"
    try:
        found = await ctx.source.get(path, SearchPage)
    except SourceError as exc:
        if "answered 404" in exc.message or "answered 405" in exc.message:
            raise _NoSearch from None
        raise
    ctx.progress.advance()
    return found


class _Ask(NamedTuple):
    environment: str
    body: dict[str, Any]
    covers: list[Flag]  # the flags the export answers for


async def _exports(ctx: Context, flags: list[Flag], environments: dict[str, list[str]]) -> None:
    """Each project environment's export fills in what the lists left out (the active flags of
    a project in one, the archived ones by name); nothing when the source has no export (each
    flag's GET then gives it all)."""
    asks: list[_Ask] = []
    for project, names in environments.items():
        mine = [f for f in flags if f.project == project and not _configured(f)]
        active = [f for f in mine if not f.archived]
        archived = [f for f in mine if f.archived]
        for env in names:
            if active:
                asks.append(_Ask(env, {"project": project, "environment": env}, active))
            for i in range(0, len(archived), EXPORT_CHUNK):
                chunk = archived[i : i + EXPORT_CHUNK]
                body = {"features": [f.name for f in chunk], "environment": env}
                asks.append(_Ask(env, body, chunk))
    if not asks:
        return
    ctx.progress.phase("reading flags' exports", len(asks))
    try:
        answers = await asyncio.gather(*(_export(ctx, ask.body) for ask in asks))
    except _NoExport:
        ctx.progress.done()
        return
    tags: dict[str, dict[tuple[str, str], None]] = {}
    for ask, export in zip(asks, answers, strict=True):
        _fill(ask, export, tags)
    for flag in flags:
        if flag.name in tags and flag.tags is None:
            flag.tags = list(tags[flag.name])
    ctx.progress.done()


class _NoExport(Exception):
    pass


async def _export(ctx: Context, body: dict[str, Any]) -> Export:
    try:
        found = await ctx.source.post("/api/admin/features-batch/export", Export, body)
    except SourceError as exc:
        if "answered 404" in exc.message or "answered 405" in exc.message:
            raise _NoExport from None
        raise
    ctx.progress.advance()
    return found


def _fill(ask: _Ask, export: Export, tags: dict[str, dict[tuple[str, str], None]]) -> None:
    """One environment's export into the flags it answers for: their strategies and variants
    there (unordered), their tags and dependencies (the same in every environment's)."""
    covered = {f.name: f for f in ask.covers}
    for flag in ask.covers:
        _covered(flag, ask.environment)
        tags.setdefault(flag.name, {})
    for strategy in export.feature_strategies:
        env = _exported(covered, strategy.feature_name, ask.environment)
        if env is not None:
            env.strategies.append(strategy)
    for found in export.feature_environments:
        env = _exported(covered, found.feature_name, ask.environment)
        if env is not None:
            env.variants = found.variants
    for tag in export.feature_tags:
        if tag.feature_name in covered:
            tags[tag.feature_name][(tag.tag_type, tag.tag_value)] = None
    for item in export.dependencies:
        if item.feature in covered:
            covered[item.feature].dependencies = list(item.dependencies)


def _covered(flag: Flag, environment: str) -> None:
    """What an export answers for a flag it covers, before its rows are read: nothing."""
    env = flag.environments.get(environment)
    if env is not None and not env.known:
        env.strategies, env.variants, env.known = [], [], True
    if flag.dependencies is None:
        flag.dependencies = []


def _exported(covered: dict[str, Flag], name: str, environment: str) -> Environment | None:
    """A flag's environment that an export fills in (not one a list gave in order)."""
    flag = covered.get(name)
    env = None if flag is None else flag.environments.get(environment)
    return None if env is None or env.ordered else env


async def _one_by_one(ctx: Context, flags: list[Flag], *, links_kept: bool) -> None:
    """A flag's GET for each flag whose lists and exports left something out: everything when
    the source has no export, the links where the source keeps them."""
    wanted = [f for f in flags if not _configured(f) or (links_kept and f.links is None)]
    if wanted:
        ctx.progress.phase("reading flags one by one", len(wanted))
        await asyncio.gather(*(_one(ctx, f) for f in wanted))
        ctx.progress.done()
    for flag in flags:
        flag.tags = flag.tags or []
        flag.dependencies = flag.dependencies or []
        flag.links = flag.links or []


async def _one(ctx: Context, flag: Flag) -> None:
    path = f"/api/admin/projects/{flag.project}/features/{flag.name}"
    try:
        found = await ctx.source.get(path, ListedFlag)
    except SourceError as exc:
        # Unleash answers no GET of an archived flag: what its export gave stands.
        if flag.archived and _configured(flag) and "answered 404" in exc.message:
            ctx.progress.advance()
            return
        raise
    for env in found.environments:
        mine = flag.environments.get(env.name)
        if mine is None:
            continue
        mine.enabled = env.enabled
        if env.strategies is not None and env.variants is not None:
            mine.strategies, mine.variants = _in_order(env.strategies), env.variants
            mine.known = mine.ordered = True
    if found.tags is not None:
        flag.tags = [(t.type, t.value) for t in found.tags]
    if found.dependencies is not None:
        flag.dependencies = found.dependencies
    flag.links = found.links or []
    if not _configured(flag):
        raise SourceError(
            f"{path} answered without the flag's strategies, variants, tags or dependencies",
            exit_code=1,
        )
    ctx.progress.advance()


# --- the strategies' event log -----------------------------------------------------------

# The events that give or change a strategy's sortOrder in Unleash: an add and an update carry
# the strategy (its `sortOrder` too); a re-order names only the ids.
LOG_EVENTS: Final = ("feature-strategy-add", "feature-strategy-update", "strategy-order-changed")
REORDERED: Final = "strategy-order-changed"
# What may have changed an order since a first import without changing the strategies.
ORDER_EVENTS: Final = ("strategy-order-changed", "feature-strategy-update")
LOG_FLAGS: Final = 100  # flags a search names at once (this service takes 100 values a filter)
LOG_LIMIT: Final = 1_000  # Unleash's largest page: an answer under it holds every match
# The source's clock and ours may differ: its events count from a day before ours say.
CLOCK_MARGIN: Final = timedelta(days=1)


class LoggedEvent(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    id: int
    type: str
    created_at: datetime | None = None
    feature_name: str | None = None
    environment: str | None = None
    data: Any = None


class LogPage(msgspec.Struct, frozen=True):
    events: list[LoggedEvent]


class _Logged(NamedTuple):
    event: int  # the event's id: the latest is the highest
    flag: str | None
    environment: str | None
    sort_order: int | None  # None: the event's data has none


class StrategyLog(msgspec.Struct, kw_only=True):
    """What the source's event log says of the strategies of the flags asked about: each
    strategy id's latest add or update, the flags' environments ever re-ordered, and when
    each re-order or update was (for a later run: `moved`)."""

    latest: dict[str, _Logged] = {}
    reordered: set[tuple[str, str]] = set()
    changes: list[tuple[str, str, datetime | None]] = []
    unread: set[str] = set()  # flags whose events were not all read

    def add(self, event: LoggedEvent) -> None:
        flag, env = event.feature_name, event.environment
        if flag is not None and env is not None:
            if event.type == REORDERED:
                self.reordered.add((flag, env))
            if event.type in ORDER_EVENTS:
                self.changes.append((flag, env, event.created_at))
        data = event.data
        if event.type == REORDERED or not isinstance(data, dict):
            return
        strategy = data.get("id")
        if not isinstance(strategy, str):
            return
        order = data.get("sortOrder")
        known = self.latest.get(strategy)
        if known is None or known.event < event.id:
            sort_order = order if isinstance(order, int) and not isinstance(order, bool) else None
            self.latest[strategy] = _Logged(event.id, flag, env, sort_order)

    def sort_orders(
        self, flag: str, env: str, strategies: Sequence[SourceStrategy]
    ) -> list[SourceStrategy] | None:
        """The strategies with their sortOrder, in order, where the log proves it: the flag's
        events all read, the environment never re-ordered, each strategy's latest event naming
        it there with a sortOrder, no two the same (Unleash breaks a tie by creation time,
        which the export does not give). None: the order is to be read."""
        if flag in self.unread or (flag, env) in self.reordered:
            return None
        found = []
        for strategy in strategies:
            logged = self.latest.get(strategy.id)
            if (
                logged is None
                or logged.sort_order is None
                or (logged.flag, logged.environment)
                != (
                    flag,
                    env,
                )
            ):
                return None
            found.append(msgspec.structs.replace(strategy, sort_order=logged.sort_order))
        if len({s.sort_order for s in found}) != len(found):
            return None
        return _in_order(found)

    def moved(self, since: datetime, flags: Sequence[Flag]) -> set[tuple[str, str]]:
        """The flags' environments (flag, environment) whose strategies' order the source may
        have changed since `since` (when this source was first imported): a re-order or an
        update from the day before on (CLOCK_MARGIN), or at no known time, and every
        environment of a flag whose events were not all read."""
        day = (since - CLOCK_MARGIN).date()
        cutoff = datetime(day.year, day.month, day.day, tzinfo=UTC)
        found = {(f, e) for f, e, at in self.changes if at is None or at >= cutoff}
        found |= {(f.name, env) for f in flags if f.name in self.unread for env in f.environments}
        return found


async def _from_log(ctx: Context, flags: list[Flag]) -> StrategyLog | None:
    """The sortOrders the export left out, from the source's event log where it proves them
    (StrategyLog.sort_orders); the log as read, for a later run's `moved`. An environment
    an export gave no strategy has no order to read."""
    for flag in flags:
        for env in flag.environments.values():
            if env.known and not env.strategies:
                env.ordered = True
    unordered = [f for f in flags if any(not e.ordered for e in f.environments.values())]
    if not unordered:
        return None
    log = await read_log(ctx, unordered)
    if log is None:
        return None
    for flag in unordered:
        for name, env in flag.environments.items():
            if env.ordered:
                continue
            found = log.sort_orders(flag.name, name, env.strategies)
            if found is not None:
                env.strategies, env.ordered = found, True
    return log


async def read_log(ctx: Context, flags: Sequence[Flag]) -> StrategyLog | None:
    """The strategy events of `flags` (`GET /api/admin/search/events`, LOG_FLAGS flags a
    search); None when the source answers no such search (every order is then read)."""
    log = StrategyLog()
    names = []
    for flag in flags:
        if "," in flag.name:  # a filter's values are comma-separated: not asked
            log.unread.add(flag.name)
        else:
            names.append(flag.name)
    batches = [names[i : i + LOG_FLAGS] for i in range(0, len(names), LOG_FLAGS)]
    ctx.progress.phase("reading strategies' event log", len(batches))
    try:
        await asyncio.gather(*(_logged(ctx, log, batch) for batch in batches))
    except SourceError:
        ctx.progress.done()
        return None
    ctx.progress.done()
    return log


async def _logged(ctx: Context, log: StrategyLog, names: list[str], *, top: bool = True) -> None:
    """One search of some flags' strategy events. A full page may leave events out (Unleash
    pages by creation time alone, whose ties give no stable order): the flags are then asked
    in halves, and a flag alone with a full page counts as not read."""
    params = {
        "type": "IS_ANY_OF:" + ",".join(LOG_EVENTS),
        "feature": "IS_ANY_OF:" + ",".join(names),
        "limit": str(LOG_LIMIT),
        "offset": "0",
    }
    page = await ctx.source.get("/api/admin/search/events", LogPage, params)
    if len(page.events) < LOG_LIMIT:
        for event in page.events:
            log.add(event)
    elif len(names) == 1:
        log.unread.add(names[0])
    else:
        half = len(names) // 2
        await asyncio.gather(
            _logged(ctx, log, names[:half], top=False), _logged(ctx, log, names[half:], top=False)
        )
    if top:
        ctx.progress.advance()
