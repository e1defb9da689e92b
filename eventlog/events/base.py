"""The base of every stored event: the Event Struct, the metadata envelope, upcasters.

A stored event is forever. Event Structs (one module a feature here) carry no request limits
(no lengths, ranges, patterns or enumerations: what was stored must always decode), name every
field in snake_case, nested ones included, and never reuse a request or response Struct.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple

import msgspec


class Personal(NamedTuple):
    """Which fields of a stored Struct hold a person's data, and whose: the person's id is in
    the field `owner` (an int, or `user:<id>` as an actor id). Those fields are sealed with the
    person's key when stored (eventlog/privacy) and read `"[erased]"` once the key is destroyed.
    With `when` (a field and a value), the fields are personal only when that field has that
    value (an actor is a person only when its kind is `user`)."""

    owner: str
    fields: tuple[str, ...]
    when: tuple[str, str] | None = None


class Declared(msgspec.Struct, frozen=True, kw_only=True):
    """A stored Struct declares each of its text fields (str, nested in lists or dicts too)
    once: personal (`personal`) or not (`not_personal`). tests/audit/test_privacy.py fails for a
    text field declared neither way, or both."""

    personal: ClassVar[Personal | None] = None
    not_personal: ClassVar[tuple[str, ...]] = ()


class Metadata(Declared, frozen=True, kw_only=True):
    """Who caused an event and through which request; never holds a secret. `actor_kind` is
    `api-token`, `user`, `service-account` or `system`; `source` `api`, `bootstrap`, `import`
    or `system`. A user's name is theirs (sealed); a token's or a service account's is not.
    `origin` marks what another server's state brought here: `import-unleash` sets it to the
    source Unleash's address (docs/migrating.md), so a later run knows what it wrote."""

    personal: ClassVar[Personal | None] = Personal(
        owner="actor_id", fields=("actor_name",), when=("actor_kind", "user")
    )
    not_personal: ClassVar[tuple[str, ...]] = (
        "actor_id",
        "actor_kind",
        "request_id",
        "source",
        "origin",
    )

    actor_id: str
    actor_name: str
    actor_kind: str
    request_id: str | None = None
    source: str = "api"
    origin: str | None = None


SYSTEM = Metadata(actor_id="system", actor_name="system", actor_kind="system", source="system")


class Event(Declared, frozen=True, kw_only=True, tag_field="type"):
    """A domain event. Subclasses set an explicit, stable `tag=` (the stored type name): it
    must never change once events of that type are stored, whatever the class is renamed to.
    `schema_version` is the version of the shape the class decodes; older stored versions are
    brought up to it by upcasters (`UPCASTERS` of the feature's events module)."""

    schema_version: ClassVar[int] = 1

    @classmethod
    def type_name(cls) -> str:
        tag = cls.__struct_config__.tag
        if not isinstance(tag, str):
            raise TypeError(f"{cls.__name__} needs an explicit tag= (its stored type name)")
        return tag


# Stored data of version N (as plain JSON values) -> the same event's data at version N + 1.
# Pure: no I/O, no clock, no randomness; a stored event is upcast the same way every time.
Upcaster = Callable[[dict[str, Any]], dict[str, Any]]
Upcasters = dict[tuple[str, int], Upcaster]
