"""The write path's last step: append a decision's events, with the inline projections, in the
caller's transaction; and the one table that turns a refusing unique constraint into the
domain error it means.

Concurrency model (docs/architecture.md): what a command changes is locked in the read models
(`SELECT ... FOR UPDATE`) before its state is read, so commands on one thing run one after
another and each decides on what the previous one committed. What a command creates is guarded
by unique constraints: a new stream's key (`streams`), and the read models' unique indexes.
Stream versions only number events; appends do not compare them.

`transaction` is a transaction that also remembers what `append` appended in it, and hands that
over once the COMMIT succeeded (metrics count committed events only). Its appends' global
sections run with its COMMIT, in one message (`eventstore.commit`): the log's head lock is held
for them and the commit alone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Collection, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

import asyncpg

from projections.inline import apply_inline
from service import eventstore
from service.errors import AppError, Conflict, NameExists

if TYPE_CHECKING:
    import uuid
    from collections.abc import AsyncIterator

    from service.codec import DomainEvent, RecordedEvent
    from service.connections import Conn
    from service.events import Metadata

# One new stream of `append_new` (handlers do not import the event store).
NewStream = eventstore.NewStream
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
    """One append in a transaction: its events' types, in order, how long it took (with its
    transaction's global sections and COMMIT, where they run), the log position of its last
    event, and its stream's type."""

    types: tuple[str, ...]
    seconds: float
    position: int = 0
    stream_type: str = ""


# Told what a transaction appended, once its COMMIT succeeded (service.metrics counts it).
Committed = Callable[[Sequence[Appended]], None]


@dataclass
class _Unit:
    conn: Conn
    appended: list[Appended] = field(default_factory=list)
    pending: list[eventstore.Pending] = field(default_factory=list)


_unit: ContextVar[_Unit | None] = ContextVar("store_unit", default=None)


@contextlib.asynccontextmanager
async def transaction(
    conn: Conn, committed: Committed | None = None, *, positioned: Collection[str] | None = None
) -> AsyncIterator[Conn]:
    """A transaction (BEGIN ... COMMIT) whose appends' global sections run with its COMMIT; once
    that succeeded, `committed` gets what `append` appended in it, with the log positions read
    back when it appended to a stream type in `positioned` (None: always; else 0: a round trip
    saved). A rollback (an exception, a
    refused constraint, a failed COMMIT) reports nothing. Nested in another on the same
    connection it is a savepoint, and its appends join the outer one's (they run, and are
    reported, when that one commits). Inside, the connection's own `transaction()` cannot be
    used (asyncpg refuses it in a transaction it did not begin)."""
    outer = _unit.get()
    unit = _Unit(conn)
    token = _unit.set(unit)
    try:
        if outer is not None and outer.conn is conn:
            async with _savepoint(conn, len(outer.pending)):
                yield conn
            outer.appended.extend(unit.appended)
            outer.pending.extend(unit.pending)
            return
        await conn.execute("BEGIN")
        try:
            yield conn
            started = time.perf_counter()
            wanted = positioned is None or any(a.stream_type in positioned for a in unit.appended)
            positions = await eventstore.commit(conn, unit.pending, positions=wanted)
            committing = time.perf_counter() - started
        except BaseException:
            await _roll_back(conn)
            raise
    finally:
        _unit.reset(token)
    if committed is not None and unit.appended:
        committed(
            [
                dataclasses.replace(
                    a, seconds=a.seconds + committing, position=positions.get(p.last_event_id, 0)
                )
                for a, p in zip(unit.appended, unit.pending, strict=True)
            ]
        )


@contextlib.asynccontextmanager
async def _savepoint(conn: Conn, number: int) -> AsyncIterator[None]:
    name = f"store_{number}_{id(conn) & 0xFFFF}"
    await conn.execute(f"SAVEPOINT {name}")
    try:
        yield
    except BaseException:
        await conn.execute(f"ROLLBACK TO SAVEPOINT {name}")
        raise
    await conn.execute(f"RELEASE SAVEPOINT {name}")


async def _roll_back(conn: Conn) -> None:
    """ROLLBACK unless the transaction is over already (a failed COMMIT ends it) or the
    connection is gone (the pool then closes it); the caller's exception is what counts."""
    # (Asking may fail too: a connection the server dropped can be back with the pool already.)
    with contextlib.suppress(asyncpg.PostgresError, asyncpg.InterfaceError, OSError):
        if conn.is_closed() or not conn.is_in_transaction():
            return
        await conn.execute("ROLLBACK")


async def append(  # noqa: PLR0913 - the envelope has this many parts
    conn: Conn,
    stream: tuple[str, str],
    events: Sequence[DomainEvent],
    metadata: Metadata,
    *,
    new: bool = False,
    event_ids: Sequence[uuid.UUID] | None = None,
    erased: Collection[int] = (),
) -> list[RecordedEvent]:
    """Append to one stream; `new`: the stream must not exist yet (it starts with a create).
    `erased`: persons whose keys this transaction destroyed (eventstore.append)."""
    expected: eventstore.Expected = eventstore.NO_STREAM if new else eventstore.ANY
    started = time.perf_counter()
    unit = _unit.get()
    ours = unit is not None and unit.conn is conn
    before = len(unit.pending) if unit is not None else 0
    try:
        recorded = await eventstore.append(
            conn,
            stream,
            expected,
            events,
            metadata,
            event_ids=event_ids,
            inline=apply_inline,
            pending=unit.pending if unit is not None and ours else None,
            erased=erased,
        )
    except (eventstore.WrongExpectedVersion, asyncpg.UniqueViolationError) as exc:
        raise _refusal(exc, stream[0]) from None
    if unit is not None and ours and len(unit.pending) > before:  # not when stored already
        types = tuple(record.event.type_name() for record in recorded)
        unit.appended.append(Appended(types, time.perf_counter() - started, 0, stream[0]))
    return recorded


async def append_new(
    conn: Conn, streams: Sequence[eventstore.NewStream], *, erased: Collection[int] = ()
) -> list[list[RecordedEvent]]:
    """Start several new streams at once (eventstore.append_new), in a `transaction`; each
    counts as an append of its own. `erased` as for `append`."""
    unit = _unit.get()
    if unit is None or unit.conn is not conn:
        raise RuntimeError("append_new runs inside store.transaction, on its connection")
    started = time.perf_counter()
    try:
        recorded = await eventstore.append_new(
            conn, streams, inline=apply_inline, pending=unit.pending, erased=erased
        )
    except (eventstore.WrongExpectedVersion, asyncpg.UniqueViolationError) as exc:
        raise _refusal(exc, streams[0].stream[0]) from None
    share = (time.perf_counter() - started) / max(len(recorded), 1)
    unit.appended.extend(
        Appended(tuple(r.event.type_name() for r in records), share, 0, records[0].stream_type)
        for records in recorded
    )
    return recorded


def _refusal(exc: Exception, stream_type: str) -> Exception:
    """The domain error an append's refusal means: its new stream's key taken, or a read
    model's unique constraint (UNIQUE_CONSTRAINTS); any other refusal as it is."""
    if isinstance(exc, eventstore.WrongExpectedVersion):
        kind, message = TAKEN_STREAMS.get(stream_type, (Conflict, f"{stream_type} exists already"))
        return kind(message)
    if isinstance(exc, asyncpg.UniqueViolationError):
        known = UNIQUE_CONSTRAINTS.get((exc.constraint_name or "", stream_type))
        if known is not None:
            return known[0](known[1])
    return exc
