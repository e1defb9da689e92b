"""Read models of accounts: `users` (people and service accounts), `user_passwords`,
`personal_access_tokens`, `sessions` and `password_reset_tokens`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from eventlog.events.users import (
    PasswordChanged,
    PasswordResetRequested,
    PersonalAccessTokenCreated,
    PersonalAccessTokenDeleted,
    PersonalAccessTokensSeen,
    ServiceAccountCreated,
    ServiceAccountDeleted,
    ServiceAccountUpdated,
    UserCreated,
    UserDeleted,
    UsersDeleted,
    UserSignedIn,
    UserSignedOut,
    UserSignInFailed,
    UsersImported,
    UserUpdated,
)
from projections.base import Projection
from projections.writes import Delete, Greatest, Insert, Table, Update, Write

if TYPE_CHECKING:
    from collections.abc import Sequence

    from eventlog.codec import RecordedEvent

USERS = Table("users", ("id",))
USER_PASSWORDS = Table("user_passwords", ("user_id",))
PERSONAL_ACCESS_TOKENS = Table("personal_access_tokens", ("id",))
SESSIONS = Table("sessions", ("session_hash",))
PASSWORD_RESET_TOKENS = Table("password_reset_tokens", ("token_hash",))


def _account(account_id: int, account_type: str, **columns: object) -> Insert:
    return Insert(USERS, {"id": account_id, "account_type": account_type, **columns})


def _delete_accounts(ids: Sequence[int]) -> list[Write]:
    """An account goes with its password, tokens and sessions (one shape at a time, so a batch
    runs as a few pipelined statements)."""
    return [
        *(Delete(USER_PASSWORDS, {"user_id": i}) for i in ids),
        *(Delete(PERSONAL_ACCESS_TOKENS, {"user_id": i}) for i in ids),
        *(Delete(SESSIONS, {"user_id": i}) for i in ids),
        *(Delete(PASSWORD_RESET_TOKENS, {"user_id": i}) for i in ids),
        *(Delete(USERS, {"id": i}) for i in ids),
    ]


def _import(e: UsersImported) -> list[Write]:
    accounts: list[Write] = [
        _account(
            u.user_id,
            "User",
            name=u.name,
            username=u.username,
            email=u.email,
            root_role=u.root_role,
            seen_at=u.seen_at,
            created_at=u.created_at,
        )
        for u in e.users
    ]
    passwords = [
        Insert(USER_PASSWORDS, {"user_id": u.user_id, "password_hash": u.password_hash})
        for u in e.users
        if u.password_hash is not None
    ]
    return accounts + passwords


def writes(recorded: RecordedEvent) -> list[Write]:  # noqa: C901, PLR0911, PLR0912 - a case per type
    match recorded.event:
        case UserCreated() as e:
            return [
                _account(
                    e.user_id,
                    "User",
                    name=e.name,
                    username=e.username,
                    email=e.email,
                    root_role=e.root_role,
                    created_at=e.created_at,
                )
            ]
        case UserUpdated() as e:
            changed = {"name": e.name, "email": e.email, "root_role": e.root_role}
            return [Update(USERS, {"id": e.user_id}, changed)]
        case UserDeleted() as e:
            return _delete_accounts([e.user_id])
        case PasswordChanged() as e:
            password = {"user_id": e.user_id, "password_hash": e.password_hash}
            return [
                Delete(SESSIONS, {"user_id": e.user_id}),
                Delete(PASSWORD_RESET_TOKENS, {"user_id": e.user_id}),  # a link is used once
                Update(USERS, {"id": e.user_id}, {"login_attempts": 0}),
                Insert(USER_PASSWORDS, password, update=("password_hash",)),
            ]
        case PasswordResetRequested() as e:
            link = {"token_hash": e.token_hash, "user_id": e.user_id, "expires_at": e.expires_at}
            # A newer link replaces the person's earlier ones, as in Unleash.
            return [
                Delete(PASSWORD_RESET_TOKENS, {"user_id": e.user_id}),
                Insert(PASSWORD_RESET_TOKENS, link),
            ]
        case UserSignedIn() as e:
            session = {
                "session_hash": e.session_hash,
                "user_id": e.user_id,
                "created_at": e.seen_at,
                "expires_at": e.session_expires_at,
            }
            seen = {"seen_at": e.seen_at, "login_attempts": 0}
            return [Update(USERS, {"id": e.user_id}, seen), Insert(SESSIONS, session)]
        case UserSignInFailed() as e:
            return [Update(USERS, {"id": e.user_id}, {"login_attempts": e.login_attempts})]
        case UserSignedOut() as e:
            return [Delete(SESSIONS, {"session_hash": e.session_hash, "user_id": e.user_id})]
        case UsersDeleted() as e:
            return _delete_accounts([u.user_id for u in e.users])
        case UsersImported() as e:
            return _import(e)
        case ServiceAccountCreated() as e:
            return [
                _account(
                    e.account_id,
                    "Service Account",
                    name=e.name,
                    username=e.username,
                    email=None,
                    root_role=e.root_role,
                    created_at=e.created_at,
                )
            ]
        case ServiceAccountUpdated() as e:
            changed = {"name": e.name, "root_role": e.root_role}
            return [Update(USERS, {"id": e.account_id}, changed)]
        case ServiceAccountDeleted() as e:
            return _delete_accounts([e.account_id])
        case PersonalAccessTokenCreated() as e:
            token = {
                "id": e.token_id,
                "user_id": e.user_id,
                "secret_hash": e.secret_hash,
                "secret_hint": e.secret_hint,
                "description": e.description,
                "created_at": e.created_at,
                "expires_at": e.expires_at,
            }
            return [Insert(PERSONAL_ACCESS_TOKENS, token)]
        case PersonalAccessTokenDeleted() as e:
            where = {"id": e.token_id, "user_id": e.user_id}
            return [Delete(PERSONAL_ACCESS_TOKENS, where)]
        case PersonalAccessTokensSeen() as e:
            return [
                Update(PERSONAL_ACCESS_TOKENS, {"id": u.token_id}, {"seen_at": Greatest(u.seen_at)})
                for u in e.seen
            ]
        case _:
            return []


PROJECTION = Projection(
    name="accounts",
    mode="inline",
    tables=(USERS, USER_PASSWORDS, PERSONAL_ACCESS_TOKENS, SESSIONS, PASSWORD_RESET_TOKENS),
    writes=writes,
    handles=frozenset(
        {
            PasswordChanged,
            PasswordResetRequested,
            PersonalAccessTokenCreated,
            PersonalAccessTokenDeleted,
            PersonalAccessTokensSeen,
            ServiceAccountCreated,
            ServiceAccountDeleted,
            ServiceAccountUpdated,
            UserCreated,
            UserDeleted,
            UserSignInFailed,
            UserSignedIn,
            UserSignedOut,
            UserUpdated,
            UsersDeleted,
            UsersImported,
        }
    ),
)
