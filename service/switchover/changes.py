"""What every kind decides alike about one entity that the source and ours both have, or that
only ours has: the same (nothing appended), changed (when the import may overwrite it), a
conflict (changed here, or made here with other content), deleted (what an earlier run
brought and the source dropped), and how a refusal is named in the report."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec

from service.errors import AppError
from service.switchover import origin

if TYPE_CHECKING:
    from collections.abc import Iterable

    from eventlog.connections import Conn
    from service.switchover.run import Context, Outcome

# Advisory locks of names in name order: two imports, or an import and a person's change of
# the same names, queue without a deadlock.
_LOCK_NAMES = """
SELECT pg_advisory_xact_lock($1, hashtext(n))
FROM (SELECT DISTINCT n FROM unnest($2::text[]) n ORDER BY n) names
"""


async def lock_names(conn: Conn, key: int, names: Iterable[str]) -> None:
    """Take the advisory locks our routes take for these names (`key`: the kind's lock space)."""
    await conn.execute(_LOCK_NAMES, key, list(names))


def to_change(  # noqa: PLR0913, PLR0917 - the two states and what decides between them
    ctx: Context,
    name: str,
    current: msgspec.Struct | NamedTuple,
    wanted: msgspec.Struct | NamedTuple,
    mark: origin.Provenance | None,
    outcome: Outcome,
) -> bool:
    """Whether the entity is to be changed to `wanted` (two states of one type, in our terms,
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


def differs(current: msgspec.Struct | NamedTuple, wanted: msgspec.Struct | NamedTuple) -> str:
    here, there = _fields(current), _fields(wanted)
    fields = [f for f in here if here[f] != there[f]]
    return "differs here in " + ", ".join(fields)


def _fields(state: msgspec.Struct | NamedTuple) -> dict[str, Any]:
    if isinstance(state, msgspec.Struct):
        return msgspec.structs.asdict(state)
    return state._asdict()


def reason(exc: Exception) -> str:
    """A refusal as the report names it: the rule our request or domain checks said."""
    return exc.message if isinstance(exc, AppError) else str(exc)


REFUSALS = (msgspec.ValidationError, AppError)
