"""The unit of work: the one way a command writes. `async with work.begin(conn) as uow` opens its
transaction; inside it the command loads under locks (`uow.conn`), decides, and appends
(`uow.append`, `uow.append_new`; `uow.savepoint()` for a part that may fail alone). Leaving
the block commits: the appends' global sections go with the COMMIT in one message (the log's
head lock is held for them and the commit alone), and once it succeeded, what must follow a
commit runs from one ordered list (`AfterCommit`). An exception rolls everything back and
runs nothing.

Concurrency model (docs/architecture.md): what a command changes is locked in the read models
(`SELECT ... FOR UPDATE`) before its state is read, so commands on one thing run one after
another and each decides on what the previous one committed. What a command creates is guarded
by unique constraints: a new stream's key (`streams`), and the read models' unique indexes.
Stream versions only number events; appends do not compare them. A refused constraint becomes
the domain error it means here, in one place (`_refusal`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Self

import asyncpg

import eventlog
from eventlog import appends
from service.errors import AppError, Conflict, NameExists

if TYPE_CHECKING:
    import uuid
    from collections.abc import AsyncIterator
    from types import TracebackType

    from eventlog.codec import DomainEvent, RecordedEvent
    from eventlog.connections import Conn
    from eventlog.events.base import Metadata

# One new stream of `append_new`.
NewStream = appends.NewStream

# A new stream whose key is taken: the stream type -> what is taken.
TAKEN_STREAMS: Final[dict[str, tuple[type[AppError], str]]] = {
    "feature": (NameExists, "A flag with that name already exists"),
    "project": (NameExists, "A project with that id already exists"),
    "environment": (NameExists, "An environment with that name already exists"),
}
# A unique constraint of a read model that refused an inline projection's write, and the type
# of the stream that was written: what is taken. (A decision checks these first and answers the
# same status with a message naming the value; this table answers when a concurrent command
# took the value between that check and the append.)
UNIQUE_CONSTRAINTS: Final[dict[tuple[str, str], tuple[type[AppError], str]]] = {
    ("segments_name_key", "segment"): (NameExists, "A segment with that name already exists"),
    ("users_email_key", "user"): (NameExists, "User already exists"),
    ("users_username_key", "user"): (NameExists, "User already exists"),
    ("users_username_key", "service-account"): (
        NameExists,
        "A user or service account with that username exists",
    ),
    # import-users: a batch's e-mail or username taken meanwhile (the importer tries again).
    ("users_email_key", "user-batch"): (NameExists, "User already exists"),
    ("users_username_key", "user-batch"): (NameExists, "User already exists"),
}


@dataclass(frozen=True, slots=True)
class Appended:
    """One append of a committed transaction: its events' types, in order, how long it took
    (with its share of the global sections and the COMMIT), the log position of its last event
    (0 when nobody asked for it: `AfterCommit.add`), and its stream's type."""

    types: tuple[str, ...]
    seconds: float
    position: int = 0
    stream_type: str = ""


@dataclass(frozen=True, slots=True)
class Committed:
    """What one transaction committed, in order."""

    appends: tuple[Appended, ...]

    @property
    def position(self) -> int:
        return max((a.position for a in self.appends), default=0)

    @property
    def stream_types(self) -> frozenset[str]:
        return frozenset(a.stream_type for a in self.appends)


Hook = Callable[[Committed], None]


@dataclass
class AfterCommit:
    """What runs once a transaction has committed, in the order added (the wiring adds the
    metrics, the cache of API tokens and the client API's feed), each before the request that
    committed is answered. `position` is the highest log position this process has committed
    (the client API reads at least that far: an SDK sees a change the moment it is answered)."""

    hooks: list[Hook] = field(default_factory=list)
    position: int = 0
    # The stream types whose commits' positions a hook waits for: a transaction that appended
    # to none of them does not read its positions back (a round trip saved; position 0).
    positioned: set[str] = field(default_factory=set)

    def add(self, hook: Hook, *, positions_of: Collection[str] = ()) -> None:
        self.hooks.append(hook)
        self.positioned.update(positions_of)

    def wants_positions(self, stream_types: Collection[str]) -> bool:
        return any(t in self.positioned for t in stream_types)

    def run(self, committed: Committed) -> None:
        self.position = max(self.position, committed.position)
        for hook in self.hooks:
            hook(committed)


class Work:
    """Begins units of work with what every one of them needs: the inline projections (which
    the wiring hands over: the service does not import them) and the after-commit list."""

    def __init__(self, inline: appends.InlineApply, after: AfterCommit | None = None) -> None:
        self.inline = inline
        self.after = AfterCommit() if after is None else after

    def begin(self, conn: Conn) -> UnitOfWork:
        """A unit of work on this connection (not in a transaction yet)."""
        return UnitOfWork(conn, self)

    @contextlib.asynccontextmanager
    async def on(self, pool: asyncpg.Pool) -> AsyncIterator[UnitOfWork]:
        """A unit of work on a connection of the pool, given back once it ended."""
        async with pool.acquire() as conn, self.begin(conn) as uow:
            yield uow


class UnitOfWork:
    """One transaction of one command (or of one batch of commands): see the module's text.
    It is used once, inside `async with`: an append outside would write the stream and the
    read models but leave its events for a COMMIT that never sends them. The connection's own
    `transaction()` cannot be used inside (asyncpg refuses it in a transaction it did not
    begin); `savepoint()` is the way to nest."""

    def __init__(self, conn: Conn, work: Work) -> None:
        self.conn = conn
        self._work = work
        self._appended: list[Appended] = []
        self._pending: list[appends.Pending] = []
        self._savepoints = 0
        self._state = "new"  # then "open" inside `async with`, then "ended"

    async def __aenter__(self) -> Self:
        if self._state != "new":
            raise RuntimeError("a unit of work is used once: begin another")
        if self.conn.is_in_transaction():
            raise RuntimeError("a unit of work begins its own transaction: nest with savepoint()")
        self._state = "ended"  # a failed BEGIN leaves it unusable too
        await self.conn.execute("BEGIN")
        self._state = "open"
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._state = "ended"
        if kind is not None:
            await self._roll_back()
            return
        try:
            started = time.perf_counter()
            after = self._work.after
            wanted = after.wants_positions({a.stream_type for a in self._appended})
            positions = await appends.commit(self.conn, self._pending, positions=wanted)
            committing = time.perf_counter() - started
        except BaseException:
            await self._roll_back()
            raise
        if self._appended:
            after.run(
                Committed(
                    tuple(
                        dataclasses.replace(
                            a,
                            seconds=a.seconds + committing,
                            position=positions.get(p.last_event_id, 0),
                        )
                        for a, p in zip(self._appended, self._pending, strict=True)
                    )
                )
            )

    @contextlib.asynccontextmanager
    async def savepoint(self) -> AsyncIterator[None]:
        """A part of the unit that fails alone: its appends are undone with it, the rest stays."""
        self._require_open()
        self._savepoints += 1
        name = f"work_{self._savepoints}"
        appended, pending = len(self._appended), len(self._pending)
        await self.conn.execute(f"SAVEPOINT {name}")
        try:
            yield
        except BaseException:
            await self.conn.execute(f"ROLLBACK TO SAVEPOINT {name}")
            del self._appended[appended:], self._pending[pending:]
            raise
        await self.conn.execute(f"RELEASE SAVEPOINT {name}")

    async def append(  # noqa: PLR0913 - the envelope has this many parts
        self,
        stream: tuple[str, str],
        events: Sequence[DomainEvent],
        metadata: Metadata,
        *,
        new: bool = False,
        at_version: int | None = None,
        event_ids: Sequence[uuid.UUID] | None = None,
        erased: Collection[int] = (),
    ) -> list[RecordedEvent]:
        """Append to one stream; `new`: the stream must not exist yet (it starts with a create);
        `at_version`: the stream must be at exactly this version (a create that continues the
        stream of a deleted namesake); either refusal is its stream type's TAKEN_STREAMS error.
        `erased`: persons whose keys this transaction destroyed (appends.append)."""
        self._require_open()
        expected: appends.Expected = (
            appends.NO_STREAM if new else appends.ANY if at_version is None else at_version
        )
        started = time.perf_counter()
        before = len(self._pending)
        try:
            recorded = await appends.append(
                self.conn,
                stream,
                expected,
                events,
                metadata,
                event_ids=event_ids,
                inline=self._work.inline,
                pending=self._pending,
                erased=erased,
            )
        except (eventlog.WrongExpectedVersion, asyncpg.UniqueViolationError) as exc:
            raise _refusal(exc, stream[0]) from None
        if len(self._pending) > before:  # not when they were stored already
            types = tuple(record.event.type_name() for record in recorded)
            self._appended.append(Appended(types, time.perf_counter() - started, 0, stream[0]))
        return recorded

    async def append_new(
        self, streams: Sequence[appends.NewStream], *, erased: Collection[int] = ()
    ) -> list[list[RecordedEvent]]:
        """Start several new streams at once (appends.append_new); each counts as an append of
        its own. `erased` as for `append`."""
        self._require_open()
        started = time.perf_counter()
        try:
            recorded = await appends.append_new(
                self.conn, streams, inline=self._work.inline, pending=self._pending, erased=erased
            )
        except (eventlog.WrongExpectedVersion, asyncpg.UniqueViolationError) as exc:
            raise _refusal(exc, streams[0].stream[0]) from None
        share = (time.perf_counter() - started) / max(len(recorded), 1)
        self._appended.extend(
            Appended(tuple(r.event.type_name() for r in records), share, 0, records[0].stream_type)
            for records in recorded
        )
        return recorded

    def _require_open(self) -> None:
        if self._state != "open":
            raise RuntimeError("a unit of work appends inside `async with` only")

    async def _roll_back(self) -> None:
        """ROLLBACK unless the transaction is over already (a failed COMMIT ends it) or the
        connection is gone (the pool then closes it); the caller's exception is what counts."""
        # (Asking may fail too: a connection the server dropped can be back with the pool.)
        with contextlib.suppress(asyncpg.PostgresError, asyncpg.InterfaceError, OSError):
            if self.conn.is_closed() or not self.conn.is_in_transaction():
                return
            await self.conn.execute("ROLLBACK")


def _refusal(exc: Exception, stream_type: str) -> Exception:
    """The domain error an append's refusal means: its new stream's key taken, or a read
    model's unique constraint (UNIQUE_CONSTRAINTS); any other refusal as it is."""
    if isinstance(exc, eventlog.WrongExpectedVersion):
        kind, message = TAKEN_STREAMS.get(stream_type, (Conflict, f"{stream_type} exists already"))
        return kind(message)
    if isinstance(exc, asyncpg.UniqueViolationError):
        known = UNIQUE_CONSTRAINTS.get((exc.constraint_name or "", stream_type))
        if known is not None:
            return known[0](known[1])
    return exc
