"""Stored events of a flag's links and of its lifecycle's completion (issue 43), on the flag's
stream (`feature/<name>`).

A link's URL and title are what a team wrote about the flag, like its description: not
personal data (docs/privacy.md, "What is personal"), so nothing here is sealed.
"""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from eventlog.events.base import Event


class FeatureLinkAdded(Event, frozen=True, kw_only=True, tag="FeatureLinkAdded"):
    """A link (its id chosen at the add) now belongs to the flag."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "project", "link_id", "url", "title")

    name: str
    project: str
    link_id: str
    url: str
    title: str | None
    added_at: datetime


class FeatureLinkUpdated(Event, frozen=True, kw_only=True, tag="FeatureLinkUpdated"):
    """One of the flag's links got a new URL and title (both as they are from now on)."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "project", "link_id", "url", "title")

    name: str
    project: str
    link_id: str
    url: str
    title: str | None


class FeatureLinkRemoved(Event, frozen=True, kw_only=True, tag="FeatureLinkRemoved"):
    """One of the flag's links is gone."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "project", "link_id")

    name: str
    project: str
    link_id: str


class FeatureCompleted(Event, frozen=True, kw_only=True, tag="FeatureCompleted"):
    """The flag entered lifecycle stage `completed`: its team learnt what it wanted, and kept
    the feature or discarded it (`status`), optionally naming the variant kept."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "project", "status", "status_value")

    name: str
    project: str
    status: str  # kept | discarded
    status_value: str | None
    completed_at: datetime


class FeatureUncompleted(Event, frozen=True, kw_only=True, tag="FeatureUncompleted"):
    """The flag left stage `completed`: it is back at the stage its switches give it."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "project")

    name: str
    project: str
