"""Stored events of invite links, Unleash's public signup tokens (stream `invite-link/<id>`).
A link is known by the sha256 of its secret and a masked hint, never by the secret."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from eventlog.events.base import Event


class InviteLinkCreated(Event, frozen=True, kw_only=True, tag="InviteLinkCreated"):
    """An invite link was made: whoever opens it may sign up with `root_role` until
    `expires_at`. Who made it is the event's actor."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "secret_hash", "secret_hint")

    link_id: int
    name: str
    secret_hash: str
    secret_hint: str
    root_role: int
    created_at: datetime
    expires_at: datetime


class InviteLinkUpdated(Event, frozen=True, kw_only=True, tag="InviteLinkUpdated"):
    """A link's expiry or its being enabled, with their values after the change (expiring a
    link is setting `expires_at` to the time of the change)."""

    link_id: int
    expires_at: datetime
    enabled: bool


class InviteLinkUsed(Event, frozen=True, kw_only=True, tag="InviteLinkUsed"):
    """Someone signed up through the link: the account `user_id`, created on its own stream in
    the same transaction (UserCreated, PasswordChanged)."""

    link_id: int
    user_id: int
