"""Feature types' lifetimes: each built-in type's expected lifetime set here as the source has
it. The types themselves are Unleash's built-in ones on both sides (neither creates or deletes
one); a type the source has and this service lacks is said so."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from service.feature_types import domain
from service.feature_types.commands import UpdateLifetime
from service.switchover import changes, origin
from service.switchover.run import Outcome

if TYPE_CHECKING:
    from service.switchover.run import Context
    from service.work import UnitOfWork


class SourceFeatureType(msgspec.Struct, frozen=True):
    """A feature type as Unleash answers it (featureTypeSchema)."""

    id: str
    lifetimeDays: int | None = None  # noqa: N815 - Unleash's name


class SourceFeatureTypes(msgspec.Struct, frozen=True):
    types: list[SourceFeatureType]


class Shape(msgspec.Struct, frozen=True):
    lifetime_days: int | None


_LOCK_ALL = "SELECT id, lifetime_days FROM feature_types ORDER BY id FOR UPDATE"


class FeatureTypes:
    name = "feature types"

    async def read(self, ctx: Context) -> list[SourceFeatureType]:
        ctx.progress.phase("reading feature types", 1)
        found = await ctx.source.get("/api/admin/feature-types", SourceFeatureTypes)
        ctx.progress.done()
        return found.types

    async def write(self, ctx: Context, data: list[SourceFeatureType], uow: UnitOfWork) -> Outcome:
        outcome = Outcome(kind=self.name, in_source=len(data))
        ctx.progress.phase("writing feature types", len(data))
        ours = {r["id"]: r["lifetime_days"] for r in await uow.conn.fetch(_LOCK_ALL)}
        marks = await origin.provenance(uow.conn, "feature-type", ctx.origin)
        for item in data:
            ctx.progress.advance()
            if item.id not in ours:
                outcome.skipped.append((item.id, "no such feature type here (all are built in)"))
                continue
            try:
                body = msgspec.convert({"lifetimeDays": item.lifetimeDays}, UpdateLifetime)
                event = domain.change_lifetime(item.id, body, current=(ours[item.id],))
            except changes.REFUSALS as exc:
                outcome.refused.append((item.id, changes.reason(exc)))
                continue
            current = Shape(ours[item.id])
            wanted = current if event is None else Shape(event.lifetime_days)
            if event is None or not changes.to_change(
                ctx, item.id, current, wanted, marks.get(item.id), outcome
            ):
                outcome.unchanged += int(event is None)  # to_change counts the rest
                continue
            await uow.append(domain.stream(item.id), [event], ctx.metadata)
            outcome.updated.append(item.id)
            outcome.events += 1
        ctx.progress.done()
        return outcome
