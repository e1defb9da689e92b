"""Events of the api-token stream."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from service.events import Event

TokenType = Literal["admin", "client", "frontend"]


class ApiTokenCreated(Event, frozen=True, kw_only=True, tag="ApiTokenCreated"):
    """An API token was issued. Holds the secret's sha256 and a masked hint, never the secret."""

    token_id: int
    token_name: str
    token_type: TokenType
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
