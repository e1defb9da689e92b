"""Response bodies of /api/admin/api-tokens, built from read-model rows."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    import asyncpg


class ApiToken(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """`secret` is a masked hint, except in the answer that creates the token. `seen_at`: its
    last use (batched every few seconds: service.token_usage); None when never used."""

    id: int
    secret: str
    token_name: str
    username: str  # Unleash's older name for tokenName
    alias: None = None
    type: str
    environment: str
    project: str  # the one project, or "[]" for several
    projects: list[str]
    created_at: datetime
    expires_at: datetime | None
    seen_at: datetime | None

    @classmethod
    def from_row(cls, row: asyncpg.Record, secret: str | None = None) -> ApiToken:
        projects = list(row["projects"])
        return cls(
            id=row["id"],
            secret=row["secret_hint"] if secret is None else secret,
            token_name=row["token_name"],
            username=row["token_name"],
            type=row["type"],
            environment=row["environment"],
            project=projects[0] if len(projects) == 1 else "[]",
            projects=projects,
            created_at=row["created_at"],
            expires_at=row["expires_at"],
            seen_at=row["seen_at"],
        )


class ApiTokenList(msgspec.Struct, frozen=True, kw_only=True):
    tokens: list[ApiToken]
