"""Delivery from the log: each enabled integration is one more reader of the log, from its own
checkpoint (docs/integrations.md, "Delivery").

- Nothing is sent by a request handler: an integration reads what was committed, so a change
  that rolled back is never delivered. It starts after the event that created it, reads the
  event types it subscribes to in log order, and for each one its projects and environments
  keep, sends one request and waits for the answer before the next (in order, per integration).
- At least once: the checkpoint moves past an event only after its receiver answered it (or it
  was recorded as failed or given up), in the transaction that records the delivery. A process
  that dies between the answer and that commit sends the event again, with the same
  `Unleash-Event-Id` (the event's log position).
- A failure (no connection, a timeout, 408, 429, a 5xx) is tried again after a capped,
  jittered exponential backoff (a 429's or 503's `Retry-After` when it asks for longer), for
  INTEGRATION_GIVE_UP_HOURS; then it is recorded as given up and the integration goes on. Any
  other answer below 200 or from 300 up is recorded as failed and not tried again.
- One replica delivers for an integration at a time: the one holding its advisory lock, taken
  on the connection that listens for appends. When that connection or its process dies, the
  lock goes with it and another replica takes the integration over within a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import random
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, NamedTuple

import aiohttp
import msgspec
import structlog

import eventlog
from eventlog import connections
from eventlog.events.addons import AddonCreated, AddonUpdated
from eventlog.logs import Throttled
from eventlog.notify import Listener, first_set
from service.addons import domain, formats, network, queries, secrets
from service.addons.rendering import Rendering
from service.audit import logsearch
from service.audit import queries as audit_queries
from service.audit.responses import log_event

if TYPE_CHECKING:
    from collections.abc import Sequence

    import asyncpg

    from eventlog.codec import RecordedEvent
    from service.addons.network import Network
    from service.metrics import Metrics
    from service.settings import Settings

log = structlog.get_logger("integrations")

# The integration's advisory locks: pg_try_advisory_lock(LOCK_CLASS, id).
LOCK_CLASS: Final = 1_718_045
CLAIM_SECONDS: Final = 1.0
# At a stop, what is being delivered gets this long to be answered and recorded (the app gives
# each background task two seconds).
STOP_GRACE_SECONDS: Final = 1.5  # how often a replica looks for integrations nobody delivers for
PAGE: Final = 200  # events read from the log at a time
FLUSH_EVERY: Final = 100  # successful deliveries recorded together at most
FLUSH_SECONDS: Final = 0.25  # ... or after this long
BACKOFF_FIRST_SECONDS: Final = 1.0
KEPT_DELIVERIES: Final = 1000  # an integration's newest deliveries kept for its events list
TRIM_EVERY: Final = 500  # deliveries recorded between two trims
ANSWER_SHOWN: Final = 500  # characters of a receiver's answer kept in a delivery's details
RETRIED_STATUSES: Final = frozenset({408, 429})
HTTP_OK, HTTP_REDIRECT, HTTP_SERVER_ERROR = 200, 300, 500
_OURS: Final = frozenset(
    {"unleash-event-id", "flagstore-delivery-attempt", "flagstore-timestamp", "flagstore-signature"}
)

CHECKPOINT_INIT = """
INSERT INTO addon_checkpoints (addon_id, position) VALUES ($1, $2)
ON CONFLICT (addon_id) DO NOTHING
"""
CHECKPOINT = """
SELECT position, attempts, failing_since, next_attempt_at FROM addon_checkpoints
WHERE addon_id = $1
"""
# Compare-and-set: the position moves only from the one this replica read, so a replica that
# lost the integration's lock without noticing yet cannot move it back or past another's.
SAVE = """
UPDATE addon_checkpoints
SET position = $3, attempts = $4, failing_since = $5, next_attempt_at = $6, last_error = $7,
    updated_at = now()
WHERE addon_id = $1 AND position = $2
"""
RECORD = """
INSERT INTO addon_deliveries (addon_id, position, attempt, state, state_details, details)
SELECT $1, * FROM unnest($2::bigint[], $3::integer[], $4::text[], $5::text[], $6::jsonb[])
"""
# What a delivery keeps of the request it made: nothing of a person (a body or a message may
# name one; the event itself is read from the log when shown).
KEPT_DETAILS: Final = ("url", "contentType", "channels", "username")
TRIM = """
DELETE FROM addon_deliveries WHERE addon_id = $1 AND id < (
    SELECT id FROM addon_deliveries WHERE addon_id = $1 ORDER BY id DESC OFFSET $2 LIMIT 1)
"""


class Lost(Exception):
    """This replica no longer holds the integration (another moved its checkpoint)."""


class Timing(NamedTuple):
    """The delivery's clock: real seconds are `scale` simulated ones (tests speed it up)."""

    give_up_seconds: float
    retry_max_seconds: float
    request_timeout_seconds: float
    scale: float

    @classmethod
    def from_settings(cls, settings: Settings) -> Timing:
        return cls(
            give_up_seconds=settings.integration_give_up_hours * 3600,
            retry_max_seconds=settings.integration_retry_max_seconds,
            request_timeout_seconds=settings.integration_request_timeout_seconds,
            scale=settings.integration_time_scale,
        )

    def backoff(self, attempts: int) -> float:
        """Simulated seconds before attempt `attempts + 1`: exponential, capped, with half
        of it jittered so that receivers coming back are not hit by every sender at once."""
        ceiling = min(self.retry_max_seconds, BACKOFF_FIRST_SECONDS * 2.0 ** min(attempts - 1, 30))
        return ceiling * (0.5 + random.random() / 2)  # noqa: S311 - jitter, not a secret


class Change(NamedTuple):
    """One of the integration's own events: where in the log, and whether it was enabled
    from there on."""

    position: int
    enabled: bool


def changes_of(records: Sequence[RecordedEvent]) -> list[Change]:
    """The integration's stream as the ranges of the log in which it was enabled."""
    found = []
    for record in records:
        assert record.position is not None  # a stored event
        event = record.event
        enabled = isinstance(event, AddonCreated | AddonUpdated) and event.enabled
        found.append(Change(record.position, enabled))
    return found


def enabled_at(changes: Sequence[Change], position: int) -> bool:
    """Whether the integration was enabled when the event at `position` was committed (after
    its creation, before its deletion)."""
    enabled = False
    for change in changes:
        if change.position >= position:
            break
        enabled = change.enabled
    return enabled


def signature(secret: str, event_id: int, timestamp: int, body: bytes) -> str:
    """`Flagstore-Signature`: HMAC-SHA256, keyed with the integration's signing secret, of
    `<timestamp>.<event id>.` followed by the body's bytes, as `v1=<hex>`."""
    signed = f"{timestamp}.{event_id}.".encode() + body
    return "v1=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


class Outcome(NamedTuple):
    state: str  # success, successWithErrors, failed
    retry: bool  # a failure worth another attempt
    details: str
    retry_after: float | None = None  # seconds the receiver asked for (429, 503)


def _retry_after(value: str | None) -> float | None:
    if value is None:
        return None
    with contextlib.suppress(ValueError):
        return max(0.0, float(value))
    with contextlib.suppress(TypeError, ValueError, IndexError):
        from email.utils import parsedate_to_datetime  # noqa: PLC0415 - rare

        return max(0.0, (parsedate_to_datetime(value) - datetime.now(UTC)).total_seconds())
    return None


def judge(status: int, answer: str, retry_after: str | None, warnings: list[str]) -> Outcome:
    """What a receiver's answer means for the event."""
    said = f" {answer}" if answer else ""
    if HTTP_OK <= status < HTTP_REDIRECT:
        details = "\n".join([f"The request was successful with status code: {status}.", *warnings])
        return Outcome(
            state="successWithErrors" if warnings else "success", retry=False, details=details
        )
    if status in RETRIED_STATUSES or status >= HTTP_SERVER_ERROR:
        return Outcome(
            state="failed",
            retry=True,
            details=f"The request failed with status code: {status}.{said}",
            retry_after=_retry_after(retry_after),
        )
    if HTTP_REDIRECT <= status < 400:
        return Outcome(
            state="failed",
            retry=False,
            details=f"The receiver answered {status}, a redirect, which is not followed.",
        )
    return Outcome(
        state="failed", retry=False, details=f"The request failed with status code: {status}.{said}"
    )


@dataclass
class _Pending:
    """Deliveries recorded together, with the checkpoint they move to."""

    rows: list[tuple[int, int, str, str, str]] = field(default_factory=list)
    since: float = 0.0


class _Config(NamedTuple):
    addon: domain.Addon
    plain: dict[str, Any]
    signing_secret: str


class _Page(NamedTuple):
    """What follows a position in the log, as one snapshot read it."""

    entries: list[logsearch.LogEntry]
    contexts: dict[int, Any]  # each entry's, by position (audit_queries.contexts)
    addons_at: int  # the last position of any integration's own event


class _Pages:
    """The log read once for couriers that ask for the same page at once: after one append,
    every integration at the same checkpoint reads the same events, in one query."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool
        self.reading: dict[tuple[int, tuple[str, ...]], asyncio.Future[_Page]] = {}

    async def read(self, after: int, kinds: Sequence[str]) -> _Page:
        key = (after, tuple(sorted(kinds)))
        shared = self.reading.get(key)
        if shared is None:
            shared = self.reading[key] = asyncio.ensure_future(self._read(after, key[1]))
            shared.add_done_callback(lambda _done: self.reading.pop(key, None))
        return await asyncio.shield(shared)  # a courier that stops leaves the others' read

    async def _read(self, after: int, kinds: tuple[str, ...]) -> _Page:
        async with (
            self.pool.acquire() as conn,
            conn.transaction(isolation="repeatable_read", readonly=True),
        ):
            entries = await logsearch.search(
                conn, logsearch.LogFilter(kinds=list(kinds)), limit=PAGE, after=after
            )
            addons_at = await eventlog.last_position_of(conn, [domain.STREAM_TYPE])
            contexts = await audit_queries.contexts(conn, entries) if entries else {}
        return _Page(entries, contexts, addons_at)


class Deliveries:
    """Every integration this replica delivers for, each in a task of its own."""

    def __init__(
        self, pool: asyncpg.Pool, dsn: str, settings: Settings, metrics: Metrics | None = None
    ) -> None:
        self.pool = pool
        self.dsn = dsn
        self.timing = Timing.from_settings(settings)
        self.allowed: tuple[Network, ...] = network.parse_allowed(
            settings.integration_allowed_networks
        )
        self.unleash_url = settings.unleash_url.rstrip("/")
        self.metrics = metrics
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.wakes: dict[int, asyncio.Event] = {}
        self.stopping = asyncio.Event()
        self.rendering = Rendering()
        self.pages = _Pages(pool)

    async def run(self, stop: asyncio.Event) -> None:
        wake = asyncio.Event()
        listener = Listener(self.dsn, wake)
        try:
            claimed = 0.0
            while not stop.is_set():
                wake.clear()
                if not listener.open:
                    await self._drop_all()  # the locks went with the connection
                    await listener.reopen()
                    claimed = 0.0
                # An append wakes the couriers at once; who holds what is looked at once a
                # second at most (appends come far more often).
                due = time.monotonic() - claimed >= CLAIM_SECONDS
                if due and listener.open and listener.conn is not None:
                    claimed = time.monotonic()
                    try:
                        await self._claim(listener.conn)
                    except Exception as exc:
                        if not connections.is_unavailable(exc):
                            log.exception("integration_claim_failed")
                        else:
                            _unavailable.warning(error=type(exc).__name__)
                for event in self.wakes.values():
                    event.set()
                next_claim = max(0.01, CLAIM_SECONDS - (time.monotonic() - claimed))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(first_set(wake, stop), next_claim)
        finally:
            self.stopping.set()
            for event in self.wakes.values():
                event.set()
            await self._drop_all(grace=STOP_GRACE_SECONDS)
            self.rendering.close()
            await listener.close()

    async def _claim(self, conn: asyncpg.Connection) -> None:
        """Take the enabled integrations nobody delivers for; let go of the others."""
        enabled = {r["id"] for r in await self.pool.fetch(queries.ENABLED_ADDON_IDS)}
        for addon_id, task in list(self.tasks.items()):
            if task.done() or addon_id not in enabled:
                await self._drop(addon_id)
                await conn.execute(
                    "SELECT pg_advisory_unlock($1, $2::integer)", LOCK_CLASS, addon_id
                )
        for addon_id in sorted(enabled - set(self.tasks)):
            if await conn.fetchval(
                "SELECT pg_try_advisory_lock($1, $2::integer)", LOCK_CLASS, addon_id
            ):
                self.wakes[addon_id] = asyncio.Event()
                self.tasks[addon_id] = asyncio.create_task(self._deliver(addon_id))

    async def _drop(self, addon_id: int) -> None:
        await self._drop_all([addon_id])

    async def _drop_all(self, addon_ids: list[int] | None = None, grace: float = 0.0) -> None:
        """Stop delivering for these integrations (all): each finishes the request it is in
        and records what it delivered if it can within `grace` seconds, together."""
        tasks = [self.tasks.pop(i) for i in (list(self.tasks) if addon_ids is None else addon_ids)]
        for addon_id in addon_ids or []:
            self.wakes.pop(addon_id, None)
        if addon_ids is None:
            self.wakes.clear()
        running = [t for t in tasks if not t.done()]
        if running and grace > 0:
            await asyncio.wait(running, timeout=grace)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    # One integration

    async def _deliver(self, addon_id: int) -> None:
        timeout = aiohttp.ClientTimeout(total=self.timing.request_timeout_seconds)
        try:
            async with network.client_session(self.allowed, timeout=timeout) as session:
                await _Courier(self, addon_id, session).run()
        except Lost:
            log.info("integration_lost", addon_id=addon_id)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if connections.is_unavailable(exc):
                _unavailable.warning(error=type(exc).__name__)
            else:
                log.exception("integration_delivery_failed", addon_id=addon_id)
            # the supervisor lets go of the integration and takes it again at the next claim


class _Courier:
    """Delivers one integration's events in order, as long as this replica holds it."""

    def __init__(self, owner: Deliveries, addon_id: int, session: aiohttp.ClientSession) -> None:
        self.owner = owner
        self.addon_id = addon_id
        self.session = session
        self.timing = owner.timing
        self.pending = _Pending()
        self.position = 0  # the checkpoint as stored
        self.dealt = 0  # the last position dealt with (stored at the next flush)
        self.recorded = 0
        self.secrets: list[str] = []  # the plain values of its secrets, masked in what is kept
        self.retrying = False  # a failed attempt waits for its next one
        self.config_at = 0  # the last of its own events when its configuration was read
        self.changed = False  # one of its own events came since
        self.changes: list[Change] = []  # its own events, as enabled ranges of the log
        self.addons_at = -1  # any integration's last event when `changes` was read

    async def run(self) -> None:
        pool = self.owner.pool
        async with pool.acquire() as conn:
            changes = changes_of(await eventlog.read_stream(conn, domain.stream(self.addon_id)))
        if not changes:
            return
        self.changes = changes
        # Deliveries start after the event that created the integration.
        await pool.execute(CHECKPOINT_INIT, self.addon_id, changes[0].position)
        wake = self.owner.wakes[self.addon_id]
        config: _Config | None = None
        stored = True  # the checkpoint row may say more than this courier knows: read it
        attempts, failing_since = 0, None
        while not self.owner.stopping.is_set():
            if config is None or self.changed:
                # Read again only after one of the integration's own events (each page looks).
                config = await self._config()
                if config is None or not config.addon.enabled:
                    break
            if stored or self.retrying:
                read = await self._checkpoint(wake)
                if read is None:
                    break
                attempts, failing_since = read
                stored = False
            wake.clear()
            self.retrying = False
            more = await self._page(config, attempts, failing_since)
            attempts, failing_since = 0, None
            if self.retrying:
                continue  # a retry waits for its time, above
            if not more:
                await self._idle(wake)
            if self._full():
                await self._flush()
        with contextlib.suppress(Lost):  # deleted meanwhile: its checkpoint went with it
            await self._flush()

    async def _checkpoint(self, wake: asyncio.Event) -> tuple[int, datetime | None] | None:
        """The stored checkpoint, once its next attempt is due (or the process stops): its
        failed attempts so far and since when; None once it is gone (the integration was
        deleted)."""
        while True:
            row = await self.owner.pool.fetchrow(CHECKPOINT, self.addon_id)
            if row is None:
                return None
            self.position = self.dealt = row["position"]
            due = row["next_attempt_at"]
            wait = 0.0 if due is None else (due - datetime.now(UTC)).total_seconds()
            if wait <= 0 or self.owner.stopping.is_set():
                return row["attempts"], row["failing_since"]
            wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.owner.stopping.wait(), wait)

    async def _idle(self, wake: asyncio.Event) -> None:
        """Until an append wakes it, or the pending deliveries are due to be recorded: by their
        number, or FLUSH_SECONDS after the first."""
        idle = CLAIM_SECONDS * 5
        if self.pending.rows:
            idle = max(0.0, FLUSH_SECONDS - (time.monotonic() - self.pending.since))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(first_set(wake, self.owner.stopping), idle)

    async def _config(self) -> _Config | None:
        async with (
            self.owner.pool.acquire() as conn,
            conn.transaction(isolation="repeatable_read", readonly=True),
        ):
            row = await conn.fetchrow(queries.GET_ADDON, self.addon_id)
            if row is None:
                return None
            key = await secrets.key_of(conn, self.addon_id)
            own = await eventlog.last_position(conn, (domain.STREAM_TYPE, str(self.addon_id)))
            self.config_at = own or 0
            self.changed = False
        addon = domain.Addon.from_row(row)
        opened = secrets.opened(key, self.addon_id, addon.sealed)
        if domain.SIGNING_SECRET not in opened:
            return None  # deleted: its key is gone
        signing = opened.pop(domain.SIGNING_SECRET)
        self.secrets = sorted((v for v in opened.values() if v), key=len, reverse=True)
        plain: dict[str, Any] = {**addon.parameters, **opened}
        return _Config(addon, plain, signing)

    async def _page(self, config: _Config, attempts: int, failing_since: datetime | None) -> bool:
        """Deliver the next page of events; False when there was nothing to deliver (or a
        failure waits for its next attempt)."""
        addon = config.addon
        kinds = addon.events
        if not kinds:
            self.changed = True  # nothing to read: its configuration is what may change
            return False
        page = await self.owner.pages.read(self.dealt, kinds)
        if page.addons_at != self.addons_at:
            # An integration changed (this one, maybe) since its own events were read: read
            # them again, after the page's snapshot, so that they cover every event in it.
            async with self.owner.pool.acquire() as conn:
                own = await eventlog.read_stream(conn, domain.stream(self.addon_id))
            self.changes, self.addons_at = changes_of(own), page.addons_at
            self.changed = bool(self.changes) and self.changes[-1].position != self.config_at
        entries, contexts, changes = page.entries, page.contexts, self.changes
        if not entries:
            return False
        for entry in entries:
            if self.owner.stopping.is_set():
                break  # the stop waits a second, not for the page: what was answered is saved
            position = entry.recorded.position
            assert position is not None  # a stored event
            shown = log_event(entry, contexts[position])
            if not (
                enabled_at(changes, position) and _kept(addon, shown.project, shown.environment)
            ):
                self.dealt = position
                continue
            event = msgspec.to_builtins(shown)
            attempt = attempts + 1
            outgoing, outcome = await self._send(config, position, event, attempt)
            recorded_at = entry.recorded.recorded_at
            if outcome.state != "failed":
                self._metric(addon.provider, "success", recorded_at)
                self._add(position, attempt, outcome, outgoing)
                attempts, failing_since = 0, None
                self.dealt = position
                if self._full():
                    await self._flush()
                continue
            await self._flush()
            waits = await self._failed(
                provider=addon.provider,
                position=position,
                attempt=attempt,
                outcome=outcome,
                outgoing=outgoing,
                failing_since=failing_since,
            )
            if waits:
                return False
            attempts, failing_since = 0, None
        return True

    async def _failed(  # noqa: PLR0913 - a failed attempt's parts
        self,
        *,
        provider: str,
        position: int,
        attempt: int,
        outcome: Outcome,
        outgoing: formats.Outgoing | None,
        failing_since: datetime | None,
    ) -> bool:
        """Record a failed attempt: True when the event waits for another attempt, False when
        it is done with (refused, or given up) and the checkpoint moved past it."""
        now = datetime.now(UTC)
        failing_since = failing_since or now
        failing = (now - failing_since).total_seconds() * self.timing.scale
        if outcome.retry and failing < self.timing.give_up_seconds:
            delay = max(self.timing.backoff(attempt), outcome.retry_after or 0.0)
            delay = min(delay, self.timing.give_up_seconds)
            details = f"{outcome.details} Attempt {attempt}; the next in {delay:.0f} s."
            self._metric(provider, "retried")
            self._add(position, attempt, outcome._replace(details=details), outgoing)
            await self._flush(
                attempts=attempt,
                failing_since=failing_since,
                next_at=now + timedelta(seconds=delay / self.timing.scale),
                error=outcome.details,
            )
            self.retrying = True
            return True
        if outcome.retry:
            details = (
                f"Given up after {attempt} attempts over {failing / 3600:.1f} hours. "
                f"The last: {outcome.details}"
            )
            self._metric(provider, "given_up")
            log.warning("integration_gave_up", addon_id=self.addon_id, position=position)
        else:
            details = outcome.details
            self._metric(provider, "failed")
        self._add(position, attempt, outcome._replace(details=details), outgoing)
        self.dealt = position
        await self._flush()
        return False

    async def _send(
        self, config: _Config, position: int, event: dict[str, Any], attempt: int
    ) -> tuple[formats.Outgoing | None, Outcome]:
        try:
            outgoing = await self.owner.rendering.render(
                config.addon.provider, config.plain, event, unleash_url=self.owner.unleash_url
            )
        except Exception as exc:  # a parameter the provider cannot use
            return None, Outcome(
                state="failed", retry=False, details=f"The request could not be made: {exc}"
            )
        timestamp = int(time.time())
        # Ours win over a custom header of the same name, in any case.
        headers = {k: v for k, v in outgoing.headers.items() if k.lower() not in _OURS}
        headers |= {
            "Unleash-Event-Id": str(position),
            "Flagstore-Delivery-Attempt": str(attempt),
            "Flagstore-Timestamp": str(timestamp),
            "Flagstore-Signature": signature(
                config.signing_secret, position, timestamp, outgoing.body
            ),
        }
        try:
            async with self.session.post(
                outgoing.url, data=outgoing.body, headers=headers, allow_redirects=False
            ) as response:
                answer = (await response.content.read(ANSWER_SHOWN)).decode("utf-8", "replace")
                return outgoing, judge(
                    response.status,
                    answer.strip(),
                    response.headers.get("Retry-After"),
                    outgoing.warnings,
                )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            refused = network.refused_cause(exc)
            if refused is not None:
                return outgoing, Outcome(state="failed", retry=False, details=str(refused))
            if isinstance(exc, TimeoutError):
                return outgoing, Outcome(
                    state="failed",
                    retry=True,
                    details=f"No answer within {self.timing.request_timeout_seconds:g} s.",
                )
            if isinstance(exc, aiohttp.ClientError | OSError):
                return outgoing, Outcome(
                    state="failed",
                    retry=True,
                    details=f"The request failed: {type(exc).__name__}: {exc}",
                )
            return outgoing, Outcome(
                state="failed", retry=False, details=f"The request could not be made: {exc}"
            )

    def _metric(self, provider: str, outcome: str, recorded_at: datetime | None = None) -> None:
        if self.owner.metrics is None:
            return
        lag = None if recorded_at is None else (datetime.now(UTC) - recorded_at).total_seconds()
        self.owner.metrics.delivered(provider, outcome, lag)

    def _add(
        self,
        position: int,
        attempt: int,
        outcome: Outcome,
        outgoing: formats.Outgoing | None,
    ) -> None:
        details: dict[str, Any] = {}
        if outgoing is not None:
            kept = {k: v for k, v in outgoing.details.items() if k in KEPT_DETAILS}
            details = _masked(kept, self.secrets) | {"bodyBytes": len(outgoing.body)}
        details |= {"eventId": position, "attempt": attempt}
        if not self.pending.rows:
            self.pending.since = time.monotonic()
        self.pending.rows.append(
            (
                position,
                attempt,
                outcome.state,
                _masked(outcome.details, self.secrets),
                msgspec.json.encode(details).decode(),
            )
        )

    def _full(self) -> bool:
        rows = self.pending.rows
        return len(rows) >= FLUSH_EVERY or (
            bool(rows) and time.monotonic() - self.pending.since >= FLUSH_SECONDS
        )

    async def _flush(
        self,
        *,
        attempts: int = 0,
        failing_since: datetime | None = None,
        next_at: datetime | None = None,
        error: str | None = None,
    ) -> None:
        """Record the pending deliveries and move the checkpoint, in one transaction."""
        rows = self.pending.rows
        if not rows and self.dealt == self.position and attempts == 0:
            return
        async with self.owner.pool.acquire() as conn, conn.transaction():
            saved = await conn.execute(
                SAVE,
                self.addon_id,
                self.position,
                self.dealt,
                attempts,
                failing_since,
                next_at,
                error,
            )
            if saved != "UPDATE 1":
                raise Lost
            if rows:
                columns = list(zip(*rows, strict=True))
                await conn.execute(RECORD, self.addon_id, *map(list, columns))
                self.recorded += len(rows)
                if self.recorded >= TRIM_EVERY:
                    await conn.execute(TRIM, self.addon_id, KEPT_DELIVERIES)
                    self.recorded = 0
        self.position = self.dealt
        self.pending = _Pending()


def _masked(value: Any, secrets: list[str]) -> Any:
    """What is kept of a request (its events list shows it): every secret's value, wherever it
    occurs (the webhook's URL is one), as `*****`."""
    match value:
        case str():
            for secret in secrets:
                value = value.replace(secret, domain.MASK)
            return value
        case dict():
            return {k: _masked(v, secrets) for k, v in value.items()}
        case list():
            return [_masked(v, secrets) for v in value]
    return value


def _kept(addon: domain.Addon, project: str | None, environment: str | None) -> bool:
    """Unleash's filters: an event without a project (or environment) passes either filter."""
    if project is not None and addon.projects and project not in addon.projects:
        return False
    return environment is None or not addon.environments or environment in addon.environments


_unavailable = Throttled("integration_database_unavailable", every=10.0)
