"""Read model `feature_collaborators`: who changed each flag (Unleash's `createdBy` and
`collaborators` of a flag), one row per flag and author, from the envelope of every event on
the flag's stream. Authors are Unleash's user ids: an account's id, -42 for any API token, -1337
for the system; a person's name is never kept here (it is theirs: the users read model has it,
and erasure removes it there)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

from eventlog.events.features import FeatureCloned, FeatureCreated, FeatureDeleted
from projections.base import Projection
from projections.features import PROJECTION as FEATURES
from projections.writes import Delete, Insert, Table, Write

if TYPE_CHECKING:
    from eventlog.codec import RecordedEvent

FEATURE_COLLABORATORS = Table("feature_collaborators", ("feature_name", "user_id"), keyed_only=True)

# As the event log's `actor_user_id` (sql/0012, event_actor_user_id): Unleash's ids.
API_TOKEN_USER: Final = -42
SYSTEM_USER: Final = -1337
_FLAG_EVENTS: Final = FEATURES.handles or frozenset()
_ACCOUNT = re.compile(r"^(user|service-account):([0-9]{1,18})$")


def author(actor_kind: str, actor_id: str) -> int | None:
    """Unleash's user id of an event's actor; None for an actor id of no known form."""
    if actor_kind == "api-token":
        return API_TOKEN_USER
    if actor_kind == "system":
        return SYSTEM_USER
    match = _ACCOUNT.match(actor_id)
    return int(match[2]) if match and actor_kind == match[1] else None


def writes(recorded: RecordedEvent) -> list[Write]:
    """Each event of a flag (of its stream `feature/<name>`): its author has changed it."""
    if type(recorded.event) not in _FLAG_EVENTS:
        return []
    if isinstance(recorded.event, FeatureDeleted):  # the flag is gone, and who changed it
        return [Delete(FEATURE_COLLABORATORS, {"feature_name": recorded.stream_key})]
    meta = recorded.metadata
    user_id = author(meta.actor_kind, meta.actor_id)
    created = isinstance(recorded.event, (FeatureCreated, FeatureCloned))
    # A flag made again under a name that was freed starts with no collaborators.
    out: list[Write] = (
        [Delete(FEATURE_COLLABORATORS, {"feature_name": recorded.stream_key})] if created else []
    )
    if user_id is None:
        return out
    row = {
        "feature_name": recorded.stream_key,
        "user_id": user_id,
        # Accounts' names live with the accounts; tokens' and the system's are not a person's.
        "actor_name": None if user_id >= 0 else meta.actor_name,
        "created": created,
        "last_version": recorded.stream_version,
    }
    return [*out, Insert(FEATURE_COLLABORATORS, row, update=("last_version",))]


PROJECTION = Projection(
    name="feature_collaborators",
    mode="inline",
    tables=(FEATURE_COLLABORATORS,),
    writes=writes,
    handles=_FLAG_EVENTS,  # every event of a flag's stream
    reads_metadata=True,
    by_stream=True,
)
