"""Custom strategy types (Unleash's strategy definitions): created, updated, deprecated or
reactivated here as the source has them, deleted when an earlier run brought them and the
source dropped them (once no flag's strategy here uses them). The built-in types compare as
equal to the source's (both are Unleash 6.10.1's); only their deprecation is carried."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from eventlog.events.strategy_definitions import StrategyDefinitionDeprecated, StrategyParameter
from service.strategies import domain, queries
from service.strategies.commands import CreateStrategyType, UpdateStrategyType
from service.switchover import changes, origin
from service.switchover.run import Outcome

if TYPE_CHECKING:
    from eventlog.codec import DomainEvent
    from service.switchover.run import Context
    from service.work import UnitOfWork


class SourceStrategy(msgspec.Struct, frozen=True):
    """A strategy type as Unleash answers it (strategySchema)."""

    name: str
    title: str | None = None
    description: str | None = None
    parameters: list[dict[str, Any]] = []
    deprecated: bool = False


class SourceStrategies(msgspec.Struct, frozen=True):
    strategies: list[SourceStrategy]


class Shape(msgspec.Struct, frozen=True):
    """A strategy type in our terms: what the import compares."""

    title: str | None
    description: str | None
    parameters: list[StrategyParameter]
    deprecated: bool


class BuiltInShape(msgspec.Struct, frozen=True):
    deprecated: bool


_LOCK_ROWS = "SELECT name FROM strategy_definitions ORDER BY name FOR UPDATE"
_NAMES = "SELECT name FROM strategy_definitions"


class StrategyTypes:
    name = "strategy types"

    async def read(self, ctx: Context) -> list[SourceStrategy]:
        ctx.progress.phase("reading strategy types", 1)
        found = await ctx.source.get("/api/admin/strategies", SourceStrategies)
        ctx.progress.done()
        return found.strategies

    async def write(self, ctx: Context, data: list[SourceStrategy], uow: UnitOfWork) -> Outcome:
        outcome = Outcome(kind=self.name, in_source=len(data))
        ctx.progress.phase("writing strategy types", len(data))
        names = [r["name"] for r in await uow.conn.fetch(_NAMES)] + [s.name for s in data]
        await changes.lock_names(uow.conn, queries.LOCKS, names)
        await uow.conn.execute(_LOCK_ROWS)
        ours = {t.name: t for t in await queries.strategy_types(uow.conn)}
        marks = await origin.provenance(uow.conn, "strategy", ctx.origin)
        for item in data:
            ctx.progress.advance()
            current = ours.get(item.name)
            try:
                events = self._decide(ctx, item, current, marks, outcome)
            except changes.REFUSALS as exc:
                outcome.refused.append((item.name, changes.reason(exc)))
                continue
            if events:
                await uow.append(domain.stream(item.name), events, ctx.metadata)
                outcome.events += len(events)
        kept = {i.name for i in data}
        for name, found in sorted(ours.items()):
            if name in kept or found.built_in:
                continue
            if not changes.to_delete(ctx, name, marks.get(name), outcome):
                continue
            used_by = await uow.conn.fetchval(queries.USED_BY, name)
            if used_by:
                why = (
                    f"gone from the source, used by {used_by} strategy(ies) of flags here: "
                    "deleted by a run after they no longer use it"
                )
                outcome.skipped.append((name, why))
                continue
            deleted = domain.delete_strategy_type(name, current=found, used_by=0)
            await uow.append(domain.stream(name), [deleted], ctx.metadata)
            outcome.deleted.append(name)
            outcome.events += 1
        ctx.progress.done()
        return outcome

    def _decide(
        self,
        ctx: Context,
        item: SourceStrategy,
        current: domain.StrategyType | None,
        marks: dict[str, origin.Provenance],
        outcome: Outcome,
    ) -> list[DomainEvent]:
        if current is not None and current.built_in:
            mark = marks.get(item.name) or origin.AS_INSTALLED
            if not changes.to_change(
                ctx,
                item.name,
                BuiltInShape(current.deprecated),
                BuiltInShape(item.deprecated),
                mark,
                outcome,
            ):
                return []
            outcome.updated.append(item.name)
            return _deprecation(item, current)
        fields = {
            "name": item.name,
            "title": item.title,
            "description": item.description,
            "parameters": item.parameters,
        }
        if current is None:
            body = msgspec.convert(fields, CreateStrategyType)
            # Unleash gives no strategy type's creation time: the run's is used.
            created = domain.create_strategy_type(body, current=None, now=ctx.now)
            outcome.created.append(item.name)
            deprecated = StrategyDefinitionDeprecated(name=item.name)
            return [created, deprecated] if item.deprecated else [created]
        update = domain.update_strategy_type(
            item.name, msgspec.convert(fields, UpdateStrategyType), current=current
        )
        here = Shape(current.title, current.description, current.parameters, current.deprecated)
        wanted = Shape(update.title, update.description, update.parameters, item.deprecated)
        if not changes.to_change(ctx, item.name, here, wanted, marks.get(item.name), outcome):
            return []
        outcome.updated.append(item.name)
        edited = (here.title, here.description, here.parameters) != (
            wanted.title,
            wanted.description,
            wanted.parameters,
        )
        return ([update] if edited else []) + _deprecation(item, current)


def _deprecation(item: SourceStrategy, current: domain.StrategyType) -> list[DomainEvent]:
    if item.deprecated:
        found: DomainEvent | None = domain.deprecate_strategy_type(item.name, current=current)
    else:
        found = domain.reactivate_strategy_type(item.name, current=current)
    return [] if found is None else [found]
