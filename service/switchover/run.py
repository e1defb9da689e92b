"""One import: every kind read from the source first (a source that fails writes nothing),
then written kind after kind, in an order where what a kind refers to is there before it.

A real run writes each kind in a transaction of its own: a kind with a problem (a name here
with other content, an entity this service's rules refuse) writes nothing, the run stops there
and says why; the kinds before it landed whole, and a run again writes only what is missing.
`--dry-run` writes every kind in one transaction with a savepoint each, reports every problem
of every kind, and rolls it all back."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, Protocol

from eventlog.events.base import Metadata

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from eventlog.connections import Conn
    from service.switchover.progress import Progress
    from service.switchover.source import Unleash
    from service.work import UnitOfWork, Work

ACTOR = "import-unleash"
GC_YOUNG: Final = 50_000  # allocations between the youngest generation's passes while writing


@dataclass
class Outcome:
    """What one kind's write did (or, in a dry run, would do); names as the source has them."""

    kind: str
    in_source: int = 0
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unchanged: int = 0
    events: int = 0
    # Problems: the kind is not written while it has any.
    conflicts: list[tuple[str, str]] = field(default_factory=list)  # name, what differs
    refused: list[tuple[str, str]] = field(default_factory=list)  # name, the rule
    # Not carried, and why (e.g. the source's edition has no service accounts): no problem.
    skipped: list[tuple[str, str]] = field(default_factory=list)
    # False when a problem kept the kind from being written: the lists say what it would do.
    written: bool = True

    @property
    def problems(self) -> int:
        return len(self.conflicts) + len(self.refused)


@dataclass
class Context:
    """What every kind's read and write share. `ids` maps a source's ids to ours, by kind
    (`segment`, `user`, ...), filled by the kinds that create those entities."""

    source: Unleash
    prefer_source: bool
    progress: Progress
    metadata: Metadata
    now: datetime
    ids: dict[str, dict[Any, Any]] = field(default_factory=dict)
    # What the kinds hand over for the report beside their outcomes (e.g. reset links).
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def origin(self) -> str:
        assert self.metadata.origin is not None
        return self.metadata.origin


class Kind(Protocol):
    """One kind of entity. `read` asks the source only; `write` reads ours under locks through
    `uow.conn`, decides with the domain's functions, appends with `ctx.metadata`, and says what
    it did; it appends nothing when the source and ours agree."""

    name: str

    async def read(self, ctx: Context) -> Any: ...

    async def write(self, ctx: Context, data: Any, uow: UnitOfWork) -> Outcome: ...


@dataclass
class Report:
    version: str
    outcomes: list[Outcome] = field(default_factory=list)
    stopped_at: str | None = None  # the kind whose problems stopped a real run
    dry_run: bool = False
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def problems(self) -> int:
        return sum(o.problems for o in self.outcomes)


class _DryRun(Exception):
    """Raised at the end of a dry run so that its one transaction rolls back."""


def metadata_for(origin: str) -> Metadata:
    """Every event of one run: the importer as a system actor, `source` import, the source
    marked in `origin`, the run's id as the request's."""
    return Metadata(
        actor_id=ACTOR,
        actor_name=ACTOR,
        actor_kind="system",
        source="import",
        request_id=f"import-{uuid.uuid4()}",
        origin=origin,
    )


async def run(  # noqa: PLR0913 - the command line's choices
    source: Unleash,
    kinds: Sequence[Kind],
    work: Work,
    conn: Conn,
    progress: Progress,
    *,
    dry_run: bool = False,
    prefer_source: bool = False,
) -> Report:
    """Check the source, read every kind, write them (see the module's text)."""
    await source.check()
    ctx = Context(
        source=source,
        prefer_source=prefer_source,
        progress=progress,
        metadata=metadata_for(source.origin),
        now=datetime.now(UTC),
    )
    with _long_lived():
        data = [await kind.read(ctx) for kind in kinds]
        gc.freeze()
        return await _written(ctx, kinds, data, work, conn, dry_run=dry_run)


@contextlib.contextmanager
def _long_lived() -> Iterator[None]:
    """A run with the cyclic collector's youngest generation collected less often, and what
    exists when it starts (and, `gc.freeze()` again, what was read) kept out of its passes: a
    large source's read objects and the events and projection writes a kind builds live until
    the run ends or the kind commits, and the collector's passes over them took about 30 s of
    a first run of the 10,000 flags and users of docs/benchmarks.md ("import-unleash"). Both
    are as they were after."""
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(GC_YOUNG, *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


async def _written(  # noqa: PLR0913 - the command line's choices
    ctx: Context,
    kinds: Sequence[Kind],
    data: list[Any],
    work: Work,
    conn: Conn,
    *,
    dry_run: bool,
) -> Report:
    source = ctx.source
    report = Report(version=source.version, dry_run=dry_run, notes=ctx.notes)
    if dry_run:
        try:
            async with work.begin(conn) as uow:
                for kind, found in zip(kinds, data, strict=True):
                    report.outcomes.append(await _dry_write(ctx, kind, found, uow))
                _roll_back()
        except _DryRun:
            pass
        return report
    for kind, found in zip(kinds, data, strict=True):
        outcome = await _write(ctx, kind, found, work, conn)
        report.outcomes.append(outcome)
        if outcome.problems:
            report.stopped_at = kind.name
            break
    return report


class _Refused(Exception):
    def __init__(self, outcome: Outcome) -> None:
        super().__init__(outcome.kind)
        self.outcome = outcome


def _checked(outcome: Outcome) -> Outcome:
    """The outcome of a kind without problems; one with problems rolls its writes back."""
    if outcome.problems:
        raise _Refused(outcome)
    return outcome


def _roll_back() -> None:
    raise _DryRun


async def _write(ctx: Context, kind: Kind, data: Any, work: Work, conn: Conn) -> Outcome:
    """One kind in one transaction, rolled back when the kind has a problem."""
    ids = {name: dict(mapped) for name, mapped in ctx.ids.items()}
    try:
        async with work.begin(conn) as uow:
            outcome = _checked(await kind.write(ctx, data, uow))
    except _Refused as refused:
        ctx.ids = ids
        return dataclasses.replace(refused.outcome, written=False)
    return outcome


async def _dry_write(ctx: Context, kind: Kind, data: Any, uow: UnitOfWork) -> Outcome:
    """One kind in a savepoint of the dry run's transaction: a kind with a problem is undone,
    so the kinds after it see what a real run would have left."""
    ids = {name: dict(mapped) for name, mapped in ctx.ids.items()}
    try:
        async with uow.savepoint():
            outcome = _checked(await kind.write(ctx, data, uow))
    except _Refused as refused:
        ctx.ids = ids
        return dataclasses.replace(refused.outcome, written=False)
    return outcome
