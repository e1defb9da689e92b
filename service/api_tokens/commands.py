"""Request bodies of the api-token routes.

Each Struct's `example` is the request body the OpenAPI document shows (service/openapi.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, ClassVar

import msgspec

TokenName = Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
Scope = Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
AwareDatetime = Annotated[datetime, msgspec.Meta(tz=True)]


class CreateApiToken(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    example: ClassVar[dict[str, object]] = {
        "tokenName": "web-backend",
        "type": "client",
        "environment": "development",
        "projects": ["default"],
    }
    token_name: TokenName | None = None
    username: TokenName | None = None  # Unleash's older name for tokenName, still accepted
    type: Annotated[str, msgspec.Meta(min_length=1, max_length=20)]
    environment: Scope | None = None
    project: Scope | None = None
    projects: Annotated[list[Scope], msgspec.Meta(max_length=100)] | None = None
    expires_at: AwareDatetime | None = None


class UpdateApiToken(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Unleash's apiTokenUpdateSchema: the token's new expiry."""

    example: ClassVar[dict[str, object]] = {"expiresAt": "2030-01-01T00:00:00Z"}
    expires_at: AwareDatetime
