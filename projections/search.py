"""Read model `feature_creators`: who created each flag, as Unleash's `createdByUserId` names
them (a person's or service account's id, -42 an API token, -1337 the system), for the flag
table's `createdBy` (its filter and its column) and a project's flag creators.

Only the id is kept: a person's name is read from `users` when answering, so it leaves the
answers with the person (docs/privacy.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from eventlog.events.features import FeatureCloned, FeatureCreated, FeatureDeleted
from projections.base import Projection
from projections.writes import Delete, Insert, Table, Write

if TYPE_CHECKING:
    from eventlog.codec import RecordedEvent
    from eventlog.events.base import Metadata

FEATURE_CREATORS = Table("feature_creators", ("feature_name",), keyed_only=True)
API_TOKEN_USER: Final = -42  # Unleash's ADMIN_TOKEN_USER id
SYSTEM_USER: Final = -1337  # Unleash's SYSTEM_USER_ID
_ACCOUNTS: Final = frozenset({"user", "service-account"})


def creator_id(metadata: Metadata) -> int | None:
    """Unleash's user id of an event's actor (as the log's `actor_user_id` column derives it:
    sql/0012); None for an actor id that names no account."""
    if metadata.actor_kind == "api-token":
        return API_TOKEN_USER
    if metadata.actor_kind == "system":
        return SYSTEM_USER
    digits = metadata.actor_id.partition(":")[2]
    if metadata.actor_kind in _ACCOUNTS and digits.isascii() and digits.isdigit():
        return int(digits) if len(digits) <= 18 else None  # a bigint's digits
    return None


def writes(recorded: RecordedEvent) -> list[Write]:
    match recorded.event:
        case FeatureCreated() | FeatureCloned() as e:
            row = {"feature_name": e.name, "user_id": creator_id(recorded.metadata)}
            return [Insert(FEATURE_CREATORS, row)]
        case FeatureDeleted() as e:
            return [Delete(FEATURE_CREATORS, {"feature_name": e.name})]
        case _:
            return []


PROJECTION = Projection(
    name="search",
    mode="inline",
    by_stream=True,
    tables=(FEATURE_CREATORS,),
    writes=writes,
    handles=frozenset({FeatureCloned, FeatureCreated, FeatureDeleted}),
    reads_metadata=True,
)
