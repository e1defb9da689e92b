"""The run state of a serving process, which the middlewares and the graceful stop share."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field


@dataclass
class Lifecycle:
    """Mutable run state: draining turns /ready to 503 during a graceful stop; aborting is set
    when the stop's timeout ran out and the requests still running are cancelled (each is
    answered 503 by the error middleware instead of losing its connection)."""

    draining: bool = False
    aborting: bool = False
    running: set[asyncio.Task[object]] = field(default_factory=set)

    @property
    def in_flight(self) -> int:
        return len(self.running)

    def started(self) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.running.add(task)

    def finished(self) -> None:
        self.running.discard(asyncio.current_task())

    def abort(self) -> None:
        self.aborting = True
        for task in self.running:
            task.cancel()
