"""Read SQL of the api-token read model."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncpg

    from service.db import Conn

NEXT_TOKEN_ID = "SELECT nextval('api_token_ids')"
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
LOCK_TOKEN = "SELECT token_name FROM api_tokens WHERE id = $1 FOR UPDATE"


def token_json(row: asyncpg.Record | dict[str, Any]) -> dict[str, Any]:
    projects = list(row["projects"])
    return {
        "id": row["id"],
        "secret": row["secret_hint"],
        "tokenName": row["token_name"],
        "type": row["type"],
        "environment": row["environment"],
        "project": projects[0] if len(projects) == 1 else "[]",
        "projects": projects,
        "createdAt": row["created_at"],
        "expiresAt": row["expires_at"],
    }


async def list_tokens(conn: Conn | asyncpg.Pool) -> list[dict[str, Any]]:
    return [token_json(row) for row in await conn.fetch(LIST_TOKENS)]
