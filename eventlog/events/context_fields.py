"""Stored events of context fields (stream `context-field/<name>`). The fields every SDK's
context has (environment, userId, appName, currentTime, sessionId) are constants of the
service, like the rows Unleash seeds: they have events only once they are changed."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from eventlog.events.base import Declared, Event


class LegalValue(Declared, frozen=True, kw_only=True):
    """A value a constraint on the field may take, with what it means."""

    not_personal: ClassVar[tuple[str, ...]] = ("value", "description")

    value: str
    description: str | None


class ContextFieldCreated(Event, frozen=True, kw_only=True, tag="ContextFieldCreated"):
    """A custom context field exists."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "description")

    name: str
    description: str | None
    legal_values: list[LegalValue]
    stickiness: bool
    sort_order: int
    created_at: datetime


class ContextFieldUpdated(Event, frozen=True, kw_only=True, tag="ContextFieldUpdated"):
    """A context field (built in or custom) as it is after an update: every field, changed or
    not, so that the event alone rebuilds a built-in field's first change."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "description")

    name: str
    description: str | None
    legal_values: list[LegalValue]
    stickiness: bool
    sort_order: int


class ContextFieldDeleted(Event, frozen=True, kw_only=True, tag="ContextFieldDeleted"):
    """A custom context field was deleted; its name is free again. Constraints that name it
    stay as they are (they hold the name, not the field)."""

    not_personal: ClassVar[tuple[str, ...]] = ("name",)

    name: str
