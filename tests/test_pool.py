"""The service's pool (FairPool, service/connections.py) hands connections out in the order
they are asked for: to the longest waiter, not to a request that asks while a released
connection is on its way to it, and nobody is overtaken by more than a few; a wait that times
out or is cancelled gives its turn back. asyncpg's own pool fails the first two tests."""

from __future__ import annotations

import asyncio
import random

import pytest

from service import connections


async def test_a_released_connection_goes_to_the_longest_waiter(any_dsn: str) -> None:
    # asyncpg's own pool gives it to the one that asks last here: the newcomer is woken in the
    # same turn of the event loop as the connection comes back, before the waiter runs.
    pool = await connections.create_pool(any_dsn, 1)
    try:
        held = await pool.acquire()
        served: list[str] = []

        async def take(name: str, go: asyncio.Future[None] | None = None) -> None:
            if go is not None:
                await go
            async with pool.acquire() as conn:
                served.append(name)
                await conn.fetchval("SELECT 1")

        waiter = asyncio.create_task(take("waiter"))
        await asyncio.sleep(0.05)  # it waits for the connection
        go: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        newcomer = asyncio.create_task(take("newcomer", go))
        await asyncio.sleep(0)
        asyncio.get_running_loop().call_soon(go.set_result, None)
        await pool.release(held)
        await asyncio.wait_for(asyncio.gather(waiter, newcomer), 10)
        assert served == ["waiter", "newcomer"]
    finally:
        await pool.close()


@pytest.mark.parametrize("size", [1, 2, 3])
async def test_connections_are_handed_out_in_the_order_asked(any_dsn: str, size: int) -> None:
    pool = await connections.create_pool(any_dsn, size)
    rng = random.Random(size)
    asked: list[int] = []
    served: list[int] = []

    async def client(number: int) -> None:
        for round_ in range(8):
            await asyncio.sleep(rng.random() / 500)
            ticket = number * 100 + round_
            asked.append(ticket)
            async with pool.acquire() as conn:
                served.append(ticket)
                await conn.fetchval("SELECT pg_sleep($1)", rng.random() / 1000)

    try:
        async with pool.acquire() as conn:  # every connection opened before the clock starts
            await conn.fetchval("SELECT 1")
        await asyncio.wait_for(asyncio.gather(*(client(n) for n in range(12))), 60)
    finally:
        await pool.close()
    assert sorted(served) == sorted(asked)
    assert len(served) == 12 * 8
    # First come, first served, but for the few that get a turn while connections are on their
    # way back (FairPool.release): none is overtaken by more than the pool's size.
    position = {ticket: i for i, ticket in enumerate(served)}
    overtaken = [
        sum(position[later] < position[t] for later in asked[i + 1 :]) for i, t in enumerate(asked)
    ]
    assert max(overtaken) <= size


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
