"""Segments: created here with the source's id where it is free (else the next of ours) and its
created time, updated as the source changes them, deleted when an earlier run brought them and
the source dropped them (once no strategy here uses them). Every source segment's id is mapped
to ours in `ctx.ids["segment"]`, for the strategies that name them (flags, default strategies).

A source segment is ours when ours has its name, else when ours has its id, brought by an
earlier run from this source under another name (the source renamed it). Segments here belong
to no project: a source segment's project is not carried, and said so."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import msgspec

from eventlog.events.features import Constraint
from projections.shapes import ConstraintColumn
from service.features import domain, queries
from service.features.commands import SegmentBody
from service.switchover import changes, origin
from service.switchover.run import Outcome

if TYPE_CHECKING:
    from service.switchover.run import Context
    from service.work import UnitOfWork


class SourceSegment(msgspec.Struct, frozen=True):
    """A segment as Unleash answers it (adminSegmentSchema); usage and creator not carried."""

    id: int
    name: str
    description: str | None = None
    constraints: list[dict[str, Any]] = []
    project: str | None = None
    createdAt: datetime | None = None  # noqa: N815 - Unleash's name


class SourceSegments(msgspec.Struct, frozen=True):
    segments: list[SourceSegment]


class Shape(msgspec.Struct, frozen=True):
    """A segment in our terms: what the import compares."""

    name: str
    description: str | None
    constraints: list[Constraint]


_LOCK_ALL = """
SELECT id, name, description, constraints::text AS constraints FROM segments ORDER BY id FOR UPDATE
"""
# Ours keeps the source's ids where they are free; the sequence that numbers new segments is
# moved past them first, so that no segment made here later (or meanwhile) takes one.
_RESERVE = """
SELECT setval('segment_ids', greatest($1::integer, (SELECT last_value FROM segment_ids)))
"""
_columns = msgspec.json.Decoder(list[ConstraintColumn])


def _ours(row: Any) -> Shape:
    return Shape(
        row["name"],
        row["description"],
        msgspec.convert(
            _columns.decode(row["constraints"]), list[Constraint], from_attributes=True
        ),
    )


class Segments:
    name = "segments"

    async def read(self, ctx: Context) -> list[SourceSegment]:
        ctx.progress.phase("reading segments", 1)
        found = await ctx.source.get("/api/admin/segments", SourceSegments)
        ctx.progress.done()
        return sorted(found.segments, key=lambda s: s.id)

    async def write(self, ctx: Context, data: list[SourceSegment], uow: UnitOfWork) -> Outcome:
        outcome = Outcome(kind=self.name, in_source=len(data))
        ctx.progress.phase("writing segments", len(data))
        if data:
            await uow.conn.execute(_RESERVE, max(s.id for s in data))
        ours = {r["id"]: _ours(r) for r in await uow.conn.fetch(_LOCK_ALL)}
        marks = await origin.provenance(uow.conn, "segment", ctx.origin)
        pairs = _pairs(data, ours, marks)
        ids: dict[Any, int] = ctx.ids.setdefault("segment", {})
        names = {shape.name: segment_id for segment_id, shape in ours.items()}
        for item in data:
            ctx.progress.advance()
            if item.project is not None:
                outcome.skipped.append(
                    (item.name, f"project {item.project} not carried: segments here are global")
                )
            ours_id = pairs.get(item.id)
            try:
                body = msgspec.convert(
                    {
                        "name": item.name,
                        "description": item.description,
                        "constraints": item.constraints,
                    },
                    SegmentBody,
                )
                if ours_id is None:
                    # A deleted segment's id keeps its stream: it is not free.
                    free = str(item.id) not in marks and item.id not in ours
                    ours_id = item.id if free else await _next_id(uow)
                    taken = item.name in names
                    now = item.createdAt or ctx.now
                    created = domain.create_segment(
                        body, segment_id=ours_id, name_taken=taken, now=now
                    )
                    await uow.append(
                        domain.segment_stream(ours_id), [created], ctx.metadata, new=True
                    )
                    ours[ours_id] = Shape(created.name, created.description, created.constraints)
                    names[created.name] = ours_id
                    outcome.created.append(item.name)
                    outcome.events += 1
                else:
                    await self._update(ctx, item, body, (ours_id, ours, names), marks, uow, outcome)
            except changes.REFUSALS as exc:
                outcome.refused.append((item.name, changes.reason(exc)))
                continue
            ids[item.id] = ours_id
        await _delete_gone(ctx, set(pairs.values()) | set(ids.values()), ours, marks, uow, outcome)
        ctx.progress.done()
        return outcome

    async def _update(  # noqa: PLR0913, PLR0917 - the entity, ours and what decides
        self,
        ctx: Context,
        item: SourceSegment,
        body: SegmentBody,
        found: tuple[int, dict[int, Shape], dict[str, int]],
        marks: dict[str, origin.Provenance],
        uow: UnitOfWork,
        outcome: Outcome,
    ) -> None:
        ours_id, ours, names = found
        current = ours[ours_id]
        taken = names.get(body.name, ours_id) != ours_id
        update = domain.update_segment(ours_id, body, found=True, name_taken=taken)
        wanted = Shape(update.name, update.description, update.constraints)
        mark = marks.get(str(ours_id))
        if not changes.to_change(ctx, item.name, current, wanted, mark, outcome):
            return
        await uow.append(domain.segment_stream(ours_id), [update], ctx.metadata)
        names.pop(current.name, None)
        names[wanted.name] = ours_id
        ours[ours_id] = wanted
        outcome.updated.append(item.name)
        outcome.events += 1


def _pairs(
    data: list[SourceSegment], ours: dict[int, Shape], marks: dict[str, origin.Provenance]
) -> dict[int, int]:
    """Source id -> our id of the source segments ours has: by name first, then by id for one
    an earlier run from this source brought (renamed in the source since)."""
    by_name = {shape.name: segment_id for segment_id, shape in ours.items()}
    pairs = {s.id: by_name[s.name] for s in data if s.name in by_name}
    taken = set(pairs.values())
    for s in data:
        mark = marks.get(str(s.id))
        if (
            s.id not in pairs
            and s.id in ours
            and s.id not in taken
            and mark is not None
            and mark.imported
        ):
            pairs[s.id] = s.id
            taken.add(s.id)
    return pairs


async def _next_id(uow: UnitOfWork) -> int:
    found: int = await uow.conn.fetchval(queries.NEXT_SEGMENT_ID)
    return found


async def _delete_gone(  # noqa: PLR0913, PLR0917 - the state a deletion compares
    ctx: Context,
    kept: set[int],
    ours: dict[int, Shape],
    marks: dict[str, origin.Provenance],
    uow: UnitOfWork,
    outcome: Outcome,
) -> None:
    """What an earlier run brought and the source no longer has is deleted, as a person would
    delete it, once no strategy uses it; what was made here is never touched."""
    for segment_id in sorted(set(ours) - kept):
        name = ours[segment_id].name
        if not changes.to_delete(ctx, name, marks.get(str(segment_id)), outcome):
            continue
        used_by = await uow.conn.fetchval(queries.SEGMENT_USED_BY, segment_id)
        if used_by:
            why = (
                f"gone from the source, used by {used_by} strategy(ies) here: deleted by a run "
                "after they no longer use it"
            )
            outcome.skipped.append((name, why))
            continue
        deleted = domain.delete_segment(segment_id, name=name, used_by=0)
        await uow.append(domain.segment_stream(segment_id), [deleted], ctx.metadata)
        outcome.deleted.append(name)
        outcome.events += 1
