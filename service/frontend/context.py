"""The Unleash context of a frontend API request, made as Unleash's createContext and
enrichContextWithIp make it: from the query (GET) or the body's `context` (POST), the root
fields (appName, environment, userId, sessionId, remoteAddress, currentTime; empty ones count
as absent), every other field a property, and the explicit properties (`properties[name]=` in
the query, `properties` in the body) over plain fields of the same name. The remote address is
the request's when none is given, and a session id is made up when none is given. Pure."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING

from service.errors import ValidationError
from service.frontend.commands import MAX_NAME, MAX_PROPERTIES, MAX_VALUE, ROOT_FIELDS

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

PROPERTIES = "properties"
_PROPERTY_PARAM = re.compile(r"^properties\[([^\[\]]*)\]$")
SESSION_ID_BYTES = 18  # as Unleash makes one up: 18 random bytes in hex


@dataclass(frozen=True, slots=True)
class Context:
    """`root`: the root fields (in ROOT_FIELDS); `properties`: every property;
    `session_made`: the session id is made up here (the client gave none)."""

    root: Mapping[str, str]
    properties: Mapping[str, str]
    session_made: bool = False


def from_query(items: Iterable[tuple[str, str]]) -> tuple[dict[str, str], dict[str, str]]:
    """The fields and the explicit properties of a query (each parameter at most once)."""
    fields: dict[str, str] = {}
    explicit: dict[str, str] = {}
    for key, value in items:
        if key == PROPERTIES:
            raise ValidationError(
                "Properties are given as properties[name]=value (or name=value) - at `properties`"
            )
        found = _PROPERTY_PARAM.match(key)
        target, name = (explicit, found[1]) if found else (fields, key)
        if name in target:
            raise ValidationError(f"{key} may be given only once - at `{_shown(key)}`")
        _check(key, name, value)
        target[name] = value
    return fields, explicit


def from_body(
    context: Mapping[str, str | Mapping[str, str] | None] | None,
) -> tuple[dict[str, str], dict[str, str]]:
    """The fields and the explicit properties of a body's `context` (its limits are the
    request Struct's)."""
    fields: dict[str, str] = {}
    explicit: dict[str, str] = {}
    for key, value in (context or {}).items():
        if key == PROPERTIES:
            if isinstance(value, str):
                raise ValidationError("Expected `object`, got `str` - at `$.context.properties`")
            explicit.update(value or {})
        elif isinstance(value, str):
            fields[key] = value
        elif value is not None:
            raise ValidationError(f"Expected `str`, got `object` - at `$.context.{_shown(key)}`")
    return fields, explicit


def make(fields: Mapping[str, str], explicit: Mapping[str, str], remote_address: str) -> Context:
    """The context: root fields, the rest properties; remoteAddress and sessionId filled in."""
    root = {name: fields[name] for name in ROOT_FIELDS if fields.get(name)}
    properties = {name: value for name, value in fields.items() if name not in ROOT_FIELDS}
    properties.update(explicit)
    if len(properties) > MAX_PROPERTIES:
        raise ValidationError(
            f"A context has at most {MAX_PROPERTIES} properties, not {len(properties)}"
        )
    root.setdefault("remoteAddress", remote_address)
    made = "sessionId" not in root
    if made:
        root["sessionId"] = secrets.token_hex(SESSION_ID_BYTES)
    return Context(root=root, properties=properties, session_made=made)


def _check(key: str, name: str, value: str) -> None:
    if not name:
        raise ValidationError(f"A context field needs a name - at `{_shown(key)}`")
    if len(name) > MAX_NAME:
        raise ValidationError(
            f"Expected a name of at most {MAX_NAME} characters - at `{_shown(key)}`"
        )
    if len(value) > MAX_VALUE:
        raise ValidationError(
            f"Expected a value of at most {MAX_VALUE} characters - at `{_shown(key)}`"
        )


def _shown(key: str) -> str:
    """A name from the request, cut short for a message."""
    return key if len(key) <= MAX_NAME else key[: MAX_NAME - 3] + "..."
