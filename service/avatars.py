"""Unleash's default avatar of an account: shared by the routes that show people (user records,
a flag's creator and collaborators)."""

from __future__ import annotations

import functools
import hashlib


@functools.lru_cache(maxsize=65536)
def image_url(email: str | None, username: str | None, account_id: int) -> str:
    """The gravatar (sha256) of the e-mail, or else the username (remembered: a page of search
    results hashes up to a thousand of them)."""
    key = (email or username or str(account_id)).strip().lower()
    digest = hashlib.sha256(key.encode()).hexdigest()
    return f"https://gravatar.com/avatar/{digest}?s=42&d=retro&r=g"
