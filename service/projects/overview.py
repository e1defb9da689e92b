"""HTTP handlers of a project's pages in Unleash's UI: the projects list with favourites, and a
project's overview, status and flag creators (docs/behavior.md, "Projects in the UI")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from service import auth
from service.appkeys import POOL
from service.features import queries as feature_queries
from service.features.responses import Feature
from service.http.answers import json_response
from service.http.past import reading
from service.http.requests import principal
from service.http.routes import Route
from service.projects import domain, queries
from service.projects.responses import (
    ActivityCount,
    CurrentHealth,
    DeprecatedProjectOverview,
    FeatureTypeCount,
    FlagCreator,
    LifecycleSummary,
    OnboardingStatus,
    OverviewEnvironment,
    OverviewFlag,
    ProjectOverview,
    ProjectResources,
    ProjectStats,
    ProjectStatus,
    ProjectSummary,
    ProjectSummaryList,
    StaleFlags,
)

if TYPE_CHECKING:
    import asyncpg
    from aiohttp import web

    from eventlog.connections import Conn


async def list_projects(request: web.Request) -> web.Response:
    """Every active project, with the caller's favourites marked (none for an API token)."""
    async with reading(request) as conn:
        rows = await conn.fetch(queries.PROJECTS_FOR_UI, principal(request).account_id)
    return json_response(ProjectSummaryList(projects=[ProjectSummary.from_row(r) for r in rows]))


async def _project(conn: Conn, request: web.Request) -> asyncpg.Record:
    """The path's project (archived ones too) as the list shows it; 404 when there is none."""
    project_id = request.match_info["projectId"]
    row = await conn.fetchrow(queries.PROJECT_FOR_UI, principal(request).account_id, project_id)
    if row is None:
        raise domain.project_missing(project_id)
    return row


async def project_overview(request: web.Request) -> web.Response:
    async with request.app[POOL].acquire() as conn:
        row = await _project(conn, request)
        project_id = row["id"]
        stats = await conn.fetchrow(queries.PROJECT_STATS, project_id)
        onboarding = await conn.fetchrow(queries.ONBOARDING, project_id)
        environments = await conn.fetch(queries.PROJECT_ENVIRONMENTS, project_id)
        types = await conn.fetch(queries.FEATURE_TYPE_COUNTS, project_id)
    assert stats is not None  # an aggregate has its one row
    assert onboarding is not None  # a SELECT without FROM has its one row
    summary = ProjectSummary.from_row(row)
    return json_response(
        ProjectOverview(
            stats=_stats(stats),
            name=summary.name,
            description=summary.description,
            health=summary.health,
            favorite=summary.favorite,
            archived_at=summary.archived_at,
            created_at=summary.created_at,
            onboarding_status=OnboardingStatus.from_row(onboarding),
            environments=[OverviewEnvironment.from_row(e) for e in environments],
            feature_type_counts=[FeatureTypeCount(type=t["type"], count=t["count"]) for t in types],
        )
    )


def _stats(row: asyncpg.Record) -> ProjectStats:
    """queries.PROJECT_STATS' row."""
    return ProjectStats(
        created_current_window=row["created_current"],
        created_past_window=row["created_past"],
        archived_current_window=row["archived_current"],
        archived_past_window=row["archived_past"],
        project_activity_current_window=row["activity_current"],
        project_activity_past_window=row["activity_past"],
    )


async def deprecated_overview(request: web.Request) -> web.Response:
    """Unleash's deprecated `GET /api/admin/projects/:projectId`: an active project's overview
    with its active flags (its stats count the last 30 days: no past state, as the overview)."""
    async with request.app[POOL].acquire() as conn:
        row = await _project(conn, request)
        if row["archived_at"] is not None:
            raise domain.project_missing(row["id"])
        stats = await conn.fetchrow(queries.PROJECT_STATS, row["id"])
        environments = await conn.fetch(queries.PROJECT_ENVIRONMENTS, row["id"])
        flags = await feature_queries.features(
            conn, await conn.fetch(feature_queries.ACTIVE_FEATURES_IN_PROJECT, row["id"])
        )
    assert stats is not None  # an aggregate has its one row
    summary = ProjectSummary.from_row(row)
    return json_response(
        DeprecatedProjectOverview(
            stats=_stats(stats),
            name=summary.name,
            description=summary.description,
            health=summary.health,
            favorite=summary.favorite,
            created_at=summary.created_at,
            environments=[OverviewEnvironment.from_row(e) for e in environments],
            features=[OverviewFlag.of(Feature.from_rows(*f)) for f in flags],
        )
    )


async def project_status(request: web.Request) -> web.Response:
    async with request.app[POOL].acquire() as conn:
        row = await _project(conn, request)
        project_id = row["id"]
        tokens = await conn.fetchval(queries.PROJECT_API_TOKENS, project_id)
        activity = await conn.fetch(queries.ACTIVITY_BY_DATE, project_id)
        lifecycle = await conn.fetchrow(queries.LIFECYCLE_COUNTS, project_id)
    assert lifecycle is not None  # an aggregate has its one row
    return json_response(
        ProjectStatus(
            resources=ProjectResources(api_tokens=tokens),
            activity_count_by_date=[
                ActivityCount(date=a["day"].isoformat(), count=a["events"]) for a in activity
            ],
            health=CurrentHealth(current=ProjectSummary.from_row(row).health),
            lifecycle_summary=LifecycleSummary.from_row(lifecycle),
            stale_flags=StaleFlags(total=row["stale_flags"]),
        )
    )


async def flag_creators(request: web.Request) -> web.Response:
    async with request.app[POOL].acquire() as conn:
        row = await _project(conn, request)
        rows = await conn.fetch(queries.FLAG_CREATORS, row["id"])
    return json_response([FlagCreator(id=r["user_id"], name=r["name"]) for r in rows])


ROUTES = [
    Route(
        "GET",
        "/api/admin/projects/{projectId}",
        deprecated_overview,
        auth.READ,
        ok={200: DeprecatedProjectOverview},
    ),
    Route(
        "GET",
        "/api/admin/projects/{projectId}/overview",
        project_overview,
        auth.READ,
        ok={200: ProjectOverview},
    ),
    Route(
        "GET",
        "/api/admin/projects/{projectId}/status",
        project_status,
        auth.READ,
        ok={200: ProjectStatus},
    ),
    Route(
        "GET",
        "/api/admin/projects/{projectId}/flag-creators",
        flag_creators,
        auth.READ,
        ok={200: list[FlagCreator]},
    ),
]
