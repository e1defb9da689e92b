"""Read model `context_fields`: the custom context fields, and the built-in ones once changed.

The fields every SDK's context has are constants of the service (service/context/builtins.py),
as Unleash seeds them; a row of the same name overrides its constant. Such a row has no
creation time (`created_at` null): the field came with the service."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from eventlog.events.context_fields import (
    ContextFieldCreated,
    ContextFieldDeleted,
    ContextFieldUpdated,
    LegalValue,
)
from projections.base import Projection
from projections.writes import Delete, Insert, Table, Write

if TYPE_CHECKING:
    from collections.abc import Sequence

    from eventlog.codec import RecordedEvent

CONTEXT_FIELDS = Table("context_fields", ("name",), keyed_only=True)
CHANGED = ("description", "legal_values", "stickiness", "sort_order")


class LegalValueColumn(msgspec.Struct, frozen=True, kw_only=True):
    """One value in the `legal_values` column, as the API shows it."""

    value: str
    description: str | None


_encoder = msgspec.json.Encoder()


def legal_values(items: Sequence[LegalValue]) -> str:
    return _encoder.encode(
        [LegalValueColumn(value=v.value, description=v.description) for v in items]
    ).decode()


def writes(recorded: RecordedEvent) -> list[Write]:
    match recorded.event:
        case ContextFieldCreated() as e:
            row = {
                "name": e.name,
                "description": e.description,
                "legal_values": legal_values(e.legal_values),
                "stickiness": e.stickiness,
                "sort_order": e.sort_order,
                "created_at": e.created_at,
            }
            return [Insert(CONTEXT_FIELDS, row)]
        case ContextFieldUpdated() as e:
            # A built-in field's first change makes its row; a later one (or a custom field's)
            # overwrites what changes and keeps the creation time.
            row = {
                "name": e.name,
                "description": e.description,
                "legal_values": legal_values(e.legal_values),
                "stickiness": e.stickiness,
                "sort_order": e.sort_order,
                "created_at": None,
            }
            return [Insert(CONTEXT_FIELDS, row, update=CHANGED)]
        case ContextFieldDeleted(name=name):
            return [Delete(CONTEXT_FIELDS, {"name": name})]
        case _:
            return []


PROJECTION = Projection(
    name="context_fields",
    mode="inline",
    tables=(CONTEXT_FIELDS,),
    writes=writes,
    handles=frozenset({ContextFieldCreated, ContextFieldUpdated, ContextFieldDeleted}),
)
