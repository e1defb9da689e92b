"""Request bodies of /api/admin/segments."""

from __future__ import annotations

from typing import Annotated

import msgspec

from service.features.commands import Constraint


class SegmentBody(msgspec.Struct, frozen=True, kw_only=True):
    """POST and PUT: PUT replaces the whole segment."""

    name: Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
    description: Annotated[str, msgspec.Meta(max_length=1000)] | None = None
    constraints: Annotated[list[Constraint], msgspec.Meta(max_length=100)]
