"""Connections: the pool the service answers from, and single connections for commands."""

from __future__ import annotations

import asyncio
import contextlib
import re
from typing import TYPE_CHECKING, Any

import asyncpg
from asyncpg.pool import PoolConnectionProxy

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

# A plain connection or one borrowed from the pool: the code paths accept both.
Conn = asyncpg.Connection | PoolConnectionProxy

# pg_temp listed last: a session's temporary tables (past states, service/http/past.py) never
# shadow the read models (unlisted, PostgreSQL would search it first).
SEARCH_PATH = "readmodel, public, pg_temp"


def set_search_path(schema: str) -> str:
    """The statement that puts a schema's tables first for the rest of the transaction, before
    public and, explicitly last, the session's temporary tables (see SEARCH_PATH). Every
    search_path the code sets is made here (tests/service/test_layout.py)."""
    return f"SET LOCAL search_path = {schema}, public, pg_temp"


# A connection attempt gives up after this long (asyncpg's default is 60 s): while the database
# host does not answer at all, requests get their 503 soon instead of hanging.
CONNECT_TIMEOUT = 5.0


async def _keep_session(_conn: asyncpg.Connection) -> None:
    """Pool connections carry no session state to undo: code that takes advisory locks, LISTENs
    or SETs for the session does so on a connection of its own, and pooled work stays inside
    transactions (which asyncpg still rolls back if one is left open). Skipping asyncpg's
    default reset query saves a round trip on every release (docs/benchmarks.md)."""


class FairPool(asyncpg.Pool):
    """asyncpg's pool, handing connections out in the order they were asked for.

    asyncpg's own waits on an asyncio.Queue, which is not first come, first served: a released
    connection wakes the longest waiter, but a request that asks in between (a new one, in the
    same turn of the event loop) takes it first, and the waiter, finding none, queues again at
    the back. Under load a request can be overtaken dozens of times, a long tail in the p99
    (docs/benchmarks.md, runs M and N). So a connection is taken only
    with a turn from a semaphore of the pool's size, which asyncio hands to its waiters in
    order. The turn is given back as the release starts, a turn of the loop or two before
    asyncpg has the connection back in its queue, so that none idles while the next in line
    wakes; those who hold a turn and wait for that connection may pass each other there (the
    order among the few whose turn came while connections were on their way back), nobody
    else can. An acquire's timeout covers the wait for a turn as well, and bounds the
    connection's release, as in asyncpg."""

    def __init__(self, dsn: str, *, max_size: int, **kwargs: Any) -> None:
        super().__init__(dsn, max_size=max_size, **kwargs)
        self._turns = asyncio.Semaphore(max_size)
        self._waiting = 0  # for a turn
        # the connections taken with a turn, each with its acquire's timeout
        self._holding: dict[PoolConnectionProxy, float | None] = {}

    async def _acquire(self, timeout: float | None) -> PoolConnectionProxy:  # noqa: ASYNC109 - asyncpg calls it so
        if self.is_closing():  # asyncpg's own check, which comes after the wait for a turn
            raise asyncpg.InterfaceError("pool is closing or closed")
        # asyncio.timeout, not wait_for: the wait stays in this task, so it queues for its turn
        # at once (wait_for's task would queue a turn of the loop later, behind later askers)
        async with asyncio.timeout(timeout):
            self._waiting += 1
            try:
                await self._turns.acquire()
            finally:
                self._waiting -= 1
            try:
                # a turn means a connection is in the pool, or on its way back
                conn: PoolConnectionProxy = await super()._acquire(None)  # type: ignore[misc]
            except BaseException:
                self._turns.release()
                raise
        self._holding[conn] = timeout
        return conn

    async def release(
        self,
        connection: PoolConnectionProxy,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 - asyncpg's signature
    ) -> None:
        if connection in self._holding:
            acquired_with = self._holding.pop(connection)
            if timeout is None:  # asyncpg's rule: the acquire's timeout bounds the release
                timeout = acquired_with
            # the next in line is woken now and waits while the connection goes back, not after
            self._turns.release()
        await super().release(connection, timeout=timeout)

    def terminate(self) -> None:
        super().terminate()
        # those waiting for a turn would wait for releases that may never come: let them on,
        # to asyncpg's error for a closed pool
        for _ in range(self._waiting):
            self._turns.release()


async def create_pool(dsn: str, size: int, command_timeout: float | None = None) -> asyncpg.Pool:
    """The service's pool (FairPool). command_timeout bounds each statement (and the rollback
    after one that timed out), so that a database that accepts connections but does not answer
    (frozen, partitioned) gets the requests that hold a connection their 503 instead of holding
    them for as long as it lasts. Those waiting for a connection have no bound of their own yet:
    under a full freeze they wait until connections come back (docs/operations.md, "When the
    database goes away")."""
    # what asyncpg.create_pool passes, with its defaults
    return await FairPool(
        dsn,
        min_size=min(2, size),
        max_size=size,
        max_queries=50_000,
        max_inactive_connection_lifetime=300.0,
        loop=None,
        connection_class=asyncpg.Connection,
        record_class=asyncpg.Record,
        server_settings={"search_path": SEARCH_PATH, "application_name": "flagstore"},
        reset=_keep_session,
        timeout=CONNECT_TIMEOUT,
        command_timeout=command_timeout,
    )


async def snapshot_of(conn: Conn) -> str:
    """The snapshot of the transaction open on conn, for `sharing` (it must stay open until
    every connection that shares it has begun)."""
    snapshot = str(await conn.fetchval("SELECT pg_export_snapshot()"))
    if not _SNAPSHOT.fullmatch(snapshot):  # it goes into SQL text below
        raise ValueError(f"unexpected snapshot id {snapshot!r}")
    return snapshot


_SNAPSHOT = re.compile(r"[0-9A-F]+-[0-9A-F]+-[0-9]+")


@contextlib.asynccontextmanager
async def sharing(
    pool: asyncpg.Pool, snapshot: str, *, wait: float | None = None
) -> AsyncIterator[Conn]:
    """Another connection in a read-only transaction that sees exactly what the transaction
    which exported `snapshot` (pg_export_snapshot(), still open) sees: so that two queries of
    one answer run at once and agree. TimeoutError when none is free within `wait` seconds."""
    async with (
        pool.acquire(timeout=wait) as conn,
        conn.transaction(isolation="repeatable_read", readonly=True),
    ):
        await conn.execute(f"SET TRANSACTION SNAPSHOT '{snapshot}'")
        yield conn


async def connect(dsn: str) -> asyncpg.Connection:
    return await asyncpg.connect(
        dsn, server_settings={"search_path": SEARCH_PATH}, timeout=CONNECT_TIMEOUT
    )


# Failures that mean "the database cannot be reached right now", not "this query is wrong":
# refused or broken connections, a server shutting down, starting up or out of connections.
_UNAVAILABLE = (
    OSError,  # refused, reset, unreachable; ConnectionResetError from a client is handled first
    TimeoutError,  # connect timeout
    asyncpg.PostgresConnectionError,  # class 08, and asyncpg's ConnectionDoesNotExistError
    asyncpg.AdminShutdownError,
    asyncpg.CrashShutdownError,
    asyncpg.CannotConnectNowError,
    asyncpg.TooManyConnectionsError,
    # asyncpg's protocol state on a connection whose operation broke off (a statement timed out
    # on a server that stopped answering): "cannot switch to state 15; another operation ..."
    asyncpg.InternalClientError,
)


def is_unavailable(exc: BaseException) -> bool:
    """True when exc says the database is unreachable, restarting or full."""
    if isinstance(exc, _UNAVAILABLE):
        return True
    # A call on a connection the server closed: "cannot perform operation: connection is closed".
    return isinstance(exc, asyncpg.InterfaceError) and "connection is closed" in str(exc)
