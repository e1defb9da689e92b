"""Tokens, hashing, principals and permissions."""

from __future__ import annotations

import hashlib
import secrets
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

import msgspec

from service.events import ActorKind, Metadata

if TYPE_CHECKING:
    import asyncpg

    from service.db import Conn

# Permissions. ADMIN implies every other one; READ is held by any admin-API principal.
ADMIN: Final = "ADMIN"
READ: Final = "READ"
CREATE_FEATURE: Final = "CREATE_FEATURE"
UPDATE_FEATURE: Final = "UPDATE_FEATURE"
DELETE_FEATURE: Final = "DELETE_FEATURE"
CREATE_PROJECT: Final = "CREATE_PROJECT"
UPDATE_PROJECT: Final = "UPDATE_PROJECT"
DELETE_PROJECT: Final = "DELETE_PROJECT"
CREATE_SEGMENT: Final = "CREATE_SEGMENT"
UPDATE_SEGMENT: Final = "UPDATE_SEGMENT"
DELETE_SEGMENT: Final = "DELETE_SEGMENT"
PUBLIC: Final = "PUBLIC"  # declared by routes that need no principal at all

ADMIN_PERMISSIONS: Final = frozenset({ADMIN, READ})
NO_PERMISSIONS: Final = frozenset[str]()


class Principal(msgspec.Struct, frozen=True, kw_only=True):
    """Who is calling, resolved once per request."""

    kind: ActorKind
    id: str
    name: str
    permissions: frozenset[str]

    def can(self, permission: str) -> bool:
        return permission == PUBLIC or ADMIN in self.permissions or permission in self.permissions

    def metadata(self, request_id: str | None) -> Metadata:
        return Metadata(
            actor_id=self.id, actor_name=self.name, actor_kind=self.kind, request_id=request_id
        )


def hash_secret(secret: str) -> str:
    """Tokens are stored and looked up only by this hash (hex sha256).

    Header values that were not UTF-8 arrive with surrogate escapes; they hash like any
    other unknown token instead of failing.
    """
    return hashlib.sha256(secret.encode("utf-8", "surrogateescape")).hexdigest()


HINT_REVEALS_FROM = 32  # only long random secrets show their first 4 characters


def secret_hint(secret: str) -> str:
    """A masked hint that lets a person recognise a token without revealing it.

    The scope before the first `.` is shown (`*:*`, `default:development`, `user`); of the
    secret itself, only the first 4 characters of a long random one (ours are 64 hex digits).
    A secret a person chose (INIT_ADMIN_API_TOKENS) is shorter and shows nothing.
    """
    separator = "." if "." in secret else ":"
    scope, _, rest = secret.partition(separator)
    shown = rest[:4] if len(rest) >= HINT_REVEALS_FROM else ""
    return f"{scope}{separator}{shown}{'*' * 8}"


def new_secret() -> str:
    """256 random bits, hex encoded."""
    return secrets.token_hex(32)


def token_from_header(value: str | None) -> str | None:
    """The token in an Authorization header; a `Bearer ` prefix (any case) is accepted."""
    if not value:
        return None
    token = value.strip()
    if token[:7].lower() == "bearer ":
        token = token[7:].strip()
    return token or None


RESOLVE_API_TOKEN = """
SELECT id, token_name, type, expires_at FROM api_tokens WHERE secret_hash = $1
"""


async def resolve_token(conn: Conn | asyncpg.Pool, token: str) -> Principal | None:
    """One indexed lookup by hash; None for unknown or expired tokens."""
    row = await conn.fetchrow(RESOLVE_API_TOKEN, hash_secret(token))
    if row is None:
        return None
    if row["expires_at"] is not None and row["expires_at"] <= datetime.now(UTC):
        return None
    permissions = ADMIN_PERMISSIONS if row["type"] == "admin" else NO_PERMISSIONS
    return Principal(
        kind="api-token",
        id=f"api-token:{row['id']}",
        name=row["token_name"],
        permissions=permissions,
    )
