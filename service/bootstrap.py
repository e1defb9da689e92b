"""First start: seed admin tokens from INIT_ADMIN_API_TOKENS, or create one when none exists."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from service import auth, store
from service.accounts import domain, queries
from service.events import Metadata

if TYPE_CHECKING:
    from service.db import Conn

BOOTSTRAP_LOCK = 0x666C6168  # serialises seeding across replicas starting at once
BOOTSTRAP = Metadata(
    actor_id="system", actor_name="bootstrap", actor_kind="system", source="bootstrap"
)


async def seed_admin_tokens(conn: Conn, tokens: tuple[str, ...]) -> str | None:
    """Create the configured admin tokens that are absent (stored as hashes only).

    Returns a newly generated admin token when no admin token existed at all, else None.
    """
    await conn.execute("SELECT pg_advisory_lock($1)", BOOTSTRAP_LOCK)
    try:
        for token in tokens:
            if await conn.fetchval(queries.TOKEN_WITH_HASH, auth.hash_secret(token)) is None:
                await _create_admin_token(conn, token)
        if await conn.fetchval(queries.ANY_ADMIN_TOKEN):
            return None
        token = domain.token_secret("admin", "*", ["*"], auth.new_secret())
        await _create_admin_token(conn, token)
        return token
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", BOOTSTRAP_LOCK)


async def _create_admin_token(conn: Conn, token: str) -> None:
    async with conn.transaction():
        token_id = await conn.fetchval(queries.NEXT_TOKEN_ID)
        event = domain.create_api_token(
            token_id=token_id,
            name="admin",
            scope=("admin", "*", ["*"]),
            secret_hash=auth.hash_secret(token),
            hint=auth.secret_hint(token),
            now=datetime.now(UTC),
            expires_at=None,
        )
        await store.append(conn, domain.stream(token_id), "no-stream", [event], BOOTSTRAP)
