"""Read model `api_tokens`: one row per live API token, found by the hash of its secret."""

from __future__ import annotations

from typing import TYPE_CHECKING

from eventlog.events.api_tokens import (
    ApiTokenCreated,
    ApiTokenDeleted,
    ApiTokenExpiryChanged,
    ApiTokensSeen,
)
from projections.base import Projection
from projections.writes import Delete, Greatest, Insert, Table, Update, Write

if TYPE_CHECKING:
    from eventlog.codec import RecordedEvent

API_TOKENS = Table("api_tokens", ("id",))


def writes(recorded: RecordedEvent) -> list[Write]:
    match recorded.event:
        case ApiTokenCreated() as e:
            row = {
                "id": e.token_id,
                "secret_hash": e.secret_hash,
                "secret_hint": e.secret_hint,
                "token_name": e.token_name,
                "type": e.token_type,
                "environment": e.environment,
                "projects": e.projects,
                "created_at": e.created_at,
                "expires_at": e.expires_at,
                "seen_at": e.seen_at,
            }
            return [Insert(API_TOKENS, row)]
        case ApiTokenDeleted() as e:
            return [Delete(API_TOKENS, {"id": e.token_id})]
        case ApiTokenExpiryChanged() as e:
            return [Update(API_TOKENS, {"id": e.token_id}, {"expires_at": e.expires_at})]
        case ApiTokensSeen() as e:
            # Replicas flush their own batches in any order: the latest time wins.
            return [
                Update(API_TOKENS, {"id": u.token_id}, {"seen_at": Greatest(u.seen_at)})
                for u in e.seen
            ]
        case _:
            return []


PROJECTION = Projection(
    name="api_tokens",
    mode="inline",
    tables=(API_TOKENS,),
    writes=writes,
    handles=frozenset({ApiTokenCreated, ApiTokenDeleted, ApiTokenExpiryChanged, ApiTokensSeen}),
)
