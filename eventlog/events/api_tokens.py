"""Stored events of API tokens (stream `api-token/<id>`; their batched use:
`token-usage/api-tokens`)."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from eventlog.events.base import Declared, Event


class ApiTokenCreated(Event, frozen=True, kw_only=True, tag="ApiTokenCreated"):
    """An API token was issued. Holds the secret's sha256 and a masked hint, never the secret."""

    not_personal: ClassVar[tuple[str, ...]] = (
        "token_name",
        "token_type",
        "environment",
        "projects",
        "secret_hash",
        "secret_hint",
    )

    token_id: int
    token_name: str
    token_type: str  # admin, client or frontend
    environment: str
    projects: list[str]
    secret_hash: str
    secret_hint: str
    created_at: datetime
    expires_at: datetime | None = None
    # Its last use when it was created: an import carries the source's (None: never used).
    seen_at: datetime | None = None


class ApiTokenDeleted(Event, frozen=True, kw_only=True, tag="ApiTokenDeleted"):
    """An API token was revoked; it stops authenticating at once."""

    not_personal: ClassVar[tuple[str, ...]] = ("token_name",)

    token_id: int
    token_name: str


class ApiTokenExpiryChanged(Event, frozen=True, kw_only=True, tag="ApiTokenExpiryChanged"):
    """An API token's expiry was set (`PUT /api/admin/api-tokens/{token}`); it stops
    authenticating from then on."""

    not_personal: ClassVar[tuple[str, ...]] = ("token_name",)

    token_id: int
    token_name: str
    expires_at: datetime


class ApiTokenUse(Declared, frozen=True, kw_only=True):
    token_id: int
    seen_at: datetime


class ApiTokensSeen(Event, frozen=True, kw_only=True, tag="ApiTokensSeen"):
    """Batched use of API tokens (stream `token-usage/api-tokens`): each replica records the
    last use of each token it saw, every few seconds, instead of one write per request."""

    seen: list[ApiTokenUse]
