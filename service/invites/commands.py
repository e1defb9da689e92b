"""Request bodies of the invite-link routes.

Each Struct's `example` is the request body the OpenAPI document shows (service/openapi.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, ClassVar

import msgspec

from service.users.commands import Password, Text

LinkName = Annotated[str, msgspec.Meta(min_length=1, max_length=255)]
AwareDatetime = Annotated[datetime, msgspec.Meta(tz=True)]


class CreateInviteLink(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Unleash requires both; an expiry over a month ahead is cut to a month."""

    example: ClassVar[dict[str, object]] = {
        "name": "default",
        "expiresAt": "2030-01-01T00:00:00Z",
    }
    name: LinkName
    expires_at: AwareDatetime


class UpdateInviteLink(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """At least one of the two; expiring a link is setting `expiresAt` to now."""

    example: ClassVar[dict[str, object]] = {"expiresAt": "2030-01-01T00:00:00Z"}
    expires_at: AwareDatetime | None = None
    enabled: bool | None = None


class SignUp(msgspec.Struct, frozen=True, kw_only=True):
    """Unleash's createInvitedUserSchema: the new person's details."""

    example: ClassVar[dict[str, object]] = {
        "name": "Ada Lovelace",
        "email": "ada@example.com",
        "password": "Correct-Horse-Battery-9",
    }
    email: Text
    name: Text
    password: Password
    username: Text | None = None
