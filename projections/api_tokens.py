"""Read model `api_tokens`: one row per live API token, found by the hash of its secret."""

from __future__ import annotations

from typing import TYPE_CHECKING

from projections.base import Projection
from service.api_tokens.events import ApiTokenCreated, ApiTokenDeleted

if TYPE_CHECKING:
    from service.codec import RecordedEvent
    from service.connections import Conn

INSERT_TOKEN = """
INSERT INTO api_tokens (id, secret_hash, secret_hint, token_name, type, environment, projects,
                        created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (id) DO NOTHING
"""
DELETE_TOKEN = "DELETE FROM api_tokens WHERE id = $1"


async def apply(conn: Conn, recorded: RecordedEvent) -> None:
    match recorded.event:
        case ApiTokenCreated() as e:
            await conn.execute(
                INSERT_TOKEN,
                e.token_id,
                e.secret_hash,
                e.secret_hint,
                e.token_name,
                e.token_type,
                e.environment,
                e.projects,
                e.created_at,
                e.expires_at,
            )
        case ApiTokenDeleted() as e:
            await conn.execute(DELETE_TOKEN, e.token_id)
        case _:
            pass


PROJECTION = Projection(
    name="api_tokens",
    mode="inline",
    tables=("api_tokens",),
    apply=apply,
)
