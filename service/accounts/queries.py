"""Read SQL of the api-token read model."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncpg

    from service.connections import Conn

NEXT_TOKEN_ID = "SELECT nextval('api_token_ids')"
KNOWN_SCOPES = """
SELECT array(SELECT name FROM environments) AS environments,
       array(SELECT id FROM projects WHERE archived_at IS NULL) AS projects
"""
LIST_TOKENS = """
SELECT id, secret_hint, token_name, type, environment, projects, created_at, expires_at
FROM api_tokens ORDER BY id
"""
GET_TOKEN = """
SELECT id, secret_hint, token_name, type, environment, projects, created_at, expires_at
FROM api_tokens WHERE id = $1
"""
TOKEN_WITH_HASH = "SELECT id FROM api_tokens WHERE secret_hash = $1"
ANY_ADMIN_TOKEN = """
SELECT EXISTS (SELECT 1 FROM api_tokens
               WHERE type = 'admin' AND (expires_at IS NULL OR expires_at > now()))
"""
LOCK_TOKEN = "SELECT id, token_name FROM api_tokens WHERE id = $1 FOR UPDATE"
LOCK_TOKEN_BY_HASH = "SELECT id, token_name FROM api_tokens WHERE secret_hash = $1 FOR UPDATE"


def token_json(row: asyncpg.Record | dict[str, Any]) -> dict[str, Any]:
    projects = list(row["projects"])
    return {
        "id": row["id"],
        "secret": row["secret_hint"],
        "tokenName": row["token_name"],
        "username": row["token_name"],  # Unleash's older name for tokenName
        "alias": None,
        "type": row["type"],
        "environment": row["environment"],
        "project": projects[0] if len(projects) == 1 else "[]",
        "projects": projects,
        "createdAt": row["created_at"],
        "expiresAt": row["expires_at"],
    }


async def list_tokens(conn: Conn | asyncpg.Pool) -> list[dict[str, Any]]:
    return [token_json(row) for row in await conn.fetch(LIST_TOKENS)]


NEXT_PAT_ID = "SELECT nextval('personal_access_token_ids')"
GET_PAT_BODY = "SELECT body FROM personal_access_tokens WHERE id = $1"
PAT_DESCRIPTIONS = "SELECT description FROM personal_access_tokens WHERE user_id = $1"
LOCK_PAT = "SELECT id FROM personal_access_tokens WHERE id = $1 AND user_id = $2 FOR UPDATE"
LOCK_ACCOUNT = """
SELECT id, account_type, name, username, root_role FROM users
WHERE id = $1 AND account_type = $2
FOR UPDATE
"""
LIST_SERVICE_ACCOUNTS = """
SELECT u.id, u.account_type, u.name, u.username, u.email, u.root_role, u.login_attempts, u.seen_at,
       u.created_at
FROM users u WHERE u.account_type = 'Service Account'
ORDER BY u.id
"""
GET_SERVICE_ACCOUNT = """
SELECT u.id, u.account_type, u.name, u.username, u.email, u.root_role, u.login_attempts, u.seen_at,
       u.created_at
FROM users u WHERE u.id = $1 AND u.account_type = 'Service Account'
"""
# One round trip answers both: no row when the id is not a service account's, else the
# whole `{"pats": [...]}` body, joined from the records the projection keeps ready.
SERVICE_ACCOUNT_PATS_JSON = """
SELECT '{"pats": [' || coalesce(string_agg(p.body, ', ' ORDER BY p.id), '') || ']}'
FROM users u LEFT JOIN personal_access_tokens p ON p.user_id = u.id
WHERE u.id = $1 AND u.account_type = 'Service Account'
GROUP BY u.id
"""
OWN_PATS_JSON = """
SELECT '{"pats": [' || coalesce(string_agg(body, ', ' ORDER BY id), '') || ']}'
FROM personal_access_tokens WHERE user_id = $1
"""
