"""Response bodies of the personal dashboard (Unleash's personalDashboardSchema and
personalDashboardProjectDetailsSchema), built here and only here."""

from __future__ import annotations

from datetime import datetime

import msgspec

from service.projects.responses import OnboardingStatus, ProjectOwner


class PersonalProject(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    id: str
    name: str
    health: int
    member_count: int = 0
    feature_count: int


class PersonalFlag(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    type: str
    project: str


class Admin(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """A person with the Admin root role; a field they lack is left out (as Unleash does)."""

    id: int
    name: str | None = None
    username: str | None = None
    email: str | None = None
    image_url: str


class PersonalDashboard(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    projects: list[PersonalProject]
    flags: list[PersonalFlag]
    project_owners: list[ProjectOwner] = []  # projects have no owners of their own
    admins: list[Admin]


class LatestEvent(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    created_at: datetime
    summary: str  # Markdown, as Unleash's UI renders it
    created_by: str
    id: int  # the event's log position
    created_by_image_url: str


class Insights(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    # Averages of the health over past weeks: null, as no health history is kept yet.
    avg_health_current_window: int | None = None
    avg_health_past_window: int | None = None
    total_flags: int
    potentially_stale_flags: int
    stale_flags: int
    active_flags: int
    health: int


class ProjectRole(msgspec.Struct, frozen=True, kw_only=True):
    id: int
    name: str
    type: str


class PersonalProjectDetails(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    latest_events: list[LatestEvent]
    onboarding_status: OnboardingStatus
    owners: list[ProjectOwner]
    roles: list[ProjectRole] = []  # no project roles: every role is a root role
    insights: Insights
