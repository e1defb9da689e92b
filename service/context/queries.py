"""Read SQL of the context fields, and the state their decisions take: a field is its row of
`context_fields`, or, for a built-in field never changed, its constant
(service/context/builtins.py).

Every command on a field first takes the name's advisory lock (`LOCK_NAME`): a name can be
freed (a deletion) and taken again, and a built-in field has no row until its first change, so
the lock is what puts two commands on one name one after the other."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import msgspec

from eventlog.events.context_fields import LegalValue
from service.context import builtins
from service.context.domain import Field

if TYPE_CHECKING:
    import asyncpg

    from eventlog.connections import Conn

LOCKS: Final = 0x63747866  # the advisory locks' first key: context field names
LOCK_NAME = "SELECT pg_advisory_xact_lock($1, hashtext($2))"
FIELD = """
SELECT name, description, legal_values::text AS legal_values, stickiness, sort_order, created_at
FROM context_fields
"""
ALL_FIELDS = FIELD
ONE_FIELD = FIELD + " WHERE name = $1"
LOCK_FIELD = ONE_FIELD + " FOR UPDATE"
# The flags' strategies whose constraints name the field (archived flags' too, as Unleash).
CONSTRAINED_BY = """
FROM feature_strategies s JOIN features f ON f.name = s.feature_name
WHERE EXISTS (
    SELECT 1 FROM jsonb_array_elements(s.constraints) c WHERE c ->> 'contextName' = $1
)
"""
STRATEGIES_USING = (
    "SELECT s.id::text AS id, f.project, s.feature_name, s.name, s.environment"
    + CONSTRAINED_BY
    + " ORDER BY s.feature_name, s.environment, s.sort_order, s.id"
)
# How many flags and projects each field's name is used in, by their strategies' constraints.
USAGE = """
SELECT c.name, count(DISTINCT s.feature_name) AS features, count(DISTINCT f.project) AS projects
FROM feature_strategies s
JOIN features f ON f.name = s.feature_name
CROSS JOIN LATERAL (
    SELECT DISTINCT e ->> 'contextName' AS name FROM jsonb_array_elements(s.constraints) e
) c
GROUP BY c.name
"""

_legal_values = msgspec.json.Decoder(list[LegalValue])


def _field(row: asyncpg.Record) -> Field:
    return Field(
        name=row["name"],
        description=row["description"],
        legal_values=_legal_values.decode(row["legal_values"]),
        stickiness=row["stickiness"],
        sort_order=row["sort_order"],
        created_at=row["created_at"],
        built_in=row["name"] in builtins.BUILT_IN,
    )


async def lock_name(conn: Conn, name: str) -> None:
    await conn.execute(LOCK_NAME, LOCKS, name)


async def fields(conn: Conn) -> list[Field]:
    """Every field, by name: the rows, and the built-in fields without one."""
    found = {row["name"]: _field(row) for row in await conn.fetch(ALL_FIELDS)}
    every = builtins.BUILT_IN | found
    return [every[name] for name in sorted(every)]


async def field(conn: Conn, name: str, *, lock: bool = False) -> Field | None:
    """The field of that name, or None; `lock`: its row FOR UPDATE."""
    row = await conn.fetchrow(LOCK_FIELD if lock else ONE_FIELD, name)
    return _field(row) if row is not None else builtins.BUILT_IN.get(name)


async def usage(conn: Conn) -> dict[str, tuple[int, int]]:
    """Field name -> (flags, projects) whose strategies' constraints name it."""
    return {r["name"]: (r["features"], r["projects"]) for r in await conn.fetch(USAGE)}
