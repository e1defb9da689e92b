"""HTTP handlers of /api/admin/metrics/applications, .../instances, .../sdks/outdated and a
project's applications and outdated SDKs (docs/behavior.md, "Applications"). Reads come from
schema `telemetry` and the read model `applications` as they are (no `?at=`: telemetry has no
past)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

import msgspec

from service import auth
from service.appkeys import POOL
from service.applications import domain, queries
from service.applications.commands import DEFAULT_LIMIT, SetApplication
from service.applications.responses import (
    Application,
    ApplicationEnvironment,
    ApplicationList,
    ApplicationOverview,
    EnvironmentInstances,
    OutdatedSdks,
    OverviewIssues,
    ProjectApplications,
)
from service.errors import NotFound
from service.http.answers import empty, json_response
from service.http.requests import actor, query_param, read_json, unit_of_work
from service.http.routes import Param, Route
from service.strategies import builtins
from service.strategies import queries as strategy_queries
from service.strategies.responses import StrategyType

if TYPE_CHECKING:
    from aiohttp import web

    from eventlog.connections import Conn

BASE: Final = "/api/admin/metrics/applications"
ONE: Final = BASE + "/{appName}"
PAGE: Final = (
    Param("query", str, "Only applications whose name holds this (any case)"),
    Param("offset", str, "Skip this many (default 0; below 0 is 0)"),
    Param("limit", str, "At most this many (default and most 1000; below 1 is 1000)"),
    Param("sortBy", str, "Read and not used: applications are sorted by name, as in Unleash"),
    Param("sortOrder", str, "`desc`: by name, last first; anything else: first first"),
)


_INTEGER: Final = re.compile(r"-?[0-9]{1,18}")


def _whole(raw: str | None) -> int | None:
    """A page parameter as Unleash reads it: an integer, or nothing."""
    if raw is None or _INTEGER.fullmatch(raw.strip()) is None:
        return None
    return int(raw)


def page(request: web.Request) -> tuple[str, bool, int, int]:
    """(query, descending, limit, offset), normalised as Unleash normalises them."""
    limit = _whole(query_param(request, "limit"))
    offset = _whole(query_param(request, "offset"))
    query_param(request, "sortBy")  # declared and read, and every value sorts by name
    return (
        query_param(request, "query") or "",
        query_param(request, "sortOrder") == "desc",
        limit if limit is not None and 1 <= limit <= DEFAULT_LIMIT else DEFAULT_LIMIT,
        offset if offset is not None and offset > 0 else 0,
    )


async def list_applications(request: web.Request) -> web.Response:
    text, descending, limit, offset = page(request)
    if "\x00" in text:  # no name holds NUL (and PostgreSQL text cannot)
        return json_response(ApplicationList.from_rows([], 0))
    async with request.app[POOL].acquire() as conn:
        rows = await conn.fetch(queries.LIST, text, descending, limit, offset)
        total = await conn.fetchval(queries.LIST_TOTAL, text)
    return json_response(ApplicationList.from_rows(rows, total))


async def _strategies(conn: Conn, names: list[str]) -> list[dict[str, Any]]:
    """Each name as its strategy type shows, or `{name, notFound: true}`."""
    out = []
    for name in names:
        found = await strategy_queries.strategy_type(conn, name)
        out.append(
            {"name": name, "notFound": True}
            if found is None
            else msgspec.to_builtins(StrategyType.of(found))
        )
    return out


async def get_application(request: web.Request) -> web.Response:
    name = request.match_info["appName"]
    async with request.app[POOL].acquire() as conn:
        row = await conn.fetchrow(queries.ONE, name)
        if row is None:
            raise domain.application_missing(name)
        strategies = await _strategies(conn, list(row["strategies"]))
        instances = await conn.fetch(queries.INSTANCES, name)
        flags = await conn.fetch(queries.SEEN_FLAGS, name)
    return json_response(Application.of(row, strategies, instances, flags))


async def application_overview(request: web.Request) -> web.Response:
    """As in Unleash, any name has an overview (empty for one no SDK reported)."""
    name = request.match_info["appName"]
    async with request.app[POOL].acquire() as conn:
        flags = await conn.fetchrow(queries.OVERVIEW_FLAGS, name)
        environments = await conn.fetch(queries.OVERVIEW_ENVIRONMENTS, name)
        known = [r["name"] for r in await conn.fetch(queries.INSTANCE_STRATEGIES, name)]
        custom = {r["name"] for r in await conn.fetch(queries.CUSTOM_STRATEGY_NAMES, known)}
    assert flags is not None  # an aggregate has its one row
    missing = [s for s in known if s not in builtins.NAMES and s not in custom]
    return json_response(
        ApplicationOverview(
            projects=list(flags["projects"]),
            feature_count=flags["feature_count"],
            environments=[ApplicationEnvironment.from_row(e) for e in environments],
            issues=OverviewIssues(missing_strategies=missing),
        )
    )


async def set_application(request: web.Request) -> web.Response:
    """Creates or updates what is said of an application: 202, as in Unleash."""
    name = domain.validate_app_name(request.match_info["appName"])
    body = await read_json(request, SetApplication)
    async with unit_of_work(request) as uow:
        await uow.conn.execute(queries.LOCK_NAME, name)
        row = await uow.conn.fetchrow(queries.DESCRIBED, name)
        current = None if row is None else domain.Described(**dict(row))
        event = domain.set_application(name, body, current, datetime.now(UTC))
        if event is not None:
            await uow.append(domain.stream(name), [event], actor(request))
    return empty(202)


async def delete_application(request: web.Request) -> web.Response:
    """The application, what was said of it and its instances (their hourly counts stay until
    they expire, as in Unleash); 200 whether or not it was there."""
    name = request.match_info["appName"]
    async with unit_of_work(request) as uow:
        await uow.conn.execute(queries.LOCK_NAME, name)
        described = await uow.conn.fetchrow(queries.DESCRIBED, name) is not None
        reported = bool(await uow.conn.fetchval(queries.REPORTED, name))
        event = domain.delete_application(name, known=described or reported)
        if event is not None:
            await uow.conn.execute(queries.DELETE_INSTANCES, name)
            await uow.append(domain.stream(name), [event], actor(request))
    return empty()


async def environment_instances(request: web.Request) -> web.Response:
    name, environment = request.match_info["appName"], request.match_info["environment"]
    async with request.app[POOL].acquire() as conn:
        rows = await conn.fetch(queries.RECENT_INSTANCES, name, environment)
    return json_response(EnvironmentInstances.from_rows(rows))


async def outdated_sdks(request: web.Request) -> web.Response:
    async with request.app[POOL].acquire() as conn:
        rows = await conn.fetch(queries.APPLICATIONS_BY_SDK)
    return json_response(OutdatedSdks.from_rows(rows))


async def project_applications(request: web.Request) -> web.Response:
    """As in Unleash, a project that does not exist has no applications (not a 404)."""
    text, descending, limit, offset = page(request)
    if "\x00" in text:  # no name holds NUL (and PostgreSQL text cannot)
        return json_response(ProjectApplications.from_rows([], 0))
    project_id = request.match_info["projectId"]
    async with request.app[POOL].acquire() as conn:
        rows = await conn.fetch(
            queries.PROJECT_APPLICATIONS, project_id, text, descending, limit, offset
        )
        total = await conn.fetchval(queries.PROJECT_APPLICATIONS_TOTAL, project_id, text)
    return json_response(ProjectApplications.from_rows(rows, total))


async def project_outdated_sdks(request: web.Request) -> web.Response:
    async with request.app[POOL].acquire() as conn:
        rows = await conn.fetch(
            queries.PROJECT_APPLICATIONS_BY_SDK, request.match_info["projectId"]
        )
    return json_response(OutdatedSdks.from_rows(rows))


ROUTES = [
    Route("GET", BASE, list_applications, auth.READ, ok={200: ApplicationList}, query=PAGE),
    Route("GET", ONE, get_application, auth.READ, ok={200: Application}, errors=(NotFound,)),
    Route(
        "POST",
        ONE,
        set_application,
        auth.UPDATE_APPLICATION,
        body=SetApplication,
        ok={202: None},
    ),
    Route("DELETE", ONE, delete_application, auth.DELETE_APPLICATION),
    Route("GET", ONE + "/overview", application_overview, auth.READ, ok={200: ApplicationOverview}),
    Route(
        "GET",
        "/api/admin/metrics/instances/{appName}/environment/{environment}",
        environment_instances,
        auth.READ,
        ok={200: EnvironmentInstances},
    ),
    Route(
        "GET", "/api/admin/metrics/sdks/outdated", outdated_sdks, auth.READ, ok={200: OutdatedSdks}
    ),
    Route(
        "GET",
        "/api/admin/projects/{projectId}/applications",
        project_applications,
        auth.READ,
        ok={200: ProjectApplications},
        query=PAGE,
    ),
    Route(
        "GET",
        "/api/admin/projects/{projectId}/sdks/outdated",
        project_outdated_sdks,
        auth.READ,
        ok={200: OutdatedSdks},
    ),
]
