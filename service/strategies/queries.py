"""Read SQL of the strategy types, and the state their decisions take: a type is a built-in
constant (service/strategies/builtins.py) with its deprecation from `strategy_deprecations`, or
a row of `strategy_definitions`.

Every command on a type first takes the name's advisory lock (`LOCK_NAME`): a name can be
freed (a deletion) and taken again, and a built-in type has no row to lock, so the lock is what
puts two commands on one name one after the other. A flag's strategy that takes up a custom type
locks its row FOR SHARE (service/features/queries.py), so a deletion waits for it and then
counts it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import msgspec

from eventlog.events.strategy_definitions import StrategyParameter
from service.strategies import builtins
from service.strategies.domain import StrategyType

if TYPE_CHECKING:
    import asyncpg

    from eventlog.connections import Conn

LOCKS: Final = 0x73747274  # the advisory locks' first key: strategy type names
LOCK_NAME = "SELECT pg_advisory_xact_lock($1, hashtext($2))"
CUSTOM = """
SELECT d.name, d.title, d.description, d.parameters::text AS parameters,
       coalesce(x.deprecated, false) AS deprecated
FROM strategy_definitions d LEFT JOIN strategy_deprecations x ON x.name = d.name
"""
ALL_CUSTOM = CUSTOM + " ORDER BY d.name"
ONE_CUSTOM = CUSTOM + " WHERE d.name = $1"
LOCK_CUSTOM = ONE_CUSTOM + " FOR UPDATE OF d"
DEPRECATIONS = "SELECT name, deprecated FROM strategy_deprecations WHERE name = ANY($1::text[])"
DEPRECATION = "SELECT deprecated FROM strategy_deprecations WHERE name = $1"
# Strategies of every flag (archived ones too) in every environment.
USED_BY = "SELECT count(*) FROM feature_strategies WHERE name = $1"

_parameters = msgspec.json.Decoder(list[StrategyParameter])


def _custom(row: asyncpg.Record) -> StrategyType:
    return StrategyType(
        name=row["name"],
        display_name=None,
        title=row["title"],
        description=row["description"],
        parameters=_parameters.decode(row["parameters"]),
        deprecated=row["deprecated"],
        built_in=False,
    )


def _built_in(name: str, *, deprecated: bool | None) -> StrategyType:
    constant = builtins.BUILT_IN[name]
    if deprecated is None:
        return constant
    return msgspec.structs.replace(constant, deprecated=deprecated)


async def lock_name(conn: Conn, name: str) -> None:
    await conn.execute(LOCK_NAME, LOCKS, name)


async def strategy_types(conn: Conn) -> list[StrategyType]:
    """Every type: the built-in ones in Unleash's order, then the custom ones by name."""
    rows = await conn.fetch(DEPRECATIONS, list(builtins.BUILT_IN))
    deprecated: dict[str, bool] = {r["name"]: r["deprecated"] for r in rows}
    built_in = [_built_in(name, deprecated=deprecated.get(name)) for name in builtins.BUILT_IN]
    return built_in + [_custom(row) for row in await conn.fetch(ALL_CUSTOM)]


async def strategy_type(conn: Conn, name: str, *, lock: bool = False) -> StrategyType | None:
    """The type of that name, or None; `lock`: its row, when custom, FOR UPDATE."""
    if name in builtins.NAMES:
        return _built_in(name, deprecated=await conn.fetchval(DEPRECATION, name))
    row = await conn.fetchrow(LOCK_CUSTOM if lock else ONE_CUSTOM, name)
    return None if row is None else _custom(row)
