"""Read models of accounts: `users` (people and service accounts), `user_passwords`,
`personal_access_tokens` and `sessions`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from projections.base import Projection
from service.users.events import (
    PasswordChanged,
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

if TYPE_CHECKING:
    from service.codec import RecordedEvent
    from service.connections import Conn

INSERT_ACCOUNT = """
INSERT INTO users (id, account_type, name, username, email, root_role, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (id) DO NOTHING
"""
UPDATE_USER = "UPDATE users SET name = $2, email = $3, root_role = $4 WHERE id = $1"
UPDATE_SERVICE_ACCOUNT = "UPDATE users SET name = $2, root_role = $3 WHERE id = $1"
DELETE_ACCOUNT = """
WITH p AS (DELETE FROM user_passwords WHERE user_id = $1),
     t AS (DELETE FROM personal_access_tokens WHERE user_id = $1),
     s AS (DELETE FROM sessions WHERE user_id = $1)
DELETE FROM users WHERE id = $1
"""
SET_PASSWORD = """
WITH s AS (DELETE FROM sessions WHERE user_id = $1),
     u AS (UPDATE users SET login_attempts = 0 WHERE id = $1)
INSERT INTO user_passwords (user_id, password_hash) VALUES ($1, $2)
ON CONFLICT (user_id) DO UPDATE SET password_hash = excluded.password_hash
"""
SIGNED_IN = """
WITH u AS (UPDATE users SET seen_at = $2, login_attempts = 0 WHERE id = $1)
INSERT INTO sessions (session_hash, user_id, created_at, expires_at) VALUES ($3, $1, $2, $4)
ON CONFLICT (session_hash) DO NOTHING
"""
SIGN_IN_FAILED = "UPDATE users SET login_attempts = $2 WHERE id = $1"
SIGNED_OUT = "DELETE FROM sessions WHERE session_hash = $1 AND user_id = $2"
INSERT_PAT = """
INSERT INTO personal_access_tokens (id, user_id, secret_hash, secret_hint, description,
                                    created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (id) DO NOTHING
"""
DELETE_PAT = "DELETE FROM personal_access_tokens WHERE id = $1 AND user_id = $2"
PATS_SEEN = """
WITH seen AS (
    SELECT p.id, greatest(p.seen_at, s.seen_at) AS seen_at
    FROM personal_access_tokens p
    JOIN unnest($1::bigint[], $2::timestamptz[]) AS s(id, seen_at) ON s.id = p.id
)
UPDATE personal_access_tokens p SET seen_at = seen.seen_at
FROM seen WHERE p.id = seen.id
"""


DELETE_ACCOUNTS = """
WITH p AS (DELETE FROM user_passwords WHERE user_id = ANY($1::bigint[])),
     t AS (DELETE FROM personal_access_tokens WHERE user_id = ANY($1::bigint[])),
     s AS (DELETE FROM sessions WHERE user_id = ANY($1::bigint[]))
DELETE FROM users WHERE id = ANY($1::bigint[])
"""
IMPORT_USERS = """
INSERT INTO users (id, account_type, name, username, email, root_role, seen_at, created_at)
SELECT id, 'User', name, username, email, root_role, seen_at, created_at
FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::integer[],
            $6::timestamptz[], $7::timestamptz[])
     AS i(id, name, username, email, root_role, seen_at, created_at)
ON CONFLICT (id) DO NOTHING
"""
IMPORT_PASSWORDS = """
INSERT INTO user_passwords (user_id, password_hash)
SELECT id, password_hash FROM unnest($1::bigint[], $2::text[]) AS i(id, password_hash)
WHERE password_hash IS NOT NULL
ON CONFLICT (user_id) DO NOTHING
"""


async def _import(conn: Conn, e: UsersImported) -> None:
    users = e.users
    ids = [u.user_id for u in users]
    await conn.execute(
        IMPORT_USERS,
        ids,
        [u.name for u in users],
        [u.username for u in users],
        [u.email for u in users],
        [u.root_role for u in users],
        [u.seen_at for u in users],
        [u.created_at for u in users],
    )
    await conn.execute(IMPORT_PASSWORDS, ids, [u.password_hash for u in users])


async def apply(conn: Conn, recorded: RecordedEvent) -> None:  # noqa: C901, PLR0912 - a case per type
    match recorded.event:
        case UserCreated() as e:
            await conn.execute(
                INSERT_ACCOUNT,
                e.user_id,
                "User",
                e.name,
                e.username,
                e.email,
                e.root_role,
                e.created_at,
            )
        case UserUpdated() as e:
            await conn.execute(UPDATE_USER, e.user_id, e.name, e.email, e.root_role)
        case UserDeleted() as e:
            await conn.execute(DELETE_ACCOUNT, e.user_id)
        case PasswordChanged() as e:
            await conn.execute(SET_PASSWORD, e.user_id, e.password_hash)
        case UserSignedIn() as e:
            await conn.execute(
                SIGNED_IN, e.user_id, e.seen_at, e.session_hash, e.session_expires_at
            )
        case UserSignInFailed() as e:
            await conn.execute(SIGN_IN_FAILED, e.user_id, e.login_attempts)
        case UserSignedOut() as e:
            await conn.execute(SIGNED_OUT, e.session_hash, e.user_id)
        case UsersDeleted() as e:
            await conn.execute(DELETE_ACCOUNTS, [u.user_id for u in e.users])
        case UsersImported() as e:
            await _import(conn, e)
        case ServiceAccountCreated() as e:
            await conn.execute(
                INSERT_ACCOUNT,
                e.account_id,
                "Service Account",
                e.name,
                e.username,
                None,
                e.root_role,
                e.created_at,
            )
        case ServiceAccountUpdated() as e:
            await conn.execute(UPDATE_SERVICE_ACCOUNT, e.account_id, e.name, e.root_role)
        case ServiceAccountDeleted() as e:
            await conn.execute(DELETE_ACCOUNT, e.account_id)
        case PersonalAccessTokenCreated() as e:
            await conn.execute(
                INSERT_PAT,
                e.token_id,
                e.user_id,
                e.secret_hash,
                e.secret_hint,
                e.description,
                e.created_at,
                e.expires_at,
            )
        case PersonalAccessTokenDeleted() as e:
            await conn.execute(DELETE_PAT, e.token_id, e.user_id)
        case PersonalAccessTokensSeen() as e:
            if e.seen:
                ids, times = [u.token_id for u in e.seen], [u.seen_at for u in e.seen]
                await conn.execute(PATS_SEEN, ids, times)
        case _:
            pass


PROJECTION = Projection(
    name="accounts",
    mode="inline",
    tables=("users", "user_passwords", "personal_access_tokens", "sessions"),
    apply=apply,
)
