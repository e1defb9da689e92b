"""Batched `seenAt` of tokens (personal access tokens and API tokens): remembered in memory,
written every few seconds."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final, NamedTuple

import structlog

from eventlog import connections
from eventlog.events.base import SYSTEM
from eventlog.logs import Throttled
from service.api_tokens import domain as api_tokens
from service.users import domain as users

if TYPE_CHECKING:
    from collections.abc import Callable, Collection

    import asyncpg

    from eventlog.codec import DomainEvent
    from service.auth import TokenKind
    from service.work import Work

log = structlog.get_logger()

FLUSH_SECONDS: Final = 2.0  # the loop's tick: each kind is written at its own interval
_unavailable = Throttled("token_usage_database_unavailable", every=10.0)


class _Kind(NamedTuple):
    stream: tuple[str, str]
    record: Callable[[dict[int, datetime]], DomainEvent | None]
    every: float  # seconds between its batches


# Each kind of token: the stream its batches go to, the decision that makes the event, and how
# often. SDKs poll all the time: their tokens' use is written once a minute (as Unleash
# updates its tokens' last use in batches too), so that the log holds 1,440 such events a day
# and replica rather than one every tick; a person's token within seconds.
KINDS: Final[dict[TokenKind, _Kind]] = {
    "personal-access-token": _Kind(
        ("token-usage", "personal-access-tokens"), users.record_token_use, FLUSH_SECONDS
    ),
    "api-token": _Kind(("token-usage", "api-tokens"), api_tokens.record_token_use, 60.0),
}


class TokenUsage:
    """Last use per token since the last flush, by kind. One event per kind and flush, not one
    write per request; several replicas each flush their own (the projections keep the latest
    time)."""

    def __init__(self, work: Work) -> None:
        self._seen: dict[TokenKind, dict[int, datetime]] = {kind: {} for kind in KINDS}
        self._work = work

    def seen(self, token_id: int, kind: TokenKind = "personal-access-token") -> None:
        self._seen[kind][token_id] = datetime.now(UTC)

    async def flush(self, pool: asyncpg.Pool, kinds: Collection[TokenKind] = tuple(KINDS)) -> int:
        """Append what was seen of these kinds (all by default), in one transaction; the number
        of tokens written."""
        batches = {kind: self._seen[kind] for kind in kinds if self._seen[kind]}
        if not batches:
            return 0
        for kind in batches:
            self._seen[kind] = {}
        try:
            async with self._work.on(pool) as uow:
                for kind, batch in batches.items():
                    event = KINDS[kind].record(batch)
                    assert event is not None  # the batch is not empty
                    await uow.append(KINDS[kind].stream, [event], SYSTEM)
        except Exception:
            for kind, batch in batches.items():  # keep them for the next try
                kept = self._seen[kind]
                for token_id, at in batch.items():
                    kept[token_id] = max(at, kept.get(token_id, at))
            raise
        return sum(len(batch) for batch in batches.values())

    async def run(self, pool: asyncpg.Pool, stop: asyncio.Event) -> None:
        """Flush each kind at its interval until stopped, then all once more."""
        loop = asyncio.get_running_loop()
        last = dict.fromkeys(KINDS, loop.time())
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), FLUSH_SECONDS)
            now = loop.time()
            due = [k for k, v in KINDS.items() if stop.is_set() or now - last[k] >= v.every]
            try:
                await self.flush(pool, due)
                last.update(dict.fromkeys(due, now))
            except Exception as exc:
                if not connections.is_unavailable(exc):
                    log.exception("token_usage_flush_failed")
                else:  # kept in memory; the next flush after the outage writes it
                    _unavailable.warning(error=type(exc).__name__)
