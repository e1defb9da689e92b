"""Reads at a past instant (`?at=` on the read routes): the read models rebuilt from the log up
to that instant into this connection's temporary copies of them, and the route's own SQL run
on those, so that the answer is the one the route gave then."""

from __future__ import annotations

import contextlib
import functools
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

import eventlog
from projections.rebuild import rebuild, tables
from projections.registry import INLINE
from service.appkeys import PAST_READS, POOL
from service.http.instants import parse_instant
from service.http.requests import query_param

# The instant a read is about, in SQL: now, or in a read of a past state (`?at=`) the time it
# reads, which `reading_at` sets for its transaction (`flagstore.clock`).
CLOCK: Final = "coalesce(nullif(current_setting('flagstore.clock', true), '')::timestamptz, now())"

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aiohttp import web

    from eventlog.connections import Conn

AT: Final = "at"  # the query parameter


def in_past(request: web.Request) -> bool:
    """Whether the request reads a past state (`?at=`)."""
    return query_param(request, AT) not in (None, "")


@contextlib.asynccontextmanager
async def reading(request: web.Request) -> AsyncIterator[Conn]:
    """A connection on the read models as they are, or, with `?at=` (an RFC 3339 time or a
    log position), as they were then. Routes that use it declare `past=True`."""
    if not in_past(request):
        async with request.app[POOL].acquire() as conn:
            yield conn
        return
    instant = parse_instant(query_param(request, AT) or "", AT)
    async with request.app[PAST_READS], request.app[POOL].acquire() as conn:
        position = await instant.position_in(conn)
        # What depends on the time as well (a flag's age: potentially stale) is as of then.
        clock = instant.time or await eventlog.time_of(conn, position)
        async with state_at(conn, position, clock=clock and min(clock, datetime.now(UTC))):
            yield conn


@functools.cache
def _temporary_tables() -> str:
    """Temporary tables like the read models, made once per connection (they live as long as
    it does, and are empty outside `state_at`, whose transactions always roll back)."""
    like = "INCLUDING DEFAULTS INCLUDING GENERATED"
    created = " ".join(f"CREATE TEMPORARY TABLE {t} (LIKE readmodel.{t} {like});" for t in tables())
    return (
        f"DO $$ BEGIN IF to_regclass('pg_temp.{tables()[0]}') IS NULL THEN {created} END IF; END $$"
    )


@contextlib.asynccontextmanager
async def state_at(
    conn: Conn, position: int, *, clock: datetime | None = None
) -> AsyncIterator[int]:
    """Inside a transaction that always rolls back: every read model rebuilt up to a position
    into the connection's temporary tables (empty, since every such transaction rolls back),
    first on the search path; the live tables stay untouched, and no other session can see
    temporary ones. `clock`: the time the reads are about (`flagstore.clock`, which
    CLOCK reads), else now."""
    await conn.execute(_temporary_tables())
    tx = conn.transaction(isolation="repeatable_read")
    await tx.start()
    try:
        await conn.execute("SET LOCAL search_path = pg_temp, public")
        if clock is not None:
            await conn.execute("SELECT set_config('flagstore.clock', $1, true)", clock.isoformat())
        # The read models routes read: the inline ones (the reporting counts are left empty).
        await rebuild(conn, {p.name: position for p in INLINE}, among=INLINE)
        yield position
    finally:
        await tx.rollback()
    # The rows rolled back are dead tuples that nothing else would ever clean (autovacuum
    # leaves temporary tables alone): VACUUM removes them and empties the files again, cheaply, as
    # the tables are small.
    await conn.execute(f"VACUUM {', '.join(tables())}")
