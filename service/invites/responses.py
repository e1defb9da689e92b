"""Response bodies of the invite-link routes (Unleash's publicSignupTokenSchema), built from
read-model rows."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import msgspec

from service.auth import ROOT_ROLES
from service.users.responses import User

if TYPE_CHECKING:
    from collections.abc import Sequence

    import asyncpg


class LinkRole(msgspec.Struct, frozen=True, kw_only=True):
    id: int
    name: str
    type: str = "root"


class InviteLink(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """`secret` and `url` hold the secret only in the answer that creates the link; elsewhere
    `secret` is its sha256 (which the admin routes accept in its place, and which signs no one
    up) and `url` shows its first characters (docs/behavior.md, "Invite links")."""

    secret: str
    url: str
    name: str
    enabled: bool
    expires_at: datetime
    created_at: datetime
    created_by: str | None
    users: list[User] | None
    role: LinkRole

    @classmethod
    def from_row(
        cls,
        row: asyncpg.Record,
        *,
        origin: str,
        users: Sequence[asyncpg.Record] = (),
        secret: str | None = None,
    ) -> InviteLink:
        role = ROOT_ROLES[row["root_role"]]
        return cls(
            secret=row["secret_hash"] if secret is None else secret,
            url=f"{origin}/new-user?invite={row['secret_hint'] if secret is None else secret}",
            name=row["name"],
            enabled=row["enabled"],
            expires_at=row["expires_at"],
            created_at=row["created_at"],
            created_by=row["created_by"],
            users=[User.from_row(u) for u in users],
            role=LinkRole(id=role.id, name=role.name),
        )


class InviteLinkList(msgspec.Struct, frozen=True, kw_only=True):
    tokens: list[InviteLink]
