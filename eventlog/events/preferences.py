"""Stored events of what a person told Unleash's web UI, on their stream `user/<id>`: a splash
screen or tip seen, a feedback prompt answered. Each is that person's own change."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from eventlog.events.base import Event


class SplashSeen(Event, frozen=True, kw_only=True, tag="SplashSeen"):
    """A person saw (and closed) one of the web UI's splash screens or tips, named by the UI
    (`personalDashboardKeyConcepts`, `strategy-drag-tooltip`...): the UI shows it no more."""

    not_personal: ClassVar[tuple[str, ...]] = ("splash_id",)

    user_id: int
    splash_id: str


class FeedbackRecorded(Event, frozen=True, kw_only=True, tag="FeedbackRecorded"):
    """A person answered one of the web UI's feedback prompts (`pnps`...): when, and whether
    it is never to be asked again. What they said goes to Unleash's own service, never here;
    a later answer to the same prompt replaces this one."""

    not_personal: ClassVar[tuple[str, ...]] = ("feedback_id",)

    user_id: int
    feedback_id: str
    given: datetime
    never_show: bool
