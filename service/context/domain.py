"""Context fields: pure decisions, no I/O (docs/behavior.md, "Context fields").

Each command has one function here: it takes the request and the state the handler loaded
under locks (None where the field does not exist), checks every rule in the order the API
reports them, and returns the events to append.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import msgspec

from eventlog.events.context_fields import (
    ContextFieldCreated,
    ContextFieldDeleted,
    ContextFieldUpdated,
    LegalValue,
)
from service.context.commands import MAX_LEGAL_VALUES
from service.errors import InvalidOperation, NameExists, NotFound, ValidationError
from service.names import validate_name

if TYPE_CHECKING:
    from collections.abc import Sequence

    from service.context import commands


class Field(msgspec.Struct, frozen=True, kw_only=True):
    """A context field as it is now: a built-in one (its constant, or its row once changed) or
    a custom one. `created_at` None: it came with the service."""

    name: str
    description: str | None
    legal_values: list[LegalValue]
    stickiness: bool
    sort_order: int
    created_at: datetime | None
    built_in: bool


# A name no field may have: POST /api/admin/context/validate is at its path.
RESERVED = "validate"


def stream(name: str) -> tuple[str, str]:
    return ("context-field", name)


def missing(name: str) -> NotFound:
    return NotFound(f"Could not find context field with name {name}")


def _taken(name: str, current: Field | None) -> None:
    if current is not None:
        raise NameExists(f"A context field named {name} already exists")


def _legal_values(items: Sequence[commands.LegalValue]) -> list[LegalValue]:
    seen: set[str] = set()
    for i, v in enumerate(items):
        if v.value in seen:
            raise ValidationError(
                f"Legal value {v.value} is listed twice - at `$.legalValues[{i}].value`"
            )
        seen.add(v.value)
    return [LegalValue(value=v.value, description=v.description) for v in items]


def _name(name: str) -> None:
    validate_name(name)
    if name == RESERVED:
        raise ValidationError(f"A context field may not be named {RESERVED} - at `$.name`")


def validate_field_name(body: commands.FieldName, *, current: Field | None) -> None:
    """Whether a field of that name could be created: the name rule, then free."""
    _name(body.name)
    _taken(body.name, current)


def create_field(
    body: commands.CreateField, *, current: Field | None, now: datetime
) -> ContextFieldCreated:
    """current: the field already named so (built in or custom), else None."""
    _name(body.name)
    legal_values = _legal_values(body.legal_values)
    _taken(body.name, current)
    return ContextFieldCreated(
        name=body.name,
        description=body.description,
        legal_values=legal_values,
        stickiness=body.stickiness,
        sort_order=body.sort_order,
        created_at=now,
    )


def update_field(
    name: str, body: commands.UpdateField, *, current: Field | None
) -> ContextFieldUpdated:
    """Legal values and stickiness as given (left out: none, false), as in Unleash; the
    description and the sort order left out are kept (Unleash resets the sort order to 0)."""
    legal_values = _legal_values(body.legal_values)
    if current is None:
        raise missing(name)
    return ContextFieldUpdated(
        name=name,
        description=current.description if body.description is None else body.description,
        legal_values=legal_values,
        stickiness=body.stickiness,
        sort_order=current.sort_order if body.sort_order is None else body.sort_order,
    )


def _changed(current: Field, legal_values: list[LegalValue]) -> ContextFieldUpdated | None:
    """The field with these legal values, the rest as it is; None when nothing changes."""
    if legal_values == current.legal_values:
        return None
    return ContextFieldUpdated(
        name=current.name,
        description=current.description,
        legal_values=legal_values,
        stickiness=current.stickiness,
        sort_order=current.sort_order,
    )


def put_legal_value(
    name: str, body: commands.OneLegalValue, *, current: Field | None
) -> ContextFieldUpdated | None:
    """A value the field lacks is added last; one it has takes the new description (left
    out: none), in its place, as in Unleash. None: it is there as given, nothing recorded."""
    if current is None:
        raise missing(name)
    given = LegalValue(value=body.value, description=body.description)
    values = [given if v.value == body.value else v for v in current.legal_values]
    if given not in values:
        values.append(given)
    if len(values) > MAX_LEGAL_VALUES:
        raise ValidationError(
            f"A context field has at most {MAX_LEGAL_VALUES} legal values - at `$.value`"
        )
    return _changed(current, values)


def delete_legal_value(
    name: str, value: str, *, current: Field | None
) -> ContextFieldUpdated | None:
    """A value the field lacks is no change (200, as in Unleash, but nothing recorded)."""
    if current is None:
        raise missing(name)
    return _changed(current, [v for v in current.legal_values if v.value != value])


def delete_field(name: str, *, current: Field | None) -> ContextFieldDeleted:
    """Unlike Unleash, a built-in field is never deleted. A field that constraints use may
    be, as in Unleash: a constraint holds the field's name, and SDKs evaluate it the same."""
    if current is None:
        raise missing(name)
    if current.built_in:
        raise InvalidOperation(
            f"Cannot delete context field {name}: every SDK's context has it (built in)"
        )
    return ContextFieldDeleted(name=name)
