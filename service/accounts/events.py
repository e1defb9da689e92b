"""Events of the api-token and service-account streams, and of personal access tokens."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

import msgspec

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


AccountType = Literal["User", "Service Account"]


class ServiceAccountCreated(Event, frozen=True, kw_only=True, tag="ServiceAccountCreated"):
    """A machine account was created; it signs in only with its tokens."""

    account_id: int
    username: str
    name: str | None
    root_role: int
    created_at: datetime


class ServiceAccountUpdated(Event, frozen=True, kw_only=True, tag="ServiceAccountUpdated"):
    """The changeable fields of a service account, with their values after the change."""

    account_id: int
    name: str | None
    root_role: int


class ServiceAccountDeleted(Event, frozen=True, kw_only=True, tag="ServiceAccountDeleted"):
    """A service account was deleted: its tokens stop working at once."""

    account_id: int
    username: str
    name: str | None


class PersonalAccessTokenCreated(
    Event, frozen=True, kw_only=True, tag="PersonalAccessTokenCreated"
):
    """A token of a user (stream `user/<id>`) or a service account (`service-account/<id>`).
    Holds the secret's sha256 and a masked hint, never the secret."""

    token_id: int
    user_id: int
    description: str
    secret_hash: str
    secret_hint: str
    created_at: datetime
    expires_at: datetime


class PersonalAccessTokenDeleted(
    Event, frozen=True, kw_only=True, tag="PersonalAccessTokenDeleted"
):
    """A token was revoked; it stops authenticating at once."""

    token_id: int
    user_id: int


class TokenUse(msgspec.Struct, frozen=True, kw_only=True):
    token_id: int
    seen_at: datetime


class PersonalAccessTokensSeen(Event, frozen=True, kw_only=True, tag="PersonalAccessTokensSeen"):
    """Batched use of tokens (stream `token-usage/<replica>`): each replica records the last
    use of each token it saw, every few seconds, instead of one write per request."""

    seen: list[TokenUse]
