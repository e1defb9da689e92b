"""The service's pool (FairPool, eventlog/connections.py): a released connection goes to the
longest waiter, not to a request that asks while it is on its way back (asyncpg's own pool fails
that test), and a timed wait keeps its place; waits that time out or are cancelled, in any
number and at any moment, give their turns back; a release is bounded by the acquire's timeout;
terminating the pool ends every wait, and a closing or closed pool refuses at once (FairPool as
of commit 3c5a633 fails the tests of the timed wait, the release and the terminate)."""

from __future__ import annotations

import asyncio
import contextlib
import random

import asyncpg
import psutil
import pytest

from eventlog import connections


async def _hold_and_queue(
    pool: asyncpg.Pool, askers: list[tuple[str, float | None]], served: list[str]
) -> tuple[object, list[asyncio.Task[None]]]:
    """The pool's one connection held, and a task per asker started in that order (each asks
    with its timeout as soon as it runs)."""
    held = await pool.acquire()

    async def take(name: str, timeout: float | None) -> None:
        async with pool.acquire(timeout=timeout) as conn:
            served.append(name)
            await conn.fetchval("SELECT 1")

    tasks = [asyncio.create_task(take(name, timeout)) for name, timeout in askers]
    await asyncio.sleep(0.05)  # every one of them waits for the connection
    return held, tasks


async def test_a_released_connection_goes_to_the_longest_waiter(any_dsn: str) -> None:
    # asyncpg's own pool gives it to the one that asks last here: the newcomer is woken in the
    # same turn of the event loop as the connection comes back, before the waiter runs.
    pool = await connections.create_pool(any_dsn, 1)
    try:
        served: list[str] = []
        held, (waiter,) = await _hold_and_queue(pool, [("waiter", None)], served)
        go: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        async def newcomer() -> None:
            await go
            async with pool.acquire():
                served.append("newcomer")

        late = asyncio.create_task(newcomer())
        await asyncio.sleep(0)
        asyncio.get_running_loop().call_soon(go.set_result, None)
        await pool.release(held)  # type: ignore[arg-type]
        await asyncio.wait_for(asyncio.gather(waiter, late), 10)
        assert served == ["waiter", "newcomer"]
    finally:
        await pool.close()


async def test_a_timed_wait_keeps_its_place(any_dsn: str) -> None:
    # with asyncio.wait_for (FairPool as of 3c5a633) the timed one queues a turn of the loop late
    pool = await connections.create_pool(any_dsn, 1)
    try:
        served: list[str] = []
        askers = [("timed first", 5.0), ("untimed second", None), ("timed third", 5.0)]
        held, tasks = await _hold_and_queue(pool, askers, served)
        await pool.release(held)  # type: ignore[arg-type]
        await asyncio.wait_for(asyncio.gather(*tasks), 10)
        assert served == [name for name, _ in askers]
    finally:
        await pool.close()


@pytest.mark.parametrize("size", [1, 2, 3])
async def test_waits_that_time_out_or_are_cancelled_leave_every_turn(
    any_dsn: str, size: int
) -> None:
    pool = await connections.create_pool(any_dsn, size)
    rng = random.Random(size)
    done = 0

    async def client() -> None:
        nonlocal done
        for _ in range(10):
            await asyncio.sleep(rng.random() / 500)
            with contextlib.suppress(TimeoutError):
                async with pool.acquire(timeout=rng.choice([None, 0.001, 0.005])) as conn:
                    await conn.fetchval("SELECT pg_sleep($1)", rng.random() / 1000)
            done += 1

    try:
        clients = [asyncio.create_task(client()) for _ in range(12)]
        for _ in range(20):  # and some cancelled wherever they are
            await asyncio.sleep(rng.random() / 100)
            rng.choice(clients).cancel()
        await asyncio.wait_for(asyncio.gather(*clients, return_exceptions=True), 60)
        assert done > 0
        # every connection free again: all of them taken at once, at once
        async with contextlib.AsyncExitStack() as stack:
            conns = [await stack.enter_async_context(pool.acquire(timeout=2)) for _ in range(size)]
            assert len({await c.fetchval("SELECT pg_backend_pid()") for c in conns}) == size
    finally:
        await pool.close()


async def test_a_wait_that_ends_early_gives_its_turn_back(any_dsn: str) -> None:
    pool = await connections.create_pool(any_dsn, 1)
    try:
        held = await pool.acquire()
        with pytest.raises(TimeoutError):
            await pool.acquire(timeout=0.05)

        async def wait() -> None:
            async with pool.acquire():
                pass

        cancelled = asyncio.create_task(wait())
        await asyncio.sleep(0.05)
        cancelled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        waiter = asyncio.create_task(pool.fetchval("SELECT 2"))
        await asyncio.sleep(0.05)
        await pool.release(held)
        assert await asyncio.wait_for(waiter, 10) == 2
        # and the one connection is free again, to a timed acquire as to any
        async with pool.acquire(timeout=1) as conn:
            assert await conn.fetchval("SELECT 3") == 3
        assert await asyncio.wait_for(pool.fetchval("SELECT 4"), 10) == 4
    finally:
        await pool.close()


async def test_a_release_is_bounded_by_the_acquires_timeout(any_dsn: str) -> None:
    pool = await connections.create_pool(any_dsn, 1)
    backend: psutil.Process | None = None
    try:
        conn = await pool.acquire(timeout=0.5)
        pid = await conn.fetchval("SELECT pg_backend_pid()")
        if not psutil.pid_exists(pid) or "postgres" not in psutil.Process(pid).name():
            pytest.skip("the database's processes are not on this machine")
        query = asyncio.create_task(conn.fetchval("SELECT pg_sleep(30)"))
        await asyncio.sleep(0.1)
        backend = psutil.Process(pid)
        backend.suspend()  # the backend hangs: the cancelled query never ends
        query.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await query
        started = asyncio.get_running_loop().time()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(pool.release(conn), 10)
        assert asyncio.get_running_loop().time() - started < 5
        backend.resume()
        backend = None
        # the turn came back: the pool's one connection is there for the next
        assert await asyncio.wait_for(pool.fetchval("SELECT 5"), 10) == 5
    finally:
        if backend is not None:
            backend.resume()
        await pool.close()


async def test_terminating_the_pool_ends_every_wait(any_dsn: str) -> None:
    pool = await connections.create_pool(any_dsn, 2)
    held = [await pool.acquire(), await pool.acquire()]  # and never released
    waiters = [asyncio.create_task(pool.fetchval("SELECT 1")) for _ in range(3)]
    await asyncio.sleep(0.05)
    pool.terminate()
    outcomes = await asyncio.wait_for(asyncio.gather(*waiters, return_exceptions=True), 5)
    assert all(isinstance(o, asyncpg.InterfaceError) for o in outcomes), outcomes
    for conn in held:  # terminated too
        with pytest.raises(asyncpg.InterfaceError):
            await conn.fetchval("SELECT 1")


@pytest.mark.parametrize("ending", ["close", "terminate"])
async def test_asking_a_closing_or_terminated_pool_fails_at_once(any_dsn: str, ending: str) -> None:
    pool = await connections.create_pool(any_dsn, 1)
    held = await pool.acquire()  # and nobody waiting
    if ending == "close":
        ended = asyncio.create_task(pool.close())  # waits for the connection held
        await asyncio.sleep(0.05)
    else:
        pool.terminate()
    with pytest.raises(asyncpg.InterfaceError):
        await asyncio.wait_for(pool.fetchval("SELECT 1"), 2)
    if ending == "close":
        await pool.release(held)
        await asyncio.wait_for(ended, 10)
