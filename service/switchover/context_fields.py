"""Context fields: created here with the source's created time, updated as the source changes
them, deleted when an earlier run brought them and the source dropped them. The fields every
install has (userId, appName, environment...) are compared with the source's, never created
again; this service never deletes one."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import msgspec

from eventlog.events.context_fields import ContextFieldCreated, ContextFieldUpdated, LegalValue
from service.context import domain, queries
from service.context.commands import CreateField, UpdateField
from service.switchover import changes, origin
from service.switchover.run import Outcome

if TYPE_CHECKING:
    from service.switchover.run import Context
    from service.work import UnitOfWork


class SourceLegalValue(msgspec.Struct, frozen=True):
    value: str
    description: str | None = None


class SourceField(msgspec.Struct, frozen=True):
    """A context field as Unleash answers it (contextFieldSchema); usage is not carried."""

    name: str
    description: str | None = None
    stickiness: bool = False
    sortOrder: int = 0  # noqa: N815 - Unleash's names
    legalValues: list[SourceLegalValue] = []  # noqa: N815
    createdAt: datetime | None = None  # noqa: N815


class Shape(msgspec.Struct, frozen=True):
    """A context field in our terms: what the import compares."""

    description: str | None
    legal_values: list[LegalValue]
    stickiness: bool
    sort_order: int


# The fields' rows, locked after their names' advisory locks.
_LOCK_ROWS = "SELECT name FROM context_fields ORDER BY name FOR UPDATE"
_NAMES = "SELECT name FROM context_fields"


def _shape(field: domain.Field) -> Shape:
    return Shape(field.description, field.legal_values, field.stickiness, field.sort_order)


class ContextFields:
    name = "context fields"

    async def read(self, ctx: Context) -> list[SourceField]:
        ctx.progress.phase("reading context fields", 1)
        found = await ctx.source.get("/api/admin/context", list[SourceField])
        ctx.progress.done()
        return found

    async def write(self, ctx: Context, data: list[SourceField], uow: UnitOfWork) -> Outcome:
        outcome = Outcome(kind=self.name, in_source=len(data))
        ctx.progress.phase("writing context fields", len(data))
        names = [r["name"] for r in await uow.conn.fetch(_NAMES)] + [f.name for f in data]
        await changes.lock_names(uow.conn, queries.LOCKS, names)
        await uow.conn.execute(_LOCK_ROWS)
        ours = {f.name: f for f in await queries.fields(uow.conn)}
        marks = await origin.provenance(uow.conn, "context-field", ctx.origin)
        for item in data:
            ctx.progress.advance()
            current = ours.get(item.name)
            try:
                event = self._decide(ctx, item, current, marks, outcome)
            except changes.REFUSALS as exc:
                outcome.refused.append((item.name, changes.reason(exc)))
                continue
            if event is not None:
                await uow.append(domain.stream(item.name), [event], ctx.metadata)
                outcome.events += 1
        kept = {i.name for i in data}
        for name, field in sorted(ours.items()):
            if name in kept or field.built_in:
                continue
            if changes.to_delete(ctx, name, marks.get(name), outcome):
                deleted = domain.delete_field(name, current=field)
                await uow.append(domain.stream(name), [deleted], ctx.metadata)
                outcome.deleted.append(name)
                outcome.events += 1
        ctx.progress.done()
        return outcome

    def _decide(
        self,
        ctx: Context,
        item: SourceField,
        current: domain.Field | None,
        marks: dict[str, origin.Provenance],
        outcome: Outcome,
    ) -> ContextFieldCreated | ContextFieldUpdated | None:
        fields = {
            "name": item.name,
            "description": item.description,
            "legalValues": [msgspec.structs.asdict(v) for v in item.legalValues],
            "stickiness": item.stickiness,
            "sortOrder": item.sortOrder,
        }
        if current is None:
            body = msgspec.convert(fields, CreateField)
            created = domain.create_field(body, current=None, now=item.createdAt or ctx.now)
            outcome.created.append(item.name)
            return created
        update = domain.update_field(
            item.name, msgspec.convert(fields, UpdateField), current=current
        )
        wanted = Shape(
            update.description, update.legal_values, update.stickiness, update.sort_order
        )
        mark = marks.get(item.name) or (origin.AS_INSTALLED if current.built_in else None)
        if not changes.to_change(ctx, item.name, _shape(current), wanted, mark, outcome):
            return None
        outcome.updated.append(item.name)
        return update
