"""Every projection, and whether it runs inline (in the write transaction) or async."""

from __future__ import annotations

from typing import TYPE_CHECKING

from projections import accounts, activity, api_tokens, features, projects, segments

if TYPE_CHECKING:
    from projections.base import Projection

INLINE: tuple[Projection, ...] = (
    api_tokens.PROJECTION,
    accounts.PROJECTION,
    projects.PROJECTION,
    segments.PROJECTION,
    features.PROJECTION,
)
ASYNC: tuple[Projection, ...] = (activity.PROJECTION,)
ALL: tuple[Projection, ...] = INLINE + ASYNC
