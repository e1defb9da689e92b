"""Personal values in and out of their stored form, by the Structs' declarations.

Stored, a personal value is `{"person": <id>, "sealed": "<base64url>"}` where a string was
(`crypto.DataKey.seal`); a value stored unsealed (events written before encryption existed) is
the plain string, which decodes as it is. The JSON type tells the two apart, so no event needs
a new version: the Structs are the same, only their stored encoding differs. Pure: the keys are
given.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Final, Protocol

import msgspec

from eventlog.privacy import fields
from eventlog.privacy.crypto import PLACEHOLDER

if TYPE_CHECKING:
    from collections.abc import Mapping

    from eventlog.events.base import Declared
    from eventlog.privacy.crypto import DataKey

# In stored JSON (ours: no spaces; PostgreSQL's jsonb text: ", " and ": "), the start of a
# sealed value. An escaped quote inside a string never matches, so a plain text that merely
# looks like one cannot: a hit is a sealed value (or, harmlessly, a dict key named so).
MARK: Final = '"sealed":'  # also the start of PostgreSQL's '"sealed": '
SEALED_PERSON: Final = re.compile(r'\{"person": ?(\d+), ?"sealed": ?"')


class Opener(Protocol):
    def open(self, person: int, sealed: str) -> str: ...


class _NoKeys:
    """The opener of a reader given no keys: a sealed value it meets is a bug, not an erasure."""

    def open(self, person: int, sealed: str) -> str:  # noqa: ARG002 - the Opener protocol
        raise RuntimeError(f"person {person}'s value was read without keys")


NO_KEYS: Final[Opener] = _NoKeys()


class Sealed(msgspec.Struct, frozen=True):
    """A sealed value as stored (field order as PostgreSQL's jsonb keeps it)."""

    person: int
    sealed: str


def holds_sealed(raw: str) -> bool:
    return MARK in raw


def persons_sealed_in(raw: str) -> set[int]:
    """The persons whose sealed values a stored JSON text holds."""
    return {int(found) for found in SEALED_PERSON.findall(raw)} if holds_sealed(raw) else set()


def owners(value: Declared) -> set[int]:
    """The persons whose data a Struct (an event, or metadata) holds in personal fields."""
    plan = fields.plan(type(value))
    if plan is None:
        return set()
    personal = plan.cls.personal
    if not plan.nested and personal is not None and personal.when is not None:
        # (every append's metadata: an API token's is no person's, and needs no converting)
        field, wanted = personal.when
        if getattr(value, field) != wanted:
            return set()
    found: set[int] = set()
    _owners(msgspec.to_builtins(value), plan, found)
    return found


def _owners(data: dict[str, Any], plan: fields.Plan, found: set[int]) -> None:
    person = fields.owner_in(data, plan.cls)
    personal = plan.cls.personal
    if (
        person is not None
        and personal is not None
        and any(isinstance(data.get(f), str) for f in personal.fields)
    ):
        found.add(person)
    for name, inner_plan in plan.nested:
        for item in _items(data.get(name)):
            _owners(item, inner_plan, found)


def _items(value: object) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, dict)]
    return []


def sealed_form(value: Declared, keys: Mapping[int, DataKey | None]) -> Any:
    """What to store for a Struct: itself when nothing in it is personal, else its plain
    values with each personal string sealed with its person's key (the placeholder for a
    person whose key is gone)."""
    plan = fields.plan(type(value))
    if plan is None:
        return value
    data = msgspec.to_builtins(value)
    _seal(data, plan, keys)
    return data


def _seal(data: dict[str, Any], plan: fields.Plan, keys: Mapping[int, DataKey | None]) -> None:
    personal = plan.cls.personal
    person = fields.owner_in(data, plan.cls)
    if person is not None and personal is not None:
        for name in personal.fields:
            text = data.get(name)
            if isinstance(text, str):
                key = keys[person]
                data[name] = (
                    PLACEHOLDER
                    if key is None
                    else {"person": person, "sealed": key.seal(person, text)}
                )
    for name, inner_plan in plan.nested:
        for item in _items(data.get(name)):
            _seal(item, inner_plan, keys)


def opened(data: dict[str, Any], cls: type[Declared], keys: Opener) -> dict[str, Any]:
    """Stored values (as plain JSON values) with each sealed one opened, in place."""
    plan = fields.plan(cls)
    if plan is not None:
        _open(data, plan, keys)
    return data


def _open(data: dict[str, Any], plan: fields.Plan, keys: Opener) -> None:
    personal = plan.cls.personal
    if personal is not None:
        for name in personal.fields:
            value = data.get(name)
            if isinstance(value, dict):
                data[name] = keys.open(int(value["person"]), str(value["sealed"]))
    for name, inner_plan in plan.nested:
        for item in _items(data.get(name)):
            _open(item, inner_plan, keys)


# A whole sealed value in PostgreSQL's text of a jsonb value (base64 needs no escapes).
_SEALED_VALUE: Final = re.compile(r'\{"person": (\d+), "sealed": "([A-Za-z0-9+/=]*)"\}')


def with_values(stored: str, keys: Opener) -> str:
    """PostgreSQL's text of stored JSON with `"value"` added to every sealed value: the opened
    text, or the placeholder (what `export` writes; tools/verify_export.py takes it out again to
    check the hash, which is over what is stored). The rest of the text is left as it was."""
    if not holds_sealed(stored):
        return stored

    def opened(found: re.Match[str]) -> str:
        value = msgspec.json.encode(keys.open(int(found[1]), found[2])).decode()
        return f'{{"person": {found[1]}, "sealed": "{found[2]}", "value": {value}}}'

    return _SEALED_VALUE.sub(opened, stored)
