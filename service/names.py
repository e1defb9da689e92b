"""The naming rule shared by flags, projects and environments (docs/behavior.md, "Names")."""

from __future__ import annotations

import re
from typing import Annotated

import msgspec

from service.errors import ValidationError

MAX_LENGTH = 100
_CHARACTERS = r"[A-Za-z0-9\-_.!~*'()]+"
_ALLOWED = re.compile(_CHARACTERS)

# A name in a request Struct: the rule below, told to the OpenAPI document (the JSON Schema).
# validate_name still checks it, with the messages Unleash's users know, after decoding.
Name = Annotated[
    str,
    msgspec.Meta(
        extra_json_schema={
            "minLength": 1,
            "maxLength": MAX_LENGTH,
            "pattern": f"^{_CHARACTERS}$",
            "not": {"enum": [".", ".."]},
        }
    ),
]


def validate_name(value: str, path: str = "$.name", what: str = "Name") -> str:
    """1..100 URL-safe characters, not `.` or `..`; otherwise a 400 naming the field."""
    if not value:
        raise ValidationError(f"{what} must not be empty - at `{path}`")
    if len(value) > MAX_LENGTH:
        raise ValidationError(f"{what} must be at most {MAX_LENGTH} characters - at `{path}`")
    if not _ALLOWED.fullmatch(value) or value in {".", ".."}:
        raise ValidationError(
            f"{what} may only contain letters, digits and - _ . ! ~ * ' ( ), "
            f"and may not be '.' or '..' - at `{path}`"
        )
    return value


# Tag values (on flags and as tags of a type): trimmed, then 2 to 50 characters, as in Unleash.
TAG_VALUE_LENGTH = (2, 50)


def tag_value(body_value: str, path: str = "$.value") -> str:
    """The value as stored: trimmed, and 2..50 characters long; otherwise a 400."""
    value = body_value.strip()
    low, high = TAG_VALUE_LENGTH
    if not low <= len(value) <= high:
        raise ValidationError(f"Tag value must be {low} to {high} characters - at `{path}`")
    return value
