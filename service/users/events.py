"""Events of the user stream (`user/<id>`): the account, its password hash and its sign-ins."""

from __future__ import annotations

from datetime import datetime

import msgspec

from service.events import Event


class UserCreated(Event, frozen=True, kw_only=True, tag="UserCreated"):
    """A person's account was created. A password, when given, follows as PasswordChanged."""

    user_id: int
    name: str | None
    username: str | None
    email: str | None
    root_role: int
    created_at: datetime


class UserUpdated(Event, frozen=True, kw_only=True, tag="UserUpdated"):
    """The changeable fields of an account, with their values after the change."""

    user_id: int
    name: str | None
    email: str | None
    root_role: int


class UserDeleted(Event, frozen=True, kw_only=True, tag="UserDeleted"):
    """An account was deleted: its sessions and personal access tokens end with it."""

    user_id: int
    name: str | None
    username: str | None
    email: str | None


class PasswordChanged(Event, frozen=True, kw_only=True, tag="PasswordChanged"):
    """A new password, as its argon2id hash only. Ends the account's sessions and resets
    its failed sign-in count."""

    user_id: int
    password_hash: str


class UserSignedIn(Event, frozen=True, kw_only=True, tag="UserSignedIn"):
    """A successful sign-in: sets `seenAt`, resets failed attempts, opens a session (known
    by the sha256 of its cookie value only)."""

    user_id: int
    seen_at: datetime
    session_hash: str
    session_expires_at: datetime


class UserSignInFailed(Event, frozen=True, kw_only=True, tag="UserSignInFailed"):
    """A wrong password for an existing account; `login_attempts` is the count after it."""

    user_id: int
    attempted_at: datetime
    login_attempts: int


class UserSignedOut(Event, frozen=True, kw_only=True, tag="UserSignedOut"):
    """A session was ended by its owner."""

    user_id: int
    session_hash: str


class UserRecord(msgspec.Struct, frozen=True, kw_only=True):
    """An account as it was: what a batch event carries for each user it touches."""

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
    password_hash: str | None = None


class UsersImported(Event, frozen=True, kw_only=True, tag="UsersImported"):
    """Up to 1,000 users brought in by `python -m service import-users` (stream
    `user-batch/<uuid>`), with `createdAt` and `seenAt` as the source had them."""

    users: list[ImportedUser]
    source: str
