"""HTTP handlers of the personal dashboard: `GET /api/admin/personal-dashboard` (the caller's
flags and projects, and the admins) and `GET /api/admin/personal-dashboard/:projectId` (a
project's latest events and insights). A person's own page: OWN_ACCOUNT."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Final

from service import auth
from service.appkeys import POOL
from service.audit import logsearch
from service.avatars import image_url
from service.dashboard import queries
from service.dashboard.responses import (
    Admin,
    Insights,
    LatestEvent,
    PersonalDashboard,
    PersonalFlag,
    PersonalProject,
    PersonalProjectDetails,
)
from service.errors import NotFound
from service.favorites.handlers import person
from service.http.answers import json_response
from service.http.routes import Route
from service.projects import queries as projects
from service.projects.responses import SYSTEM_OWNERS, OnboardingStatus, ProjectSummary

if TYPE_CHECKING:
    from aiohttp import web

    from service.audit.logsearch import LogEntry

LATEST_EVENTS: Final = 10
DEFAULT_PROJECT: Final = "default"  # every person's, as every root role holds it in Unleash
# What an event did, in the words of Unleash's summaries (its event type -> verb phrase).
_DONE: Final = {
    "feature-created": "created",
    "feature-archived": "archived",
    "feature-revived": "revived",
    "feature-stale-on": "marked as stale",
    "feature-stale-off": "marked as not stale",
    "feature-strategy-add": "added a strategy to",
    "feature-strategy-update": "updated a strategy of",
    "feature-strategy-remove": "removed a strategy from",
    "feature-environment-enabled": "enabled",
    "feature-environment-disabled": "disabled",
    "feature-environment-variants-updated": "updated variants for",
    "feature-tagged": "tagged",
    "feature-untagged": "untagged",
    "feature-dependency-added": "added a dependency to",
    "feature-dependency-removed": "removed a dependency from",
}


async def personal_dashboard(request: web.Request) -> web.Response:
    user_id = person(request)
    async with request.app[POOL].acquire() as conn:
        projects_rows = await conn.fetch(projects.PROJECTS_FOR_UI, user_id)
        flags = await conn.fetch(queries.PERSONAL_FLAGS, user_id)
        admins = await conn.fetch(queries.ADMINS)
    mine = sorted(
        (r for r in projects_rows if r["id"] == DEFAULT_PROJECT or r["favorite"]),
        key=lambda r: (r["name"], r["id"]),
    )
    return json_response(
        PersonalDashboard(
            projects=[
                PersonalProject(
                    id=r["id"],
                    name=r["name"],
                    health=ProjectSummary.from_row(r).health,
                    feature_count=r["feature_count"],
                )
                for r in mine
            ],
            flags=[
                PersonalFlag(name=f["name"], type=f["type"], project=f["project"]) for f in flags
            ],
            admins=[
                Admin(
                    id=a["id"],
                    name=a["name"],
                    username=a["username"],
                    email=a["email"],
                    image_url=image_url(a["email"], a["username"], a["id"]),
                )
                for a in admins
            ],
        )
    )


def summary(entry: LogEntry) -> str:
    """The event in a sentence of Markdown, with links to the UI's pages of its flag and
    project."""
    record = entry.recorded
    who = f"**{record.metadata.actor_name}**"
    project = entry.project or ""
    where = f"in project **[{project}](/projects/{project})**"
    if record.stream_type == "feature":
        flag = record.stream_key
        link = f"**[{flag}](/projects/{project}/features/{flag})**"
        done = _DONE.get(entry.kind)
        if done is not None:
            return f"{who} {done} {link} {where}"
        return f"{who} recorded {entry.kind} for {link} {where}"
    return f"{who} recorded {entry.kind} {where}"


def latest_event(entry: LogEntry) -> LatestEvent:
    record = entry.recorded
    assert record.position is not None  # a stored event has its position
    created_by = record.metadata.actor_name
    digest = hashlib.sha256(created_by.strip().lower().encode()).hexdigest()
    return LatestEvent(
        created_at=record.recorded_at,
        summary=summary(entry),
        created_by=created_by,
        id=record.position,
        created_by_image_url=f"https://gravatar.com/avatar/{digest}?s=42&d=retro&r=g",
    )


async def personal_project(request: web.Request) -> web.Response:
    project_id = request.match_info["projectId"]
    user_id = person(request)
    async with request.app[POOL].acquire() as conn:
        row = await conn.fetchrow(projects.PROJECT_FOR_UI, user_id, project_id)
        if row is None:
            raise NotFound(f'No project with id "{project_id}" exists.')
        onboarding = await conn.fetchrow(projects.ONBOARDING, project_id)
        found = logsearch.LogFilter(projects=[project_id])
        async with conn.transaction(readonly=True):  # the search's settings are its own
            latest = await logsearch.search(conn, found, limit=LATEST_EVENTS)
    assert onboarding is not None  # a SELECT without FROM has its one row
    total, stale, potentially = (
        row["feature_count"],
        row["stale_flags"],
        row["potentially_stale_flags"],
    )
    return json_response(
        PersonalProjectDetails(
            latest_events=[latest_event(e) for e in latest],
            onboarding_status=OnboardingStatus.from_row(onboarding),
            owners=SYSTEM_OWNERS,
            insights=Insights(
                total_flags=total,
                potentially_stale_flags=potentially,
                stale_flags=stale,
                active_flags=total - stale - potentially,
                health=ProjectSummary.from_row(row).health,
            ),
        )
    )


ROUTES = [
    Route(
        "GET",
        "/api/admin/personal-dashboard",
        personal_dashboard,
        auth.OWN_ACCOUNT,
        ok={200: PersonalDashboard},
    ),
    Route(
        "GET",
        "/api/admin/personal-dashboard/{projectId}",
        personal_project,
        auth.OWN_ACCOUNT,
        ok={200: PersonalProjectDetails},
    ),
]
