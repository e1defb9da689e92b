"""Every projection, and whether it runs inline (in the write transaction) or async."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from projections import accounts, activity, api_tokens, features, projects, segments

if TYPE_CHECKING:
    from projections.base import Projection
    from service.events import Event

INLINE: tuple[Projection, ...] = (
    api_tokens.PROJECTION,
    accounts.PROJECTION,
    projects.PROJECTION,
    segments.PROJECTION,
    features.PROJECTION,
)
ASYNC: tuple[Projection, ...] = (activity.PROJECTION,)
ALL: tuple[Projection, ...] = INLINE + ASYNC


@functools.cache
def reading(event_type: type[Event], among: tuple[Projection, ...] = ALL) -> tuple[Projection, ...]:
    """The projections (of `among`, in order) whose writes depend on events of this type."""
    return tuple(p for p in among if p.handles is None or event_type in p.handles)
