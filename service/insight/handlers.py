"""HTTP handlers of a project's insight: GET /api/admin/projects/:id/health-report, /dora and
/insights (docs/behavior.md, "Project insight"). Read as they are (no `?at=`: lead times are
an async read model, and SDK reports have no past)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Final

from service import auth
from service.appkeys import POOL
from service.errors import NotFound
from service.http.answers import json_response
from service.http.requests import principal
from service.http.routes import Route
from service.insight import queries
from service.insight.responses import (
    Counts,
    Dora,
    HealthFlag,
    HealthReport,
    InsightHealth,
    ProjectInsights,
)
from service.projects import domain as project_domain
from service.projects import queries as project_queries
from service.projects.responses import (
    FeatureTypeCount,
    OverviewEnvironment,
    ProjectStats,
    ProjectSummary,
)

if TYPE_CHECKING:
    import asyncpg
    from aiohttp import web

    from eventlog.connections import Conn

WINDOW: Final = timedelta(days=30)  # the stats' current window


async def _project(conn: Conn, request: web.Request) -> asyncpg.Record:
    project_id = request.match_info["projectId"]
    row = await conn.fetchrow(
        project_queries.PROJECT_FOR_UI, principal(request).account_id, project_id
    )
    if row is None:
        raise project_domain.project_missing(project_id)
    return row


def _stats(stats: asyncpg.Record, dora: Dora, created: dict[str, datetime]) -> ProjectStats:
    """The project's 30-day windows; the average lead time of the flags created in the
    current one (to a tenth of a day, as Unleash shows it)."""
    since = datetime.now(UTC) - WINDOW
    recent = [t.time_to_production for t in dora.features if created[t.name] >= since]
    return ProjectStats(
        avg_time_to_prod_current_window=round(sum(recent) / len(recent), 1) if recent else 0,
        created_current_window=stats["created_current"],
        created_past_window=stats["created_past"],
        archived_current_window=stats["archived_current"],
        archived_past_window=stats["archived_past"],
        project_activity_current_window=stats["activity_current"],
        project_activity_past_window=stats["activity_past"],
    )


async def _lead_times(conn: Conn, project_id: str) -> tuple[Dora, dict[str, datetime]]:
    rows = await conn.fetch(queries.LEAD_TIMES, project_id)
    return Dora.from_rows(rows), {r["name"]: r["created_at"] for r in rows}


async def health_report(request: web.Request) -> web.Response:
    async with request.app[POOL].acquire() as conn:
        row = await _project(conn, request)
        project_id = row["id"]
        stats = await conn.fetchrow(project_queries.PROJECT_STATS, project_id)
        environments = await conn.fetch(project_queries.PROJECT_ENVIRONMENTS, project_id)
        flags = [HealthFlag.from_row(r) for r in await conn.fetch(queries.FLAGS, project_id)]
        dora, created = await _lead_times(conn, project_id)
    assert stats is not None  # an aggregate has its one row
    summary, counts = ProjectSummary.from_row(row), Counts.of(flags)
    return json_response(
        HealthReport(
            stats=_stats(stats, dora, created),
            name=summary.name,
            description=summary.description,
            health=counts.rating,
            favorite=summary.favorite,
            updated_at=summary.last_updated_at,
            created_at=summary.created_at,
            environments=[OverviewEnvironment(environment=e["name"]) for e in environments],
            features=flags,
            potentially_stale_count=counts.potentially_stale,
            active_count=counts.active,
            stale_count=counts.stale,
        )
    )


async def dora(request: web.Request) -> web.Response:
    """As in Unleash, a project that does not exist has no flags (not a 404)."""
    async with request.app[POOL].acquire() as conn:
        found, _ = await _lead_times(conn, request.match_info["projectId"])
    return json_response(found)


async def insights(request: web.Request) -> web.Response:
    async with request.app[POOL].acquire() as conn:
        row = await _project(conn, request)
        project_id = row["id"]
        stats = await conn.fetchrow(project_queries.PROJECT_STATS, project_id)
        types = await conn.fetch(project_queries.FEATURE_TYPE_COUNTS, project_id)
        flags = [HealthFlag.from_row(r) for r in await conn.fetch(queries.FLAGS, project_id)]
        found, created = await _lead_times(conn, project_id)
    assert stats is not None  # an aggregate has its one row
    counts = Counts.of(flags)
    return json_response(
        ProjectInsights(
            stats=_stats(stats, found, created),
            feature_type_counts=[FeatureTypeCount(type=t["type"], count=t["count"]) for t in types],
            health=InsightHealth(
                active_count=counts.active,
                potentially_stale_count=counts.potentially_stale,
                stale_count=counts.stale,
                rating=counts.rating,
            ),
            lead_time=found,
        )
    )


PROJECT: Final = "/api/admin/projects/{projectId}"
ROUTES = [
    Route(
        "GET",
        PROJECT + "/health-report",
        health_report,
        auth.READ,
        ok={200: HealthReport},
        errors=(NotFound,),
    ),
    Route("GET", PROJECT + "/dora", dora, auth.READ, ok={200: Dora}),
    Route(
        "GET",
        PROJECT + "/insights",
        insights,
        auth.READ,
        ok={200: ProjectInsights},
        errors=(NotFound,),
    ),
]
