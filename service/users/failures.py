"""Failed sign-ins counted in memory between the UserSignInFailed events of an account (at most
one per account per minute from each replica), and recorded by a background task."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

import structlog
from aiohttp import web

from eventlog import connections
from eventlog.events.base import Metadata
from eventlog.events.users import UserSignInFailed
from eventlog.logs import Throttled
from service.users import domain, queries
from service.users.domain import SignInFailures

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    import asyncpg

    from eventlog.codec import DomainEvent
    from service.work import Work

log = structlog.get_logger()

FLUSH_SECONDS: Final = 5.0  # how often the minute of each account is looked at
NOTHING: Final = SignInFailures()
_unavailable = Throttled("failed_sign_ins_database_unavailable", every=10.0)


class FailedSignIns:
    """Per account: the wrong passwords counted since its last UserSignInFailed, and when
    this replica last recorded one. Only accounts that exist get here (a wrong password for
    an unknown name is not counted anywhere), and each is forgotten a minute after its last
    record; the memory held is bounded by the attempts of about a minute."""

    def __init__(self, work: Work) -> None:
        self._accounts: dict[int, SignInFailures] = {}
        self._work = work

    def of(self, account_id: int) -> SignInFailures:
        return self._accounts.get(account_id, NOTHING)

    def pending(self) -> int:
        """Attempts counted and not yet recorded, over all accounts."""
        return sum(f.unrecorded.count for f in self._accounts.values() if f.unrecorded)

    @contextlib.contextmanager
    def deciding(
        self, account_id: int
    ) -> Iterator[Callable[[SignInFailures, Sequence[DomainEvent]], None]]:
        """Around the transaction of a decision on the account's failures, under its row lock.
        keep(failures, events) sets what is kept at once, before COMMIT, so that the next
        holder of the lock decides on it; when the transaction then fails, the attempts its
        UserSignInFailed carried are counted again, to be recorded later."""
        unstored: list[UserSignInFailed] = []

        def keep(failures: SignInFailures, events: Sequence[DomainEvent]) -> None:
            self._set(account_id, failures)
            unstored[:] = [e for e in events if isinstance(e, UserSignInFailed)]

        try:
            yield keep
        except BaseException:
            for event in unstored:
                given_back = domain.Unrecorded(
                    count=event.attempts,
                    first_at=event.first_attempted_at,
                    last_at=event.attempted_at,
                )
                again = SignInFailures(unrecorded=given_back)
                self._set(account_id, self.of(account_id).merged(again))
            raise

    def _set(self, account_id: int, failures: SignInFailures) -> None:
        if failures == NOTHING:
            self._accounts.pop(account_id, None)
        else:
            self._accounts[account_id] = failures

    async def flush(
        self, pool: asyncpg.Pool, *, everything: bool = False, now: datetime | None = None
    ) -> int:
        """Records the counted attempts of every account whose minute has passed by `now`
        (of every account, when the service stops); forgets accounts with nothing left to
        count. Returns how many events were appended."""
        now = now or datetime.now(UTC)
        appended = 0
        for account_id, failures in list(self._accounts.items()):
            if failures.unrecorded is None:
                if not failures.recorded_within_a_minute(now):
                    self._accounts.pop(account_id, None)
            elif everything or not failures.recorded_within_a_minute(now):
                try:
                    appended += await self._record(pool, account_id, now)
                except Exception as exc:  # kept in memory, tried again at the next flush
                    if not connections.is_unavailable(exc):
                        log.exception("failed_sign_ins_flush_failed", user_id=account_id)
                    else:
                        _unavailable.warning(error=type(exc).__name__)
        return appended

    async def _record(self, pool: asyncpg.Pool, account_id: int, now: datetime) -> int:
        with self.deciding(account_id) as keep:
            async with self._work.on(pool) as uow:
                account = await queries.lock_account(uow.conn, account_id)
                event = domain.record_failed_sign_ins(account, self.of(account_id))
                if event is not None and account is not None:
                    name = account.name or account.username or account.email
                    meta = account_metadata(account.id, name, request_id=None)
                    await uow.append(domain.user_stream(account.id), [event], meta)
                keep(SignInFailures(recorded_at=now), [event] if event else [])
        return 1 if event else 0

    async def run(self, pool: asyncpg.Pool, stop: asyncio.Event) -> None:
        """Flush every FLUSH_SECONDS until stopped, then record everything counted."""
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), FLUSH_SECONDS)
            try:
                await self.flush(pool, everything=stop.is_set())
            except Exception:
                log.exception("failed_sign_ins_flush_failed")


FAILED_SIGN_INS = web.AppKey("failed_sign_ins", FailedSignIns)


def account_metadata(user_id: int, name: str | None, *, request_id: str | None) -> Metadata:
    """Sign-in and sign-out happen before (and after) a principal exists: the account acts.
    Failures recorded by the background task name no request (they stand for several)."""
    return Metadata(
        actor_id=f"user:{user_id}",
        actor_name=name or str(user_id),
        actor_kind="user",
        request_id=request_id,
    )
