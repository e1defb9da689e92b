"""Users: pure decisions over accounts, roles and sign-ins; no I/O."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

from service.auth import ROOT_ROLES
from service.errors import ValidationError
from service.users.events import UserCreated, UserUpdated

if TYPE_CHECKING:
    from datetime import datetime

    from service.users.commands import CreateUser, RootRoleRef, UpdateUser

# Something@domain.tld without spaces: what a mail server could deliver to.
_EMAIL: Final = re.compile(r"^[^@\s]+@[^@\s.]+(\.[^@\s.]+)+$")
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f]")
USER_EXISTS: Final = "User already exists"


def user_stream(user_id: int) -> tuple[str, str]:
    return ("user", str(user_id))


def root_role_id(ref: RootRoleRef, path: str = "$.rootRole") -> int:
    """A root role given by id or by name (any case)."""
    if isinstance(ref, int):
        if ref in ROOT_ROLES:
            return ref
    else:
        for role in ROOT_ROLES.values():
            if role.name.lower() == ref.strip().lower():
                return role.id
    raise ValidationError(f"Could not find rootRole={ref}; root roles are 1, 2, 3 - at `{path}`")


def clean_text(value: str | None, path: str) -> str | None:
    """Surrounding spaces dropped, empty is null, control characters refused."""
    if value is None:
        return None
    if _CONTROL.search(value):
        raise ValidationError(f"Control characters are not allowed - at `{path}`")
    return value.strip() or None


def looks_like_email(value: str) -> bool:
    return _EMAIL.match(value) is not None


def clean_email(value: str | None, path: str = "$.email") -> str | None:
    """Stored lower-cased, as Unleash does."""
    email = clean_text(value, path)
    if email is not None and not _EMAIL.match(email):
        raise ValidationError(f'"{email}" is not a valid email - at `{path}`')
    return email.lower() if email is not None else None


def create_user(cmd: CreateUser, *, user_id: int, now: datetime) -> UserCreated:
    """Uniqueness of email and username (any case) is the read model's unique indexes' job."""
    email = clean_email(cmd.email)
    username = clean_text(cmd.username, "$.username")
    if email is None and username is None:
        raise ValidationError("You must specify username or email")
    role = root_role_id(cmd.root_role)
    return UserCreated(
        user_id=user_id,
        name=clean_text(cmd.name, "$.name"),
        username=username,
        email=email,
        root_role=role,
        created_at=now,
    )


def update_user(current: UserUpdated, cmd: UpdateUser) -> UserUpdated | None:
    """The account after the update, or None when nothing changes. As in Unleash, a field
    left out, null or blank keeps its value."""
    name = clean_text(cmd.name, "$.name") or current.name
    email = clean_email(cmd.email) or current.email
    role = current.root_role if cmd.root_role is None else root_role_id(cmd.root_role)
    updated = UserUpdated(user_id=current.user_id, name=name, email=email, root_role=role)
    return None if updated == current else updated
