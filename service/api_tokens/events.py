"""Stored events of API tokens (stream `api-token/<id>`)."""

from __future__ import annotations

from datetime import datetime

from service.events import Event


class ApiTokenCreated(Event, frozen=True, kw_only=True, tag="ApiTokenCreated"):
    """An API token was issued. Holds the secret's sha256 and a masked hint, never the secret."""

    token_id: int
    token_name: str
    token_type: str  # admin, client or frontend
    environment: str
    projects: list[str]
    secret_hash: str
    secret_hint: str
    created_at: datetime
    expires_at: datetime | None = None


class ApiTokenDeleted(Event, frozen=True, kw_only=True, tag="ApiTokenDeleted"):
    """An API token was revoked; it stops authenticating at once."""

    token_id: int
    token_name: str
