"""Request bodies of the api-token routes."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import msgspec

TokenName = Annotated[str, msgspec.Meta(min_length=1, max_length=100)]


class CreateApiToken(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    token_name: TokenName
    type: Annotated[str, msgspec.Meta(min_length=1, max_length=20)]
    environment: str | None = None
    project: str | None = None
    projects: list[str] | None = None
    expires_at: datetime | None = None
