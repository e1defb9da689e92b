"""Request bodies of the event log's routes, with the API's limits. Unknown fields are
ignored, never honoured (Unleash's schema admits them).

Each Struct's `example` is the request body the OpenAPI document shows (service/openapi.py).
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Final

import msgspec

SEARCH_MOST: Final = 100  # Unleash's largest page of this search, and its default
SEARCH_OFFSET_MOST: Final = 10**15
Text = Annotated[str, msgspec.Meta(min_length=1, max_length=1000)]


class SearchEvents(msgspec.Struct, frozen=True, kw_only=True):
    """POST /api/admin/events/search (Unleash's deprecatedSearchEventsSchema): each filter one
    value, the type by Unleash's name; `query` is text in the events of one `feature`."""

    example: ClassVar[dict[str, object]] = {"type": "feature-created", "limit": 50}

    type: Text | None = None
    project: Text | None = None
    feature: Text | None = None
    query: Text | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=SEARCH_MOST)] = SEARCH_MOST
    offset: Annotated[int, msgspec.Meta(ge=0, le=SEARCH_OFFSET_MOST)] = 0
