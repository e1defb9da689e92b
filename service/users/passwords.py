"""Passwords: OWASP strength rules, argon2id hashing off the event loop, constant-shape checks."""

from __future__ import annotations

import asyncio
import functools
import re
from typing import Final

import argon2

from service.errors import WeakPassword

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
    if problems:  # the first rule broken, as Unleash reports it
        raise WeakPassword(problems[0])


async def hash_password(password: str) -> str:
    """argon2id hash in a worker thread: about 0.1 s of CPU that must not stall other requests."""
    return await asyncio.to_thread(_hasher.hash, password)


@functools.cache
def _dummy_hash() -> str:
    """Checked when the account is unknown or has no password, so that a failed sign-in costs
    the same time whether or not the account exists."""
    return _hasher.hash("not a password anyone has; only here for equal timing")


async def verify_password(password_hash: str | None, password: str) -> bool:
    return await asyncio.to_thread(_verify, password_hash, password)


def _verify(password_hash: str | None, password: str) -> bool:
    try:
        return (
            _hasher.verify(password_hash or _dummy_hash(), password) and password_hash is not None
        )
    except (argon2.exceptions.VerificationError, argon2.exceptions.InvalidHashError):
        return False
