"""The client API's model kept current: loaded from the read models at start, then after every
commit that concerns flags (woken by the log's NOTIFY, the one the async projections follow,
and at once by this process's own commits), reading again only the flags whose streams moved.
Each change is pushed to the streaming subscribers as Unleash's delta events; a short history
of changes lets a reconnecting client resume from its Last-Event-ID."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import gzip
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import msgspec
import structlog

import eventlog
from eventlog import connections
from eventlog.logs import Throttled
from eventlog.notify import RELISTEN_POLL_SECONDS, Listener, first_set
from service.client import model as m
from service.client import queries
from service.client.responses import (
    Delta,
    DeltaEvent,
    FeatureRemoved,
    FeatureUpdated,
    Hydration,
    SegmentRemoved,
    SegmentUpdated,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    import asyncpg

    from eventlog.connections import Conn

log = structlog.get_logger()

# Streams whose events change what SDKs see. A flag's or a segment's are read again alone;
# a project's or an environment's (rare) make the whole model be read again.
FLAG_STREAM = "feature"
SEGMENT_STREAM = "segment"
WHOLE_STREAMS = frozenset({"project", "environment"})
RELEVANT = frozenset({FLAG_STREAM, SEGMENT_STREAM}) | WHOLE_STREAMS
# Past this many new events or changed flags, reading everything is the cheaper way.
MOST_EVENTS = 20_000
MOST_FLAGS = 500
POLL_SECONDS = 5.0  # besides NOTIFY, in case one was lost
HISTORY = 5_000  # changes kept for clients that resume (Last-Event-ID)
BODIES = 128  # encoded answers kept per revision (scopes x encodings)
FRESH_SECONDS = 2.0  # how long a request waits for this process's own commit to show
_unavailable = Throttled("client_feed_database_unavailable", every=10.0)


@dataclass(frozen=True, slots=True)
class Change:
    """One step of the model: at `revision`, these flags changed (with the project each was
    in before: a client that saw it there must hear of its removal) and these segments; or
    everything (`whole`: read again in full)."""

    revision: int
    flags: Mapping[str, str | None]
    segments: frozenset[int]
    whole: bool = False


@dataclass(eq=False)
class Subscriber:
    """One streaming client: its scope, and the encoded messages waiting for it."""

    scope: m.Scope
    queue: asyncio.Queue[bytes] = field(default_factory=asyncio.Queue)


class Feed:
    def __init__(
        self,
        pool: asyncpg.Pool,
        dsn: str,
        watchers: Mapping[str, list[Callable[[], None]]] | None = None,
    ) -> None:
        self.pool = pool
        self.dsn = dsn
        # Stream type -> told when the log shows an event of such a stream (appkeys.Commits)
        self.watchers = {} if watchers is None else watchers
        self.model: m.Model = m.EMPTY
        self.ready = asyncio.Event()
        self.wake = asyncio.Event()
        self.moved = asyncio.Condition()
        self.history: collections.deque[Change] = collections.deque(maxlen=HISTORY)
        self.subscribers: set[Subscriber] = set()
        self._bodies: dict[tuple[m.Scope, bool], bytes] = {}
        self._bodies_revision = -1

    # --- kept current ---------------------------------------------------------------------

    def committed(self, position: int) -> None:
        """This process committed up to `position`: look now, before the NOTIFY comes."""
        if position > self.model.head:
            self.wake.set()

    async def run(self, stop: asyncio.Event) -> None:
        listener = Listener(self.dsn, self.wake)
        try:
            while not stop.is_set():
                self.wake.clear()
                if not listener.open:
                    await listener.reopen()
                failed = False
                try:
                    await self.refresh()
                except Exception as exc:  # keep following; the next wake-up or poll retries
                    failed = True
                    if connections.is_unavailable(exc):
                        _unavailable.warning(error=type(exc).__name__)
                    else:
                        log.exception("client_feed_failed")
                quick = failed or not listener.open
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(
                        first_set(self.wake, stop), RELISTEN_POLL_SECONDS if quick else POLL_SECONDS
                    )
        finally:
            await listener.close()
            for subscriber in self.subscribers:
                subscriber.queue.put_nowait(b"")  # each stream ends

    async def refresh(self) -> None:
        """Read what changed since the model's head, in one snapshot of the database."""
        old = self.model
        moved: set[str] = set()  # the types of the streams that moved
        async with (
            self.pool.acquire() as conn,
            conn.transaction(isolation="repeatable_read", readonly=True),
        ):
            head = await eventlog.head(conn)
            if head == old.head:
                return
            found = await _changes(conn, old, head, moved)
            if found is None:
                new = await _load_all(conn, head)
                step = Change(new.revision, {}, frozenset(), whole=True)
            elif found.flags or found.segments:
                names = list(found.flags)
                rows = await _rows(conn, names, with_segments=bool(found.segments))
                read = m.flags_from(rows)
                new = m.updated(
                    old,
                    head,
                    found.revision,
                    {name: read.get(name) for name in names},
                    m.segments_from(rows.segments) if found.segments else None,
                )
                before = {n: (f.project if (f := old.flags.get(n)) else None) for n in names}
                step = Change(found.revision, before, frozenset(found.segments))
            else:  # nothing SDKs see: the same revision, read further
                new, step = dataclasses.replace(old, head=head), None
        self.model = new
        for stream_type, watchers in self.watchers.items():
            if found is None or stream_type in moved:  # None: not every change was looked at
                for watcher in watchers:
                    watcher()
        if step is not None:
            self.history.append(step)
            if not self.ready.is_set():
                self.ready.set()
            elif self.subscribers:
                self._publish(old, new, step)
        await self._moved()

    async def _moved(self) -> None:
        async with self.moved:
            self.moved.notify_all()

    async def fresh(self, position: int) -> m.Model:
        """The model once it shows `position` (this process's last commit; read your own
        writes), waiting at most FRESH_SECONDS; before the first load, until it is loaded."""
        if not self.ready.is_set():
            await asyncio.wait_for(self.ready.wait(), FRESH_SECONDS * 5)
        if self.model.head >= position:
            return self.model
        self.wake.set()
        async with self.moved:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self.moved.wait_for(lambda: self.model.head >= position), FRESH_SECONDS
                )
        return self.model

    # --- answers ----------------------------------------------------------------------------

    def body(self, model: m.Model, scope: m.Scope, *, gzipped: bool) -> bytes:
        """GET /api/client/features for a scope, encoded once per revision (and gzipped once
        for the clients that take it)."""
        if self._bodies_revision != model.revision:
            self._bodies.clear()
            self._bodies_revision = model.revision
        key = (scope, gzipped)
        found = self._bodies.get(key)
        if found is None:
            if gzipped:
                found = gzip.compress(self.body(model, scope, gzipped=False), 6)
            else:
                found = msgspec.json.encode(model.features(scope))
            if len(self._bodies) >= BODIES:
                self._bodies.pop(next(iter(self._bodies)))
            self._bodies[key] = found
        return found

    # --- streaming --------------------------------------------------------------------------

    def subscribe(self, scope: m.Scope, last_event_id: int | None) -> tuple[Subscriber, bytes]:
        """A new streaming client and its first message (`unleash-connected`): everything, or,
        when it names an event id this process can resume from, what changed since."""
        subscriber = Subscriber(scope)
        self.subscribers.add(subscriber)
        model = self.model
        events = self.since(model, scope, last_event_id)
        return subscriber, message("unleash-connected", model.revision, events)

    def unsubscribe(self, subscriber: Subscriber) -> None:
        self.subscribers.discard(subscriber)

    def since(self, model: m.Model, scope: m.Scope, last_event_id: int | None) -> list[DeltaEvent]:
        """What a client that saw `last_event_id` lacks: nothing, the changes since (when the
        history reaches back that far, with no whole reload between), or everything."""
        if last_event_id is None or last_event_id > model.revision:
            return [_hydration(model, scope)]
        if last_event_id == model.revision:
            return []
        if not any(c.revision <= last_event_id for c in self.history):
            return [_hydration(model, scope)]
        flags: dict[str, str | None] = {}
        segments: set[int] = set()
        for step in self.history:
            if step.revision <= last_event_id:
                continue
            if step.whole:
                return [_hydration(model, scope)]
            for name, project in step.flags.items():
                flags[name] = flags.pop(name, project)  # its first project, its last place
            segments |= step.segments
        return _delta(model, scope, flags, segments)

    def _publish(self, old: m.Model, new: m.Model, step: Change) -> None:
        encoded: dict[m.Scope, bytes | None] = {}
        for subscriber in self.subscribers:
            scope = subscriber.scope
            if scope not in encoded:
                if step.whole:
                    events: list[DeltaEvent] = [_hydration(new, scope)]
                else:
                    events = _delta(new, scope, step.flags, set(step.segments), old)
                encoded[scope] = (
                    message("unleash-updated", new.revision, events) if events else None
                )
            data = encoded[scope]
            if data is not None:
                subscriber.queue.put_nowait(data)


@dataclass(slots=True)
class _Found:
    revision: int
    flags: dict[str, int] = field(default_factory=dict)  # name -> position of its last change
    segments: set[int] = field(default_factory=set)


async def _changes(conn: Conn, old: m.Model, head: int, moved: set[str]) -> _Found | None:
    """The flags and segments whose streams moved after the model's head, in the order of
    their last change; None when the whole model is to be read again. `moved` gets the types
    of the streams that moved (not all of them when the answer is None)."""
    if old.head < 0 or head < old.head or head - old.head > MOST_EVENTS:
        return None
    found = _Found(old.revision)
    for change in await eventlog.changed_streams(conn, old.head, head):
        moved.add(change.stream_type)
        if change.stream_type not in RELEVANT:
            continue
        if change.stream_type in WHOLE_STREAMS:
            return None
        found.revision = change.position
        if change.stream_type == FLAG_STREAM:
            found.flags.pop(change.stream_key, None)
            found.flags[change.stream_key] = change.position
        else:
            found.segments.add(int(change.stream_key))
    return None if len(found.flags) > MOST_FLAGS else found


def _hydration(model: m.Model, scope: m.Scope) -> Hydration:
    streamed = dataclasses.replace(scope, inline_segments=False)
    features = [model.feature(flag, streamed) for flag in model.visible(streamed)]
    return Hydration(
        event_id=model.revision, features=features, segments=model.used_segments(features)
    )


def _delta(
    model: m.Model,
    scope: m.Scope,
    flags: Mapping[str, str | None],
    segments: set[int],
    old: m.Model | None = None,
) -> list[DeltaEvent]:
    """Unleash's delta events for these changed flags and segments, as the scope sees them:
    a flag it sees now is updated (unless it is the same for it: another environment's
    change), one it saw before (in a project it sees) is removed; a changed segment is sent
    when its flags use it, and every segment an updated flag uses goes before that flag."""
    scope = dataclasses.replace(scope, inline_segments=False)
    changes: list[DeltaEvent] = []
    needed: set[int] = set()
    for name, project_before in flags.items():
        flag = model.flags.get(name)
        before = old.flags.get(name) if old is not None else None
        if flag is not None and scope.shows(flag):
            feature = model.feature(flag, scope)
            if (
                old is not None
                and before is not None
                and scope.shows(before)
                and old.feature(before, scope) == feature
            ):
                continue  # the same for this scope: another environment changed
            needed.update(i for s in feature.strategies for i in s.segments or ())
            changes.append(FeatureUpdated(event_id=model.revision, feature=feature))
            continue
        was_seen = (
            scope.shows(before)
            if before is not None
            else project_before is not None
            and (scope.projects is None or project_before in scope.projects)
        )
        if was_seen:
            project = before.project if before is not None else project_before
            assert project is not None
            changes.append(
                FeatureRemoved(event_id=model.revision, feature_name=name, project=project)
            )
    return _segment_events(model, scope, segments, needed) + changes


def _segment_events(
    model: m.Model, scope: m.Scope, changed: set[int], needed: set[int]
) -> list[DeltaEvent]:
    """The changed segments the scope's flags use (or removed), and those `needed`."""
    if changed:
        visible = (model.feature(flag, scope) for flag in model.visible(scope))
        needed = needed | {s.id for s in model.used_segments(visible) if s.id in changed}
    events: list[DeltaEvent] = []
    for segment_id in sorted(changed | needed):
        segment = model.segments.get(segment_id)
        if segment is None:
            if segment_id in changed:
                events.append(SegmentRemoved(event_id=model.revision, segment_id=segment_id))
        elif segment_id in needed:
            events.append(SegmentUpdated(event_id=model.revision, segment=segment))
    return events


def message(kind: str, revision: int, events: list[DeltaEvent]) -> bytes:
    """One server-sent event: its name, its id (the revision: a reconnect resumes there)."""
    data = msgspec.json.encode(Delta(events=events))
    return b"event: %s\nid: %d\ndata: %s\n\n" % (kind.encode(), revision, data)


async def _rows(conn: Conn, names: list[str] | None, *, with_segments: bool) -> m.Rows:
    return m.Rows(
        features=await conn.fetch(queries.FEATURES, names),
        environments=await conn.fetch(queries.ENVIRONMENTS, names),
        strategies=await conn.fetch(queries.STRATEGIES, names),
        tags=await conn.fetch(queries.TAGS, names),
        dependencies=await conn.fetch(queries.DEPENDENCIES, names),
        segments=await conn.fetch(queries.SEGMENTS) if with_segments else [],
        project_environments=await conn.fetch(queries.PROJECT_ENVIRONMENTS)
        if names is None
        else (),
    )


async def _load_all(conn: Conn, head: int) -> m.Model:
    rows = await _rows(conn, None, with_segments=True)
    revision = await eventlog.last_position_of(conn, sorted(RELEVANT))
    return m.Model(
        head=head,
        revision=revision,
        flags=dict(sorted(m.flags_from(rows).items())),
        segments=m.segments_from(rows.segments),
        project_environments=m.project_environments_from(rows.project_environments),
    )
