"""Read SQL of the users read model, and the JSON of a user record."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from service.auth import ROOT_ROLES

if TYPE_CHECKING:
    import asyncpg

NEXT_USER_ID = "SELECT nextval('user_ids')"
LIST_USERS = """
SELECT u.id, u.account_type, u.name, u.username, u.email, u.root_role, u.login_attempts, u.seen_at,
       u.created_at
FROM users u WHERE u.account_type = 'User' ORDER BY u.id
"""
GET_USER = """
SELECT u.id, u.account_type, u.name, u.username, u.email, u.root_role, u.login_attempts, u.seen_at,
       u.created_at
FROM users u WHERE u.id = $1 AND u.account_type = 'User'
"""
LOCK_USER = """
SELECT u.id, u.account_type, u.name, u.username, u.email, u.root_role, u.login_attempts, u.seen_at,
       u.created_at
FROM users u WHERE u.id = $1 AND u.account_type = 'User'
FOR UPDATE
"""
GET_ACCOUNT = """
SELECT u.id, u.account_type, u.name, u.username, u.email, u.root_role, u.login_attempts, u.seen_at,
       u.created_at
FROM users u WHERE u.id = $1
"""
# Sign-in: what looks like an e-mail is looked up by e-mail (any case), anything else by
# username (as written), as Unleash does; so a username can never shadow someone's e-mail.
SIGN_IN_BY_EMAIL = """
SELECT u.id, u.account_type, u.name, u.username, u.email, u.root_role, u.login_attempts, u.seen_at,
       u.created_at, pw.password_hash
FROM users u LEFT JOIN user_passwords pw ON pw.user_id = u.id
WHERE u.account_type = 'User' AND lower(u.email) = lower($1)
"""
SIGN_IN_BY_USERNAME = """
SELECT u.id, u.account_type, u.name, u.username, u.email, u.root_role, u.login_attempts, u.seen_at,
       u.created_at, pw.password_hash
FROM users u LEFT JOIN user_passwords pw ON pw.user_id = u.id
WHERE u.account_type = 'User' AND u.username = $1
"""
UNIQUE_ACCOUNT_FIELDS = frozenset({"users_email_key", "users_username_key"})


def image_url(row: asyncpg.Record | dict[str, Any]) -> str:
    """Unleash's default avatar: the gravatar (sha256) of the e-mail, or else the username."""
    key = (row["email"] or row["username"] or str(row["id"])).strip().lower()
    digest = hashlib.sha256(key.encode()).hexdigest()
    return f"https://gravatar.com/avatar/{digest}?s=42&d=retro&r=g"


def user_json(row: asyncpg.Record | dict[str, Any]) -> dict[str, Any]:
    """spec.md's user record. As in Unleash, a name, e-mail or username that is not set is left
    out (spec.md's `email` is a string, never null)."""
    body: dict[str, Any] = {"id": row["id"]}
    for field in ("name", "email", "username"):
        if row[field] is not None:
            body[field] = row[field]
    return body | {
        "imageUrl": image_url(row),
        "seenAt": row["seen_at"],
        "loginAttempts": row["login_attempts"],
        "createdAt": row["created_at"],
        "isAPI": False,
        "rootRole": row["root_role"],
        "accountType": row["account_type"],
        "emailSent": False,
        "permissions": [],
        "scimId": None,
    }


def root_roles_json(role_ids: set[int] | None = None) -> list[dict[str, object]]:
    """Every root role, or the ones with these ids, in id order."""
    return [
        role.json()
        for role_id, role in sorted(ROOT_ROLES.items())
        if role_ids is None or role_id in role_ids
    ]


PASSWORD_HASH = "SELECT password_hash FROM user_passwords WHERE user_id = $1"
LOCK_SESSION_OWNER = """
SELECT u.id, coalesce(u.name, u.username, u.email) AS name
FROM sessions s JOIN users u ON u.id = s.user_id
WHERE s.session_hash = $1
FOR UPDATE OF s
"""

# behavior.md section 3: a person (not a service account) who has not signed in since the
# threshold, was created before it, and whose tokens were all unused since it.
INACTIVE_USERS = """
SELECT u.id, u.name, u.email, u.username, u.seen_at, u.created_at,
       (SELECT max(p.seen_at) FROM personal_access_tokens p WHERE p.user_id = u.id) AS pat_seen_at
FROM users u
WHERE u.account_type = 'User'
  AND u.created_at <= $1 AND (u.seen_at IS NULL OR u.seen_at <= $1)
  AND NOT EXISTS (SELECT 1 FROM personal_access_tokens p
                  WHERE p.user_id = u.id AND p.seen_at > $1)
ORDER BY u.id
"""
# The same test on the listed ids, under row locks: a user who signs in meanwhile (the sign-in
# holds the row) is re-checked after it commits and is no longer inactive.
LOCK_INACTIVE = """
SELECT u.id, u.name, u.username, u.email, u.root_role, u.created_at, u.seen_at
FROM users u
WHERE u.id = ANY($2::bigint[]) AND u.id <> $3
  AND u.account_type = 'User'
  AND u.created_at <= $1 AND (u.seen_at IS NULL OR u.seen_at <= $1)
  AND NOT EXISTS (SELECT 1 FROM personal_access_tokens p
                  WHERE p.user_id = u.id AND p.seen_at > $1)
ORDER BY u.id
FOR UPDATE OF u
"""
# behavior.md section 5: exact matches first, then prefixes, then the rest; ties by name, then
# id. $1 the trimmed query lower-cased; $2 the same with \, % and _ escaped for LIKE; $3 how
# many rows each tier may give (offset + limit), $4 offset, $5 limit. One ordered, limited
# subquery per tier lets PostgreSQL choose per tier: trigram bitmaps when few users match,
# a walk of users_search_order when most do (no sort of every match).
SEARCH_USERS = """
SELECT id, account_type, name, username, email, root_role, login_attempts, seen_at, created_at
FROM (
    (SELECT 0 AS tier, u.* FROM users u
     WHERE u.account_type = 'User'
       AND (lower(u.name) = $1 OR lower(u.username) = $1 OR lower(u.email) = $1)
     ORDER BY u.name, u.id LIMIT $3)
    UNION ALL
    (SELECT 1 AS tier, u.* FROM users u
     WHERE u.account_type = 'User'
       AND (lower(u.name) LIKE $2 || '%' OR lower(u.username) LIKE $2 || '%'
            OR lower(u.email) LIKE $2 || '%')
       AND NOT coalesce(lower(u.name) = $1 OR lower(u.username) = $1 OR lower(u.email) = $1,
                        false)
     ORDER BY u.name, u.id LIMIT $3)
    UNION ALL
    (SELECT 2 AS tier, u.* FROM users u
     WHERE u.account_type = 'User'
       AND (lower(u.name) LIKE '%' || $2 || '%' OR lower(u.username) LIKE '%' || $2 || '%'
            OR lower(u.email) LIKE '%' || $2 || '%')
       AND NOT coalesce(lower(u.name) LIKE $2 || '%' OR lower(u.username) LIKE $2 || '%'
                        OR lower(u.email) LIKE $2 || '%', false)
     ORDER BY u.name, u.id LIMIT $3)
) AS found
ORDER BY tier, name, id
OFFSET $4 LIMIT $5
"""
