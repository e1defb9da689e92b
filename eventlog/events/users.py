"""Stored events of accounts: people (stream `user/<id>`), service accounts
(`service-account/<id>`), their personal access tokens, and batches (`user-batch/<uuid>`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from eventlog.events.base import Declared, Event, Personal, Upcasters


class UserCreated(Event, frozen=True, kw_only=True, tag="UserCreated"):
    """A person's account was created. A password, when given, follows as PasswordChanged."""

    personal: ClassVar[Personal | None] = Personal(
        owner="user_id", fields=("name", "username", "email")
    )

    user_id: int
    name: str | None
    username: str | None
    email: str | None
    root_role: int
    created_at: datetime


class UserUpdated(Event, frozen=True, kw_only=True, tag="UserUpdated"):
    """The changeable fields of an account, with their values after the change."""

    personal: ClassVar[Personal | None] = Personal(owner="user_id", fields=("name", "email"))

    user_id: int
    name: str | None
    email: str | None
    root_role: int


class UserDeleted(Event, frozen=True, kw_only=True, tag="UserDeleted"):
    """An account was deleted: its sessions and personal access tokens end with it."""

    personal: ClassVar[Personal | None] = Personal(
        owner="user_id", fields=("name", "username", "email")
    )

    user_id: int
    name: str | None
    username: str | None
    email: str | None


class PasswordChanged(Event, frozen=True, kw_only=True, tag="PasswordChanged"):
    """A new password, as its argon2id hash only. Ends the account's sessions and reset links
    and resets its failed sign-in count."""

    not_personal: ClassVar[tuple[str, ...]] = ("password_hash",)

    user_id: int
    password_hash: str


class PasswordResetRequested(Event, frozen=True, kw_only=True, tag="PasswordResetRequested"):
    """An admin made a reset link for a person: the link's token is known by its sha256 only,
    and holds until `expires_at` or until any new password (a reset with it, or another way),
    whichever comes first. A newer link of the same person replaces it."""

    not_personal: ClassVar[tuple[str, ...]] = ("token_hash",)

    user_id: int
    token_hash: str
    expires_at: datetime


class UserSignedIn(Event, frozen=True, kw_only=True, tag="UserSignedIn"):
    """A successful sign-in: sets `seenAt`, resets failed attempts, opens a session (known
    by the sha256 of its cookie value only)."""

    not_personal: ClassVar[tuple[str, ...]] = ("session_hash",)

    user_id: int
    seen_at: datetime
    session_hash: str
    session_expires_at: datetime


class UserSignInFailed(Event, frozen=True, kw_only=True, tag="UserSignInFailed"):
    """Wrong passwords for an existing account: `attempts` of them (at least 1), from
    `first_attempted_at` to `attempted_at`; `login_attempts` is the account's count after them.
    Version 2: a replica records one of these per account per minute at most, and counts the
    attempts in between (version 1 stood for one attempt)."""

    schema_version: ClassVar[int] = 2

    user_id: int
    attempts: int
    first_attempted_at: datetime
    attempted_at: datetime
    login_attempts: int


class UserSignedOut(Event, frozen=True, kw_only=True, tag="UserSignedOut"):
    """A session was ended by its owner."""

    not_personal: ClassVar[tuple[str, ...]] = ("session_hash",)

    user_id: int
    session_hash: str


class UserRecord(Declared, frozen=True, kw_only=True):
    """An account as it was: what a batch event carries for each user it touches."""

    personal: ClassVar[Personal | None] = Personal(
        owner="user_id", fields=("name", "username", "email")
    )

    user_id: int
    name: str | None
    username: str | None
    email: str | None
    root_role: int
    created_at: datetime
    seen_at: datetime | None = None


class UsersDeleted(Event, frozen=True, kw_only=True, tag="UsersDeleted"):
    """Inactive users deleted in one transaction (stream `user-batch/<uuid>`): their rows,
    password hashes, sessions and tokens leave the read models. `users` holds each one as it
    was just before."""

    users: list[UserRecord]
    inactive_days: int
    deleted_at: datetime


class ImportedUser(UserRecord, frozen=True, kw_only=True):
    """`source_id`: the user's id at the source, when the source has ids (`import-unleash`),
    so that a later import recognises the person whatever their e-mail has become."""

    not_personal: ClassVar[tuple[str, ...]] = ("password_hash",)
    password_hash: str | None = None
    source_id: int | None = None


class UsersImported(Event, frozen=True, kw_only=True, tag="UsersImported"):
    """Up to 1,000 users brought in by `python -m service import-users` or `import-unleash`
    (stream `user-batch/<uuid>`), with `createdAt` and `seenAt` as the source had them."""

    not_personal: ClassVar[tuple[str, ...]] = ("source",)

    users: list[ImportedUser]
    source: str


class ServiceAccountCreated(Event, frozen=True, kw_only=True, tag="ServiceAccountCreated"):
    """A machine account was created; it signs in only with its tokens."""

    not_personal: ClassVar[tuple[str, ...]] = ("username", "name")

    account_id: int
    username: str
    name: str | None
    root_role: int
    created_at: datetime


class ServiceAccountUpdated(Event, frozen=True, kw_only=True, tag="ServiceAccountUpdated"):
    """The changeable fields of a service account, with their values after the change."""

    not_personal: ClassVar[tuple[str, ...]] = ("name",)

    account_id: int
    name: str | None
    root_role: int


class ServiceAccountDeleted(Event, frozen=True, kw_only=True, tag="ServiceAccountDeleted"):
    """A service account was deleted: its tokens stop working at once."""

    not_personal: ClassVar[tuple[str, ...]] = ("username", "name")

    account_id: int
    username: str
    name: str | None


class PersonalAccessTokenCreated(
    Event, frozen=True, kw_only=True, tag="PersonalAccessTokenCreated"
):
    """A token of a user (stream `user/<id>`) or a service account (`service-account/<id>`).
    Holds the secret's sha256 and a masked hint, never the secret."""

    not_personal: ClassVar[tuple[str, ...]] = ("description", "secret_hash", "secret_hint")

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


class TokenUse(Declared, frozen=True, kw_only=True):
    token_id: int
    seen_at: datetime


class PersonalAccessTokensSeen(Event, frozen=True, kw_only=True, tag="PersonalAccessTokensSeen"):
    """Batched use of tokens (stream `token-usage/<replica>`): each replica records the last
    use of each token it saw, every few seconds, instead of one write per request."""

    seen: list[TokenUse]


# --- upcasters --------------------------------------------------------------------------------


def sign_in_failed_v1(data: dict[str, Any]) -> dict[str, Any]:
    """UserSignInFailed, version 1 -> 2: a version 1 event stood for exactly one attempt."""
    return data | {"attempts": 1, "first_attempted_at": data["attempted_at"]}


UPCASTERS: Upcasters = {("UserSignInFailed", 1): sign_in_failed_v1}
