"""Every projection, and whether it runs inline (in the write transaction) or async."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, NamedTuple

from projections import (
    accounts,
    activity,
    addons,
    api_tokens,
    applications,
    collaborators,
    context_fields,
    favorites,
    feature_types,
    features,
    flag_extras,
    instance_settings,
    invite_links,
    lead_times,
    preferences,
    project_activity,
    projects,
    search,
    segments,
    strategy_definitions,
    tag_types,
)

if TYPE_CHECKING:
    from eventlog.events.base import Event
    from projections.base import Projection

INLINE: tuple[Projection, ...] = (
    api_tokens.PROJECTION,
    accounts.PROJECTION,
    projects.PROJECTION,
    segments.PROJECTION,
    features.PROJECTION,
    tag_types.PROJECTION,
    feature_types.PROJECTION,
    strategy_definitions.PROJECTION,
    context_fields.PROJECTION,
    favorites.PROJECTION,
    search.PROJECTION,
    collaborators.PROJECTION,
    preferences.PROJECTION,
    flag_extras.PROJECTION,
    invite_links.PROJECTION,
    instance_settings.PROJECTION,
    applications.PROJECTION,
    addons.PROJECTION,
)
ASYNC: tuple[Projection, ...] = (
    activity.PROJECTION,
    project_activity.PROJECTION,
    lead_times.PROJECTION,
)
ALL: tuple[Projection, ...] = INLINE + ASYNC


@functools.cache
def reading(event_type: type[Event], among: tuple[Projection, ...] = ALL) -> tuple[Projection, ...]:
    """The projections (of `among`, in order) whose writes depend on events of this type."""
    return tuple(p for p in among if p.handles is None or event_type in p.handles)


class Group(NamedTuple):
    """Projections rebuilt together by one process of a parallel replay; with `shards` > 1,
    from the events of one shard of the streams (projections whose writes stay in their
    event's stream only: Projection.by_stream)."""

    projections: tuple[Projection, ...]
    shard: int = 0
    shards: int = 1


# A replay of a large log rebuilds each group in a process of its own, on every core: the
# flags' in two halves (about two thirds of the work at a million events), the accounts'
# with the small ones (favourites and flag creators among them), and the activity counts
# (every event's envelope; the projects' counts also read each flag event's project).
# Together, every projection once, and every shard of a split one.
GROUPS: tuple[Group, ...] = (
    Group((features.PROJECTION, flag_extras.PROJECTION), shard=0, shards=2),
    Group((features.PROJECTION, flag_extras.PROJECTION), shard=1, shards=2),
    Group(
        (
            accounts.PROJECTION,
            projects.PROJECTION,
            segments.PROJECTION,
            api_tokens.PROJECTION,
            tag_types.PROJECTION,
            feature_types.PROJECTION,
            strategy_definitions.PROJECTION,
            context_fields.PROJECTION,
            favorites.PROJECTION,
            search.PROJECTION,
            preferences.PROJECTION,
            invite_links.PROJECTION,
            instance_settings.PROJECTION,
            applications.PROJECTION,
            addons.PROJECTION,
        )
    ),
    # The flags' collaborators read the envelope (who) of flags' events, as the counts do.
    Group(
        (
            activity.PROJECTION,
            project_activity.PROJECTION,
            collaborators.PROJECTION,
            lead_times.PROJECTION,
        )
    ),
)
