"""Events of the project and environment streams."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from eventlog.events.base import Event


class EnvironmentCreated(Event, frozen=True, kw_only=True, tag="EnvironmentCreated"):
    """A new environment exists (enabled in no project until a project enables it)."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "environment_type")

    name: str
    environment_type: str
    sort_order: int
    created_at: datetime


class ProjectCreated(Event, frozen=True, kw_only=True, tag="ProjectCreated"):
    """A project exists, with every environment that existed at that moment enabled in it."""

    not_personal: ClassVar[tuple[str, ...]] = ("project_id", "name", "description", "environments")

    project_id: str
    name: str
    description: str | None
    environments: list[str]
    created_at: datetime


class ProjectArchived(Event, frozen=True, kw_only=True, tag="ProjectArchived"):
    """An empty project was archived; no flag can be created in it any more."""

    not_personal: ClassVar[tuple[str, ...]] = ("project_id",)

    project_id: str
    archived_at: datetime


class ProjectEnvironmentEnabled(Event, frozen=True, kw_only=True, tag="ProjectEnvironmentEnabled"):
    """Flags of the project now show this environment."""

    not_personal: ClassVar[tuple[str, ...]] = ("project_id", "environment")

    project_id: str
    environment: str


class ProjectEnvironmentDisabled(
    Event, frozen=True, kw_only=True, tag="ProjectEnvironmentDisabled"
):
    """Flags of the project no longer show this environment (their settings there are kept)."""

    not_personal: ClassVar[tuple[str, ...]] = ("project_id", "environment")

    project_id: str
    environment: str
