"""Passwords: OWASP strength rules; argon2id hashing off the event loop, a few at a time, with
checks of one shape whether or not the account exists."""

from __future__ import annotations

import asyncio
import functools
import re
import threading
from typing import TYPE_CHECKING, Final, TypeVar

import argon2
from aiohttp import web

from service.errors import TooManyRequests, WeakPassword

if TYPE_CHECKING:
    from collections.abc import Callable

T = TypeVar("T")

MIN_LENGTH: Final = 10
MAX_LENGTH: Final = 128
PASSPHRASE_LENGTH: Final = 20  # long passphrases need none of the character classes
_REPEATS = re.compile(r"(.)\1\1")
_CLASSES: Final = (
    (re.compile(r"[a-z]"), "The password must contain at least one lowercase letter."),
    (re.compile(r"[A-Z]"), "The password must contain at least one uppercase letter."),
    (re.compile(r"[0-9]"), "The password must contain at least one number."),
    (re.compile(r"[^A-Za-z0-9]"), "The password must contain at least one special character."),
)

_hasher = argon2.PasswordHasher()  # argon2id, RFC 9106 low-memory profile (64 MiB, t=3)


def check_strength(password: str) -> None:
    """The rules of the OWASP password strength test, as Unleash configures it."""
    problems: list[str] = []
    if len(password) < MIN_LENGTH:
        problems.append(f"The password must be at least {MIN_LENGTH} characters long.")
    if len(password) > MAX_LENGTH:
        problems.append(f"The password must be fewer than {MAX_LENGTH} characters.")
    if _REPEATS.search(password):
        problems.append(
            "The password may not contain sequences of three or more repeated characters."
        )
    if len(password) < PASSPHRASE_LENGTH:
        problems.extend(message for pattern, message in _CLASSES if not pattern.search(password))
    if problems:  # the first rule broken is the message, as Unleash reports it
        raise WeakPassword(problems)


# Passwords waiting for an argon2 slot, at most; one more is refused at once rather than queued
# without bound (each queued request holds its connection and body until its turn).
MAX_WAITING: Final = 32
BUSY: Final = "Too many passwords are being checked at once; try again in a moment"


class PasswordHashing:
    """The argon2 work of one application. Each hash holds 64 MiB and a core while it runs,
    so `concurrency` run at once (in worker threads, off the event loop), at most MAX_WAITING
    more wait for a slot, and any more are refused with 429. A slot is freed when its hash has
    finished, even when the request that asked for it was cancelled meanwhile."""

    def __init__(self, concurrency: int, max_waiting: int = MAX_WAITING) -> None:
        self._slots = asyncio.Semaphore(concurrency)
        self._max_waiting = max_waiting
        self._waiting = 0
        self._lock = threading.Lock()
        # Hashes and checks computed (in worker threads): now, at most at once, in all.
        self.running = 0
        self.most_running = 0
        self.computed = 0

    async def hash(self, password: str) -> str:
        """argon2id hash of a new password."""
        return await self._run(functools.partial(_hasher.hash, password))

    async def verify(self, password_hash: str | None, password: str) -> bool:
        """One argon2 check whether or not there is a hash (then against a dummy one), so a
        refusal takes as long for an unknown account as for a wrong password."""
        return await self._run(functools.partial(_verify, password_hash, password))

    async def _run(self, work: Callable[[], T]) -> T:
        if self._slots.locked() and self._waiting >= self._max_waiting:
            raise TooManyRequests(BUSY, 1)
        self._waiting += 1
        try:
            await self._slots.acquire()
        finally:
            self._waiting -= 1
        try:
            done = asyncio.get_running_loop().run_in_executor(None, self._counted, work)
        except BaseException:
            self._slots.release()
            raise
        done.add_done_callback(lambda _: self._slots.release())
        return await asyncio.shield(done)  # a cancelled request leaves the hash to finish

    def _counted(self, work: Callable[[], T]) -> T:
        with self._lock:
            self.running += 1
            self.most_running = max(self.most_running, self.running)
            self.computed += 1
        try:
            return work()
        finally:
            with self._lock:
                self.running -= 1


HASHING = web.AppKey("password_hashing", PasswordHashing)


@functools.cache
def _dummy_hash() -> str:
    """Checked when the account is unknown or has no password, so that a failed sign-in costs
    the same time whether or not the account exists."""
    return _hasher.hash("not a password anyone has; only here for equal timing")


def _verify(password_hash: str | None, password: str) -> bool:
    try:
        return (
            _hasher.verify(password_hash or _dummy_hash(), password) and password_hash is not None
        )
    except (argon2.exceptions.VerificationError, argon2.exceptions.InvalidHashError):
        return False
