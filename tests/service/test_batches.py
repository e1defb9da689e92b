"""service/batches.py: concurrent commands run together; a failure is never another's."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import asyncpg
import pytest

from eventlog import connections
from service.batches import Batcher

if TYPE_CHECKING:
    from collections.abc import Sequence


class Recorder:
    """A batch's work: records each call, waits for `gate`, fails on the commands in `bad`."""

    def __init__(self, bad: set[int] | None = None, error: Exception | None = None) -> None:
        self.calls: list[list[int]] = []
        self.gate = asyncio.Event()
        self.bad = bad or set()
        self.error = error

    async def __call__(self, commands: Sequence[int]) -> None:
        self.calls.append(list(commands))
        await self.gate.wait()
        if self.bad.intersection(commands):
            raise self.error or ValueError(f"bad: {sorted(self.bad.intersection(commands))}")


async def test_commands_that_wait_run_together_in_order_up_to_most() -> None:
    run = Recorder()
    batcher = Batcher(run, most=3, lanes=1)
    waiting = [asyncio.ensure_future(batcher.submit(i)) for i in range(8)]
    await asyncio.sleep(0)
    run.gate.set()
    await asyncio.gather(*waiting)
    # All eight waited before the lane's first step: taken three at a time, in order.
    assert run.calls == [[0, 1, 2], [3, 4, 5], [6, 7]]


async def test_a_batch_weighs_at_most_most_and_a_heavy_command_runs_alone() -> None:
    run = Recorder()
    batcher = Batcher(run, most=1000, lanes=1, size=lambda c: c)
    waiting = [asyncio.ensure_future(batcher.submit(c)) for c in (500, 400, 200, 5000, 1, 0)]
    await asyncio.sleep(0)
    run.gate.set()
    await asyncio.gather(*waiting)
    # A command weighs 1 at least (the 0), and the first of a batch is taken whatever it weighs.
    assert run.calls == [[500, 400], [200], [5000], [1, 0]]


async def test_lanes_run_at_once_and_no_more() -> None:
    run = Recorder()
    batcher = Batcher(run, most=10, lanes=2)
    waiting = []
    for i in range(5):
        waiting.append(asyncio.ensure_future(batcher.submit(i)))
        await asyncio.sleep(0.01)
    assert run.calls == [[0], [1]]  # two lanes busy; the others wait for one of them
    run.gate.set()
    await asyncio.gather(*waiting)
    assert run.calls == [[0], [1], [2, 3, 4]]


async def test_a_failing_command_fails_alone() -> None:
    run = Recorder(bad={2})
    batcher = Batcher(run, most=10, lanes=1)
    run.gate.set()
    waiting = [asyncio.ensure_future(batcher.submit(i)) for i in range(5)]
    answers = await asyncio.gather(*waiting, return_exceptions=True)
    assert [a is None for a in answers] == [True, True, False, True, True]
    assert isinstance(answers[2], ValueError)
    assert [2] in run.calls  # run again alone


async def test_an_unavailable_database_fails_the_whole_batch_at_once() -> None:
    run = Recorder(bad={0, 1, 2, 3}, error=ConnectionRefusedError("down"))
    batcher = Batcher(run, most=10, lanes=1)
    waiting = [asyncio.ensure_future(batcher.submit(i)) for i in range(4)]
    await asyncio.sleep(0)
    run.gate.set()
    answers = await asyncio.gather(*waiting, return_exceptions=True)
    assert all(isinstance(a, ConnectionRefusedError) for a in answers)
    assert run.calls == [[0, 1, 2, 3]]  # once: not again one by one


async def test_a_caller_that_stops_waiting_does_not_stop_its_command() -> None:
    run = Recorder()
    batcher = Batcher(run, most=10, lanes=1)
    leaving = asyncio.ensure_future(batcher.submit(1))
    await asyncio.sleep(0)
    leaving.cancel()
    with pytest.raises(asyncio.CancelledError):
        await leaving
    staying = asyncio.ensure_future(batcher.submit(2))
    run.gate.set()
    await staying
    assert run.calls == [[1], [2]]


async def test_a_command_that_arrives_as_the_last_lane_ends_still_runs() -> None:
    """The lane counts itself out in the step that finds nothing waiting: a submit right after
    starts a new lane instead of waiting for one that has ended."""
    run = Recorder()
    run.gate.set()
    batcher = Batcher(run, most=10, lanes=1)
    for i in range(20):
        await asyncio.wait_for(batcher.submit(i), 1)
    assert [c for call in run.calls for c in call] == list(range(20))


def test_nonsense_sizes_are_refused() -> None:
    with pytest.raises(ValueError, match="at least"):
        Batcher(Recorder(), most=0, lanes=1)
    with pytest.raises(ValueError, match="at least"):
        Batcher(Recorder(), most=1, lanes=0)


def test_asyncpg_errors_that_mean_down_are_unavailable() -> None:
    """The batcher's test of "down" is the service's (eventlog.connections.is_unavailable)."""
    assert connections.is_unavailable(asyncpg.CannotConnectNowError("starting"))
    assert not connections.is_unavailable(asyncpg.DeadlockDetectedError("deadlock"))


async def test_a_lane_cancelled_in_a_retry_leaves_no_command_waiting() -> None:
    """A batch that failed runs again one by one; a lane cancelled meanwhile (the process
    stopping) answers every command it had taken, not only the one it was running."""
    calls: list[list[int]] = []
    never = asyncio.Event()

    async def run(commands: Sequence[int]) -> None:
        calls.append(list(commands))
        if len(commands) > 1:
            raise ValueError("the batch fails")
        await never.wait()  # the first one alone hangs

    batcher = Batcher(run, most=10, lanes=1)
    waiting = [asyncio.ensure_future(batcher.submit(i)) for i in range(4)]
    while calls != [[0, 1, 2, 3], [0]]:
        await asyncio.sleep(0)
    (lane,) = batcher._tasks
    lane.cancel()
    answers = await asyncio.wait_for(asyncio.gather(*waiting, return_exceptions=True), 1)
    assert all(isinstance(a, asyncio.CancelledError) for a in answers), answers
