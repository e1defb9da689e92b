"""What every request may need of the instance's settings, read from the database so that
every replica agrees: whether maintenance mode is on (read again for each change the admin API
is asked for), and the frontend API's CORS origins (asked by every frontend API call, so kept
for a moment, within a documented bound)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Final

from eventlog import connections
from eventlog.logs import Throttled
from service.instance import queries

if TYPE_CHECKING:
    import asyncpg

    from eventlog.connections import Conn

# How long a replica keeps the origins it read. A change made on this replica is seen by its
# next request (the commit forgets them, service/app.py); one made on another, within
# milliseconds, when the client feed sees it in the log, and within this bound at the latest.
ORIGINS_SECONDS: Final = 5.0
_unavailable = Throttled("frontend_origins_database_unavailable", every=10.0)


async def maintenance(conn: Conn) -> bool:
    """Maintenance mode as the database says now (no row: never turned on)."""
    return bool(await conn.fetchval(queries.MAINTENANCE))


async def set_origins(conn: Conn) -> tuple[str, ...] | None:
    """The origins set through the API, or None when never set (FRONTEND_API_ORIGINS holds)."""
    origins = await conn.fetchval(queries.ORIGINS)
    return None if origins is None else tuple(origins)


class Origins:
    """The frontend API's CORS origins: those set through the API once set, else the
    environment's (`default`). Read at most every ORIGINS_SECONDS; `forget` reads them again
    at the next request. While the database cannot be reached the last ones read hold (the
    frontend API answers from memory then, service/client/feed.py)."""

    def __init__(self, default: tuple[str, ...], seconds: float = ORIGINS_SECONDS) -> None:
        self.default = default
        self._seconds = seconds
        self._known = default
        self._until = 0.0  # monotonic; 0: read them at the next request
        self._generation = 0

    async def get(self, pool: asyncpg.Pool) -> tuple[str, ...]:
        if time.monotonic() < self._until:
            return self._known
        generation = self._generation
        try:
            async with pool.acquire() as conn:
                found = await set_origins(conn)
        except Exception as exc:
            if not connections.is_unavailable(exc):
                raise
            _unavailable.warning(error=type(exc).__name__)
            return self._known
        origins = self.default if found is None else found
        if generation == self._generation:  # not forgotten meanwhile: keep what was read
            self._known, self._until = origins, time.monotonic() + self._seconds
        return origins

    def forget(self) -> None:
        self._until = 0.0
        self._generation += 1
