"""Read SQL of favourites: the locks and state their decisions need, and a person's
favourites as other answers show them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from eventlog.connections import Conn

# The flag (archived ones too) and the project are share-locked: neither can go while it is
# marked. The person's row is locked for update: one person's changes to their favourites
# queue, and each decides on what the previous one left (docs/architecture.md).
LOCK_FLAG = "SELECT project FROM features WHERE name = $1 FOR SHARE"
LOCK_PROJECT = "SELECT archived_at IS NULL FROM projects WHERE id = $1 FOR SHARE"
LOCK_PERSON = "SELECT 1 FROM users WHERE id = $1 FOR NO KEY UPDATE"
IS_FAVORITE_FEATURE = """
SELECT EXISTS (SELECT 1 FROM favorite_features WHERE user_id = $1 AND feature_name = $2)
"""
IS_FAVORITE_PROJECT = """
SELECT EXISTS (SELECT 1 FROM favorite_projects WHERE user_id = $1 AND project_id = $2)
"""


async def is_favorite_feature(conn: Conn, user_id: int | None, name: str) -> bool:
    """Whether the flag is the person's favourite (never an API token's: it has none)."""
    return user_id is not None and bool(await conn.fetchval(IS_FAVORITE_FEATURE, user_id, name))
