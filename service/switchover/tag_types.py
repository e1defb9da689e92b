"""Tag types: created, updated and deleted here as the source has them (the pattern of every
kind: read the source; lock ours; check each source entity with our request rules; decide with
the domain's functions; append with the run's metadata)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from service.switchover import changes, origin
from service.switchover.run import Outcome
from service.tag_types import domain, queries
from service.tag_types.commands import TagTypeBody, UpdateTagType

if TYPE_CHECKING:
    from datetime import datetime

    from service.switchover.run import Context
    from service.work import UnitOfWork


class SourceTagType(msgspec.Struct, frozen=True):
    """A tag type as Unleash answers it (tagTypeSchema); what we do not carry is ignored."""

    name: str
    description: str | None = None
    icon: str | None = None
    color: str | None = None


class SourceTagTypes(msgspec.Struct, frozen=True):
    tagTypes: list[SourceTagType]  # noqa: N815 - Unleash's name


_LOCK_ALL = "SELECT name, description, icon, color FROM tag_types ORDER BY name FOR UPDATE"


class TagTypes:
    name = "tag types"

    async def read(self, ctx: Context) -> list[SourceTagType]:
        ctx.progress.phase("reading tag types", 1)
        found = await ctx.source.get("/api/admin/tag-types", SourceTagTypes)
        ctx.progress.done()
        return found.tagTypes

    async def write(self, ctx: Context, data: list[SourceTagType], uow: UnitOfWork) -> Outcome:
        outcome = Outcome(kind=self.name, in_source=len(data))
        ctx.progress.phase("writing tag types", len(data))
        ours = {r["name"]: r for r in await uow.conn.fetch(_LOCK_ALL)}
        marks = await origin.provenance(uow.conn, "tag-type", ctx.origin)
        now = ctx.now
        for item in data:
            ctx.progress.advance()
            try:
                body = msgspec.convert(
                    {"name": item.name, "description": item.description, "icon": item.icon}
                    | ({"color": item.color} if item.color is not None else {}),
                    TagTypeBody,
                )
                if item.name not in ours:
                    await uow.conn.execute(queries.LOCK_TAG_TYPE_NAME, item.name)
                    event = domain.create_tag_type(body, exists=False, now=_created(now))
                    await uow.append(domain.stream(item.name), [event], ctx.metadata)
                    outcome.created.append(item.name)
                    outcome.events += 1
                    continue
                row = ours[item.name]
                current = domain.TagTypeState(row["description"], row["icon"], row["color"])
                wanted = domain.TagTypeState(
                    body.description, body.icon, body.color or current.color
                )
                if not changes.to_change(
                    ctx, item.name, current, wanted, marks.get(item.name), outcome
                ):
                    continue
                update = domain.update_tag_type(
                    item.name, msgspec.convert(wanted._asdict(), UpdateTagType), current
                )
                if update is not None:
                    await uow.append(domain.stream(item.name), [update], ctx.metadata)
                    outcome.updated.append(item.name)
                    outcome.events += 1
            except changes.REFUSALS as exc:
                outcome.refused.append((item.name, changes.reason(exc)))
        await _delete_gone(ctx, {i.name for i in data}, ours, marks, uow, outcome)
        ctx.progress.done()
        return outcome


async def _delete_gone(  # noqa: PLR0913, PLR0917 - the state a deletion compares
    ctx: Context,
    kept: set[str],
    ours: dict[str, Any],
    marks: dict[str, origin.Provenance],
    uow: UnitOfWork,
    outcome: Outcome,
) -> None:
    """What an earlier run brought from this source and the source no longer has is
    deleted, as a person would delete it; what was made here is never touched."""
    for name in sorted(set(ours) - kept):
        if not changes.to_delete(ctx, name, marks.get(name), outcome):
            continue
        tagged = await queries.lock_tagged(uow.conn, name)
        untagged, deleted = domain.delete_tag_type(name, exists=True, tagged=tagged)
        for event in untagged:
            await uow.append(("feature", event.name), [event], ctx.metadata)
        await uow.append(domain.stream(name), [deleted], ctx.metadata)
        outcome.deleted.append(name)
        outcome.events += len(untagged) + 1


def _created(now: datetime) -> datetime:
    """Unleash's API gives no tag type's creation time: the run's is used."""
    return now
