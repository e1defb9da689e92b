"""What every kind decides alike about one entity that the source and ours both have, or that
only ours has: the same (nothing appended), changed (when the import may overwrite it), a
conflict (changed here, or made here with other content), deleted (what an earlier run
brought and the source dropped), and how a refusal is named in the report."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from service.errors import AppError
from service.switchover import origin

if TYPE_CHECKING:
    from service.switchover.run import Context, Outcome


def to_change(  # noqa: PLR0913, PLR0917 - the two states and what decides between them
    ctx: Context,
    name: str,
    current: msgspec.Struct,
    wanted: msgspec.Struct,
    mark: origin.Provenance | None,
    outcome: Outcome,
) -> bool:
    """Whether the entity is to be changed to `wanted` (two Structs of one type, in our terms,
    defaults normalised): the same counts as unchanged; a difference the import may not
    overwrite is a conflict naming the fields that differ."""
    if current == wanted:
        outcome.unchanged += 1
        return False
    if not origin.may_overwrite(mark, prefer_source=ctx.prefer_source):
        outcome.conflicts.append((name, differs(current, wanted)))
        return False
    return True


def to_delete(ctx: Context, name: str, mark: origin.Provenance | None, outcome: Outcome) -> bool:
    """Whether an entity ours has and the source no longer has is to be deleted: only one an
    earlier run from this source brought, and unless `--prefer-source`, nobody changed here
    since (a conflict then). What was made here is never touched."""
    if mark is None or not mark.imported:
        return False
    if mark.changed_here and not ctx.prefer_source:
        outcome.conflicts.append((name, "gone from the source, changed here since"))
        return False
    return True


def differs(current: msgspec.Struct, wanted: msgspec.Struct) -> str:
    here, there = msgspec.structs.asdict(current), msgspec.structs.asdict(wanted)
    fields = [f for f in here if here[f] != there[f]]
    return "differs here in " + ", ".join(fields)


def reason(exc: Exception) -> str:
    """A refusal as the report names it: the rule our request or domain checks said."""
    return exc.message if isinstance(exc, AppError) else str(exc)


REFUSALS = (msgspec.ValidationError, AppError)
