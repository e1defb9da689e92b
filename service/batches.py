"""Group commit: concurrent commands of one kind run together, in one transaction.

A request hands its command to a `Batcher` and waits. A lane takes the commands waiting, in
order, as long as their sizes add up to at most `most` (one at least, however large), and runs
them with one call of `run`: the handler's load, decisions and appends for all of them in one
transaction, so that one COMMIT, one pass through the log's head lock and one round trip per
statement serve them all (docs/architecture.md, "Group commit"). While a lane runs, the next
commands gather for the next one; at most `lanes` run at once.

Each command is answered only when the transaction holding it has committed. When a transaction
of several fails for any reason but an unavailable database (a deadlock with another replica,
say), its commands run again one by one, so that one command's failure is never another's.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

from eventlog import connections

Command = TypeVar("Command")

# A batch's work: all of these in one transaction, which has committed when it returns.
Run = Callable[[Sequence[Command]], Awaitable[None]]


def _one(_command: object) -> int:
    return 1


class Batcher(Generic[Command]):
    def __init__(
        self,
        run: Run[Command],
        *,
        most: int,
        lanes: int,
        size: Callable[[Command], int] = _one,
    ) -> None:
        """`size`: what a command weighs in a batch (1 each by default); a batch weighs at
        most `most`, so that a transaction of many stays about as long as one large command's
        (a batch of large commands would run into the statement timeout)."""
        if most < 1 or lanes < 1:
            raise ValueError("a batch holds a command at least, and one lane runs at least")
        self._run = run
        self._most = most
        self._size = size
        self._lanes = lanes
        self._waiting: list[tuple[Command, asyncio.Future[None]]] = []
        self._busy = 0  # lanes running; counted down in the step that finds nothing waiting
        self._tasks: set[asyncio.Task[None]] = set()  # held, so that none is collected

    @property
    def waiting(self) -> int:
        """Commands handed over and not yet taken into a batch."""
        return len(self._waiting)

    async def submit(self, command: Command) -> None:
        """Returns once the command's transaction committed; raises what made it fail. A
        cancelled caller stops waiting, not the command, which has then committed or not."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        future.add_done_callback(_retrieved)
        self._waiting.append((command, future))
        if self._busy < self._lanes:
            self._busy += 1
            # A context of its own: not the first request's (its log fields, its transaction).
            lane = asyncio.create_task(self._lane(), context=contextvars.Context())
            self._tasks.add(lane)
            lane.add_done_callback(self._tasks.discard)
        await asyncio.shield(future)

    async def _lane(self) -> None:
        try:
            while self._waiting:
                batch = self._next_batch()
                try:
                    await self._settle(batch)
                except BaseException as exc:  # the lane itself cancelled: nobody left hanging
                    _answer(batch, exc)  # (those answered already keep their answer)
                    raise
        finally:
            self._busy -= 1

    def _next_batch(self) -> list[tuple[Command, asyncio.Future[None]]]:
        taken, weight = 0, 0
        for command, _ in self._waiting:
            weight += max(self._size(command), 1)
            if taken and weight > self._most:
                break
            taken += 1
        batch = self._waiting[:taken]
        del self._waiting[:taken]
        return batch

    async def _settle(self, batch: list[tuple[Command, asyncio.Future[None]]]) -> None:
        try:
            await self._run([command for command, _ in batch])
        except Exception as exc:  # handed to the waiting requests
            if len(batch) > 1 and not connections.is_unavailable(exc):
                for one in batch:
                    await self._settle([one])
                return
            _answer(batch, exc)
            return
        _answer(batch, None)


def _answer(batch: list[tuple[Command, asyncio.Future[None]]], exc: BaseException | None) -> None:
    for _, future in batch:
        if future.done():
            continue
        if exc is None:
            future.set_result(None)
        else:
            future.set_exception(exc)


def _retrieved(future: asyncio.Future[None]) -> None:
    """Marks a failure as seen: a caller that stopped waiting does not leave it unread."""
    if not future.cancelled():
        future.exception()
