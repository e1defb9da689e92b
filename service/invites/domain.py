"""Invite links: pure decisions, no I/O."""

from __future__ import annotations

import calendar
from datetime import datetime
from typing import TYPE_CHECKING, Final

import msgspec

from eventlog.events.invites import InviteLinkCreated, InviteLinkUpdated, InviteLinkUsed
from service.auth import ROOT_ROLES, hash_secret
from service.errors import NotFound, ValidationError
from service.users import domain as users
from service.users.commands import CreateUser

if TYPE_CHECKING:
    from eventlog.events.users import PasswordChanged, UserCreated
    from service.invites.commands import CreateInviteLink, SignUp, UpdateInviteLink

VIEWER: Final = 3  # Unleash's links always invite Viewers
assert ROOT_ROLES[VIEWER].name == "Viewer"
DECEMBER: Final = 12
HINT_SHOWN: Final = 4  # characters of a secret its hint shows (of 64 random hex digits)


class Link(msgspec.Struct, frozen=True, kw_only=True):
    """A link as decisions about it need it (its row, locked)."""

    id: int
    root_role: int
    enabled: bool
    expires_at: datetime

    def valid(self, now: datetime) -> bool:
        return self.enabled and self.expires_at > now


def stream(link_id: int) -> tuple[str, str]:
    return ("invite-link", str(link_id))


def link_missing() -> NotFound:
    return NotFound("Could not find public signup token.")


def invalid_link() -> ValidationError:
    """Unleash answers an unknown, expired or disabled link with a bare 400 on its public
    routes, so the new-user page tells nobody which links exist."""
    return ValidationError("The invite link is not valid: it does not exist or has expired")


def secret_hint(secret: str) -> str:
    return f"{secret[:HINT_SHOWN]}{'*' * 8}"


def a_month_after(moment: datetime) -> datetime:
    """The same day and time of the next month (its last day when it has fewer)."""
    if moment.month == DECEMBER:
        year, month = moment.year + 1, 1
    else:
        year, month = moment.year, moment.month + 1
    day = min(moment.day, calendar.monthrange(year, month)[1])
    return moment.replace(year=year, month=month, day=day)


def create_invite_link(
    cmd: CreateInviteLink, *, link_id: int, secret: str, now: datetime
) -> InviteLinkCreated:
    """`POST /api/admin/invite-link/tokens`. secret: the new link's, shown once in the answer."""
    name = users.clean_text(cmd.name, "$.name")
    if name is None:
        raise ValidationError("name must not be blank - at `$.name`")
    return InviteLinkCreated(
        link_id=link_id,
        name=name,
        secret_hash=hash_secret(secret),
        secret_hint=secret_hint(secret),
        root_role=VIEWER,
        created_at=now,
        expires_at=min(cmd.expires_at, a_month_after(now)),
    )


def update_invite_link(link: Link | None, cmd: UpdateInviteLink) -> InviteLinkUpdated | None:
    """`PUT /api/admin/invite-link/tokens/{token}`; None when nothing changes."""
    if link is None:
        raise link_missing()
    if cmd.expires_at is None and cmd.enabled is None:
        raise ValidationError("Give expiresAt or enabled - at `$`")
    expires_at = link.expires_at if cmd.expires_at is None else cmd.expires_at
    enabled = link.enabled if cmd.enabled is None else cmd.enabled
    if expires_at == link.expires_at and enabled == link.enabled:
        return None
    return InviteLinkUpdated(link_id=link.id, expires_at=expires_at, enabled=enabled)


def sign_up(
    link: Link | None, cmd: SignUp, *, user_id: int, password_hash: str, now: datetime
) -> tuple[list[UserCreated | PasswordChanged], InviteLinkUsed]:
    """`POST /invite/{token}/signup`: the new account's events (on its stream) and the link's.
    password_hash: of the password given (checked for strength before it was hashed)."""
    if link is None or not link.valid(now):
        raise invalid_link()
    if users.clean_email(cmd.email) is None:
        raise ValidationError("email must not be blank - at `$.email`")
    account = CreateUser(
        root_role=link.root_role, email=cmd.email, name=cmd.name, username=cmd.username
    )
    created = users.create_user(account, user_id=user_id, password_hash=password_hash, now=now)
    return created, InviteLinkUsed(link_id=link.id, user_id=user_id)
