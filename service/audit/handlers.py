"""HTTP handlers of the event log: Unleash's /api/admin/events, /api/admin/events/:featureName
and /api/admin/search/events (its filters, plus a cursor by log position)."""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING, Annotated, Final

import msgspec

import eventlog
from eventlog.connections import sharing, snapshot_of
from service import auth
from service.appkeys import POOL
from service.audit import logsearch, queries, states
from service.audit.commands import SearchEvents
from service.audit.diff import entity_of_stream
from service.audit.logsearch import LogFilter
from service.audit.responses import (
    AuditDiff,
    EventCreator,
    EventList,
    EventSearchResult,
    FeatureEventList,
    LogEvent,
    log_event,
)
from service.errors import ValidationError
from service.http.answers import json_response
from service.http.instants import (
    AS_INSTANT,
    DAY_OR_TIME_PATTERN,
    INSTANT_OR_NOW_PATTERN,
    INSTANT_PATTERN,
    day_or_time,
)
from service.http.requests import int_param, principal, query_param, read_json
from service.http.routes import Count, Param, Positive, Route

if TYPE_CHECKING:
    from datetime import datetime

    import asyncpg
    from aiohttp import web

LIST_LIMIT: Final = 100  # Unleash's lists show the last 100
SEARCH_LIMIT: Final = 50  # Unleash's default page
MAX_LIMIT: Final = 1000  # and its largest
MAX_QUERY: Final = 1000  # the free-text search's longest text, as the document says
POSITION_DIGITS: Final = 18
MAX_VALUES: Final = 100  # of one filter (IS_ANY_OF)
SECOND_CONNECTION_WAIT: Final = 0.005  # seconds a search waits for a connection to count on
# Unleash's filter syntax: an operator, then comma-separated values.
_FILTER = re.compile(r"^(IS|IS_ANY_OF):(.+)$", re.DOTALL)
_USER_ID = re.compile(r"^-?[0-9]{1,18}$")
# Unleash's free-text `query` reads every event's data: offered within one flag's events (its
# event log tab), the latest this many of them, and refused otherwise (a scan of the whole log).
TEXT_SEARCHED: Final = 10_000


async def list_events(request: web.Request) -> web.Response:
    """The last 100 events, or the last 100 of one project."""
    project = query_param(request, "project")
    found = LogFilter(projects=[_stored_text(project, "project")] if project else None)
    events, total = await _read(request, found, limit=LIST_LIMIT)
    return json_response(EventList(events=events, total_events=total))


async def feature_events(request: web.Request) -> web.Response:
    """The last 100 events of one flag (an unknown name has none)."""
    name = request.match_info["featureName"]
    events, total = await _read(request, LogFilter(features=[name]), limit=LIST_LIMIT)
    return json_response(FeatureEventList(toggle_name=name, events=events, total_events=total))


async def search_events(request: web.Request) -> web.Response:
    """Newest first; `before`/`after` a position page without offsets (`after`: oldest first).
    Principals without ADMIN see only events that belong to a project, as in Unleash."""
    actors = _filter(request, "createdBy")
    if actors is not None and not all(_USER_ID.match(a) for a in actors):
        raise ValidationError("createdBy takes user ids (IS:<id>) - at `createdBy`")
    found = LogFilter(
        kinds=_filter(request, "type"),
        projects=_filter(request, "project"),
        features=_filter(request, "feature"),
        actors=None if actors is None else [int(a) for a in actors],
        with_project=not principal(request).can(auth.ADMIN),
    )
    text = query_param(request, "query") or None
    if text is not None and len(text) > MAX_QUERY:
        raise ValidationError(f"query is at most {MAX_QUERY} characters - at `query`")
    events, total = await _search(
        request,
        found,
        text,
        limit=min(int_param(request, "limit", SEARCH_LIMIT, 1), MAX_LIMIT),
        offset=int_param(request, "offset", 0, 0),
        after=_position(request, "after"),
        before=_position(request, "before"),
        since=_time(request, "from", end=False),
        until=_time(request, "to", end=True),
    )
    return json_response(EventSearchResult(events=events, total=total))


async def search_events_posted(request: web.Request) -> web.Response:
    """Unleash's older search (POST, one value a filter, `totalEvents`): the same search as
    GET /api/admin/search/events, newest first."""
    body = await read_json(request, SearchEvents)
    found = LogFilter(
        kinds=_one(body.type),
        projects=_one(body.project),
        features=_one(body.feature),
        with_project=not principal(request).can(auth.ADMIN),
    )
    events, total = await _search(
        request, found, body.query, limit=body.limit, offset=body.offset, posted=True
    )
    return json_response(EventList(events=events, total_events=total))


def _one(value: str | None) -> list[str] | None:
    return None if value is None else [value]


async def _search(  # noqa: PLR0913 - a search's parts
    request: web.Request,
    found: LogFilter,
    text: str | None,
    *,
    limit: int,
    offset: int,
    posted: bool = False,
    after: int | None = None,
    before: int | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> tuple[list[LogEvent], int]:
    """Both searches: a page of the filter's events and its total. With `text` and one flag,
    the flag's events whose data, preData or tags hold it (the latest TEXT_SEARCHED of them,
    read and matched here); with `text` otherwise, those whose data holds it among the latest
    TEXT_SEARCHED the other filters keep (matched by the database)."""
    if text is not None and len(found.features or []) != 1:
        if after is not None:
            cursor = "`after`" if posted else "after"
            raise ValidationError(
                f"query pages newest first: {cursor} does not take it - at `query`"
            )
        return await _read(
            request,
            found,
            limit=limit,
            offset=offset,
            before=before,
            since=since,
            until=until,
            text=text,
        )
    events, total = await _read(
        request,
        found,
        limit=limit if text is None else TEXT_SEARCHED,
        offset=offset if text is None else 0,
        after=after,
        before=before,
        since=since,
        until=until,
    )
    if text is not None:
        events = [e for e in events if _holds(e, text)]
        events, total = events[offset : offset + limit], len(events)
    return events, total


async def event_creators(request: web.Request) -> web.Response:
    """Everyone who caused an event, by Unleash's user id, with the name the UI shows: read
    through the log's index of authors, one step a distinct author (never the log itself)."""
    async with request.app[POOL].acquire() as conn:
        rows = await logsearch.creators(conn)
    return json_response([EventCreator.from_row(r) for r in rows])


def _holds(event: LogEvent, text: str) -> bool:
    """As Unleash's `query`: the text, in any case, in the event's data (here also its preData
    or tags)."""
    wanted = text.casefold()
    return any(
        wanted in msgspec.json.encode(part).decode().casefold()
        for part in (event.data, event.pre_data, event.tags)
    )


async def _read(  # noqa: PLR0913 - a search's parts
    request: web.Request,
    found: LogFilter,
    *,
    limit: int,
    offset: int = 0,
    after: int | None = None,
    before: int | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    text: str | None = None,
) -> tuple[list[LogEvent], int]:
    """One snapshot: the time range as positions, the page, the total, what the page's streams
    held before its events. The total (an index scan as long as the matches) is counted at
    the same time on a second connection that shares the snapshot."""
    pool = request.app[POOL]
    async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
        if since is not None:
            first = await eventlog.first_at_or_after(conn, since)
            found = _bounded(found, since=await eventlog.head(conn) if first is None else first - 1)
        if until is not None:
            first = await eventlog.first_at_or_after(conn, until)
            if first is not None:
                found = _bounded(found, until=first)
        if text is not None:
            if before is not None:  # the cursor, as a bound like the time range's
                found = _bounded(found, until=min(before, found.until or before))
            hits, matched = await logsearch.search_text(
                conn, found, text, latest=TEXT_SEARCHED, limit=limit, offset=offset
            )
            held = await queries.contexts(conn, hits)
            shown = [log_event(e, held[e.recorded.position]) for e in hits if e.recorded.position]
            return shown, matched
        counting = asyncio.create_task(_count_aside(pool, await snapshot_of(conn), found))
        try:
            page = await logsearch.search(
                conn, found, limit=limit, offset=offset, after=after, before=before
            )
            context = await queries.contexts(conn, page)
        finally:
            total = await counting
        if total is None:  # no second connection free: counted here, after the page
            total = await logsearch.count(conn, found)
    events = [log_event(e, context[e.recorded.position]) for e in page if e.recorded.position]
    return events, total


async def _count_aside(pool: asyncpg.Pool, snapshot: str, found: LogFilter) -> int | None:
    """The total on a second connection, if one is free at once: a search that waited for
    one while holding its first could wait forever, every connection held by such searches."""
    try:
        async with sharing(pool, snapshot, wait=SECOND_CONNECTION_WAIT) as conn:
            return await logsearch.count(conn, found)
    except TimeoutError:
        return None


def _bounded(found: LogFilter, *, since: int | None = None, until: int | None = None) -> LogFilter:
    return LogFilter(
        kinds=found.kinds,
        projects=found.projects,
        features=found.features,
        actors=found.actors,
        with_project=found.with_project,
        since=found.since if since is None else since,
        until=found.until if until is None else until,
    )


def _filter(request: web.Request, name: str) -> list[str] | None:
    """`IS:value` or `IS_ANY_OF:a,b` (Unleash's operators); the values trimmed."""
    raw = query_param(request, name)
    if raw is None or raw == "":
        return None
    match = _FILTER.match(raw)
    values = [v.strip() for v in match[2].split(",")] if match else []
    if not values or not all(values):
        raise ValidationError(f"{name} must be IS:<value> or IS_ANY_OF:<value>,... - at `{name}`")
    if len(values) > MAX_VALUES:
        raise ValidationError(f"{name} takes at most {MAX_VALUES} values - at `{name}`")
    return [_stored_text(value, name) for value in values]


def _stored_text(value: str, name: str) -> str:
    """No stored text holds NUL (PostgreSQL's text cannot): a value with one is a 400."""
    if "\x00" in value:
        raise ValidationError(f"{name} may not contain the NUL character - at `{name}`")
    return value


def _position(request: web.Request, name: str) -> int | None:
    if query_param(request, name) in (None, ""):
        return None
    return int_param(request, name, 0, 0, digits=POSITION_DIGITS)


def _time(request: web.Request, name: str, *, end: bool) -> datetime | None:
    """Unleash's `IS:yyyy-MM-dd` (a whole UTC day, `to` included), or an RFC 3339 time."""
    raw = query_param(request, name)
    if raw is None or raw == "":
        return None
    value = raw.removeprefix("IS:")
    if value == raw:
        raise ValidationError(f"{name} must be IS:yyyy-MM-dd or IS:<RFC 3339 time> - at `{name}`")
    return day_or_time(value, name, end=end)


async def audit_diff(request: web.Request) -> web.Response:
    """What changed between two instants (`from`, and `to` or now), entity by entity; with
    `stream` one entity (`feature/<name>`...), with `project` a project and its flags."""
    start = query_param(request, "from")
    if start is None or start == "":
        raise ValidationError("from is required: an RFC 3339 time or a log position - at `from`")
    end = query_param(request, "to") or None
    stream = query_param(request, "stream") or None
    only = None if stream is None else entity_of_stream(stream)
    async with (
        request.app[POOL].acquire() as conn,
        conn.transaction(isolation="repeatable_read", readonly=True),
    ):
        first = await states.position(conn, start, "from")
        last = await states.position(conn, end, "to")
        if first > last:
            raise ValidationError(f"from ({first}) is after to ({last}) - at `from`")
        changes = await states.changes(
            conn, first, last, only=only, project=query_param(request, "project") or None
        )
        body = AuditDiff(
            start=await states.point(conn, first),
            end=await states.point(conn, last),
            changes=changes,
        )
    return json_response(body)


Position = Annotated[int, msgspec.Meta(ge=0, le=10**POSITION_DIGITS - 1)]
# An empty filter is no filter (as an empty `limit` is the default): the document admits it.
Filter = Annotated[str, msgspec.Meta(pattern=r"^$|" + _FILTER.pattern)]
DayOrTime = Annotated[str, msgspec.Meta(pattern=DAY_OR_TIME_PATTERN)]
PROJECT: Final = Param("project", str, "Only the events of this project")


def _filter_param(name: str, what: str) -> Param:
    return Param(name, Filter, f"{what}: `IS:<value>` or `IS_ANY_OF:<value>,<value>,...`")


SEARCH_PARAMS: Final = (
    _filter_param("type", "Event types"),
    _filter_param("project", "Projects"),
    _filter_param("feature", "Flags"),
    _filter_param("createdBy", "Authors, by user id"),
    Param("from", DayOrTime, "Events from this day on: `IS:yyyy-MM-dd` or `IS:<RFC 3339 time>`"),
    Param(
        "to", DayOrTime, "Events until this day (included): `IS:yyyy-MM-dd` or `IS:<RFC 3339 time>`"
    ),
    Param("limit", Positive, f"At most this many (default {SEARCH_LIMIT}, at most {MAX_LIMIT})"),
    Param("offset", Count, "Skip this many (default 0)"),
    Param("before", Position, "Only events before this log position (a cursor, newest first)"),
    Param("after", Position, "Only events after this log position (a cursor, oldest first)"),
    Param(
        "query",
        Annotated[str, msgspec.Meta(max_length=MAX_QUERY)],
        "Text (any case) in the event's data: with one `feature`, in its latest"
        f" {TEXT_SEARCHED} events' data, preData or tags; otherwise in the data of the latest"
        f" {TEXT_SEARCHED} events the other filters keep",
    ),
)
DIFF_PARAMS: Final = (
    Param(
        "from",
        Annotated[str, msgspec.Meta(pattern=INSTANT_PATTERN)],
        f"The first state: {AS_INSTANT}",
        required=True,
    ),
    Param(
        "to",
        Annotated[str, msgspec.Meta(pattern=INSTANT_OR_NOW_PATTERN)],
        f"The second state (default: now): {AS_INSTANT}",
    ),
    Param("stream", str, "Only this entity: `feature/<name>`, `project/<id>`, `user/<id>`..."),
    Param("project", str, "Only this project and its flags"),
)

ROUTES = [
    Route(
        "GET",
        "/api/admin/events",
        list_events,
        auth.ADMIN,
        ok={200: EventList},
        query=(PROJECT,),
    ),
    Route(
        "GET",
        "/api/admin/events/{featureName:(?!search$)[^/]+}",  # search: a route of its own
        feature_events,
        auth.READ,
        ok={200: FeatureEventList},
    ),
    Route(
        "POST",
        "/api/admin/events/search",
        search_events_posted,
        auth.READ,
        body=SearchEvents,
        ok={200: EventList},
    ),
    Route(
        "GET",
        "/api/admin/event-creators",
        event_creators,
        auth.READ,
        ok={200: list[EventCreator]},
    ),
    Route(
        "GET",
        "/api/admin/search/events",
        search_events,
        auth.READ,
        ok={200: EventSearchResult},
        query=SEARCH_PARAMS,
    ),
    Route(
        "GET",
        "/api/admin/audit/diff",
        audit_diff,
        auth.ADMIN,
        ok={200: AuditDiff},
        query=DIFF_PARAMS,
    ),
]
