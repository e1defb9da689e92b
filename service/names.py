"""The naming rule shared by flags, projects and environments (behavior.md section 1)."""

from __future__ import annotations

import re

from service.errors import ValidationError

MAX_LENGTH = 100
_ALLOWED = re.compile(r"[A-Za-z0-9\-_.!~*'()]+")


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
