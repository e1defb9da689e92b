"""Batched `seenAt` of personal access tokens: remembered in memory, written every few seconds."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

import structlog

from eventlog import connections
from eventlog.events.base import SYSTEM
from eventlog.logs import Throttled
from service.users import domain

if TYPE_CHECKING:
    import asyncpg

    from service.work import Work

log = structlog.get_logger()

FLUSH_SECONDS: Final = 2.0
STREAM: Final = ("token-usage", "personal-access-tokens")
_unavailable = Throttled("token_usage_database_unavailable", every=10.0)


class TokenUsage:
    """Last use per token since the last flush. One event per flush, not one write per request;
    several replicas each flush their own (the projection keeps the latest time)."""

    def __init__(self, work: Work) -> None:
        self._seen: dict[int, datetime] = {}
        self._work = work

    def seen(self, token_id: int) -> None:
        self._seen[token_id] = datetime.now(UTC)

    async def flush(self, pool: asyncpg.Pool) -> int:
        if not self._seen:
            return 0
        batch, self._seen = self._seen, {}
        event = domain.record_token_use(batch)
        assert event is not None  # the batch is not empty
        try:
            async with self._work.on(pool) as uow:
                await uow.append(STREAM, [event], SYSTEM)
        except Exception:
            for token_id, at in batch.items():  # keep them for the next try
                self._seen[token_id] = max(at, self._seen.get(token_id, at))
            raise
        return len(batch)

    async def run(self, pool: asyncpg.Pool, stop: asyncio.Event) -> None:
        """Flush every FLUSH_SECONDS until stopped, then once more."""
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), FLUSH_SECONDS)
            try:
                await self.flush(pool)
            except Exception as exc:
                if not connections.is_unavailable(exc):
                    log.exception("token_usage_flush_failed")
                else:  # kept in memory; the next flush after the outage writes it
                    _unavailable.warning(error=type(exc).__name__)
