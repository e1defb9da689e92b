"""Environments: created here as the source has them (an Enterprise source may have more than
the three every Unleash has), switched on or off and placed in the order as there. This
service deletes no environment: one here the source lacks is kept and said so."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from service.projects import domain
from service.projects.commands import CreateEnvironment, UpdateEnvironment
from service.switchover import changes, origin
from service.switchover.run import Outcome

if TYPE_CHECKING:
    from eventlog.codec import DomainEvent
    from service.switchover.run import Context
    from service.work import UnitOfWork


class SourceEnvironment(msgspec.Struct, frozen=True):
    """An environment as Unleash answers it (environmentSchema); the rest is not carried."""

    name: str
    type: str
    sortOrder: int = 0  # noqa: N815 - Unleash's names
    enabled: bool = True


class SourceEnvironments(msgspec.Struct, frozen=True):
    environments: list[SourceEnvironment]


class State(msgspec.Struct, frozen=True):
    """What an environment is, in our terms: what the import compares."""

    type: str
    sort_order: int
    enabled: bool


_LOCK_ALL = "SELECT name, type, sort_order, enabled FROM environments ORDER BY name FOR UPDATE"


class Environments:
    name = "environments"

    async def read(self, ctx: Context) -> list[SourceEnvironment]:
        ctx.progress.phase("reading environments", 1)
        found = await ctx.source.get("/api/admin/environments", SourceEnvironments)
        ctx.progress.done()
        return found.environments

    async def write(self, ctx: Context, data: list[SourceEnvironment], uow: UnitOfWork) -> Outcome:
        outcome = Outcome(kind=self.name, in_source=len(data))
        ctx.progress.phase("writing environments", len(data))
        ours = {
            r["name"]: State(r["type"], r["sort_order"], r["enabled"])
            for r in await uow.conn.fetch(_LOCK_ALL)
        }
        marks = await origin.provenance(uow.conn, "environment", ctx.origin)
        for item in data:
            ctx.progress.advance()
            try:
                events = self._decide(ctx, item, ours.get(item.name), marks, outcome)
            except changes.REFUSALS as exc:
                outcome.refused.append((item.name, changes.reason(exc)))
                continue
            if events:
                stream = domain.environment_stream(item.name)
                await uow.append(stream, events, ctx.metadata, new=item.name not in ours)
                outcome.events += len(events)
        outcome.skipped.extend(
            (name, "not in the source: kept here (this service deletes no environment)")
            for name in sorted(set(ours) - {i.name for i in data})
        )
        ctx.progress.done()
        return outcome

    def _decide(
        self,
        ctx: Context,
        item: SourceEnvironment,
        current: State | None,
        marks: dict[str, origin.Provenance],
        outcome: Outcome,
    ) -> list[DomainEvent]:
        cmd = msgspec.convert(
            {"name": item.name, "type": item.type, "sortOrder": item.sortOrder}, CreateEnvironment
        )
        if current is None:
            # Unleash gives no environment's creation time: the run's is used.
            created = domain.create_environment(cmd, exists=False, next_sort_order=0, now=ctx.now)
            outcome.created.append(item.name)
            switched = domain.switch_environment(item.name, enabled=True, on=item.enabled)
            return [created] if switched is None else [created, switched]
        wanted = State(item.type, item.sortOrder, item.enabled)
        if not changes.to_change(ctx, item.name, current, wanted, marks.get(item.name), outcome):
            return []
        update = domain.update_environment(
            item.name,
            UpdateEnvironment(type=cmd.type, sort_order=cmd.sort_order),
            (current.type, current.sort_order),
        )
        switched = domain.switch_environment(item.name, enabled=current.enabled, on=item.enabled)
        outcome.updated.append(item.name)
        return [e for e in (update, switched) if e is not None]
