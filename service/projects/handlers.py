"""HTTP handlers of /api/admin/projects and /api/admin/environments."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from service import auth
from service.errors import Conflict, NameExists, ValidationError
from service.http.answers import empty, json_response
from service.http.past import reading
from service.http.requests import actor, read_json, unit_of_work
from service.http.routes import Link, Route
from service.names import validate_name
from service.projects import domain, queries
from service.projects.commands import (
    CreateEnvironment,
    CreateProject,
    EnableEnvironment,
    SortOrders,
    UpdateEnvironment,
)
from service.projects.overview import deprecated_overview, list_projects
from service.projects.responses import (
    Environment,
    EnvironmentDetail,
    EnvironmentList,
    ProjectDetail,
    ProjectEnvironmentInfo,
    ProjectEnvironmentList,
    ProjectSummaryList,
)

if TYPE_CHECKING:
    from aiohttp import web


async def create_project(request: web.Request) -> web.Response:
    cmd = await read_json(request, CreateProject)
    async with unit_of_work(request) as uow:
        event = domain.create_project(
            cmd,
            exists=await uow.conn.fetchval(queries.PROJECT_EXISTS, cmd.id),
            environments=await queries.environment_names(uow.conn),
            now=datetime.now(UTC),
        )
        await uow.append(domain.project_stream(cmd.id), [event], actor(request), new=True)
        found = await queries.active_project(uow.conn, cmd.id)
    assert found is not None  # the inline projection wrote it in this transaction
    return json_response(ProjectDetail.from_rows(*found), status=201)


async def archive_project(request: web.Request) -> web.Response:
    project_id = request.match_info["projectId"]
    async with unit_of_work(request) as uow:
        project = await queries.lock_active_project(uow.conn, project_id)
        event = domain.archive_project(project_id, project, now=datetime.now(UTC))
        await uow.append(domain.project_stream(project_id), [event], actor(request))
    return empty()


async def list_environments(request: web.Request) -> web.Response:
    async with reading(request) as conn:
        rows = await conn.fetch(queries.LIST_ENVIRONMENTS)
    return json_response(EnvironmentList(environments=[Environment.from_row(r) for r in rows]))


async def get_environment(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    async with reading(request) as conn:
        row = await conn.fetchrow(queries.ENVIRONMENT, name)
    if row is None:
        raise domain.environment_missing(name)
    return json_response(EnvironmentDetail.from_row(row))


async def get_project_environments(request: web.Request) -> web.Response:
    """Every environment, with what the project has of it (a project that does not exist has
    none of them, as in Unleash)."""
    async with reading(request) as conn:
        rows = await conn.fetch(
            queries.PROJECT_ENVIRONMENTS_FOR_UI, request.match_info["projectId"]
        )
    return json_response(
        ProjectEnvironmentList(environments=[ProjectEnvironmentInfo.from_row(r) for r in rows])
    )


async def _switch(request: web.Request, *, on: bool) -> web.Response:
    name = request.match_info["name"]
    async with unit_of_work(request) as uow:
        enabled = await uow.conn.fetchval(queries.LOCK_ENVIRONMENT, name)
        event = domain.switch_environment(name, enabled=enabled, on=on)
        if event is not None:
            await uow.append(domain.environment_stream(name), [event], actor(request))
    return empty(204)


async def update_environment(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    cmd = await read_json(request, UpdateEnvironment)
    async with unit_of_work(request) as uow:
        row = await uow.conn.fetchrow(queries.LOCK_ENVIRONMENT_SETTINGS, name)
        current = None if row is None else (row["type"], row["sort_order"])
        event = domain.update_environment(name, cmd, current)
        if event is not None:
            await uow.append(domain.environment_stream(name), [event], actor(request))
        found = await uow.conn.fetchrow(queries.ENVIRONMENT, name)
    assert found is not None  # it was there, locked
    return json_response(EnvironmentDetail.from_row(found))


async def toggle_environment_on(request: web.Request) -> web.Response:
    return await _switch(request, on=True)


async def toggle_environment_off(request: web.Request) -> web.Response:
    return await _switch(request, on=False)


async def update_sort_order(request: web.Request) -> web.Response:
    orders = await read_json(request, SortOrders)
    async with unit_of_work(request) as uow:
        rows = await uow.conn.fetch(queries.LOCK_SORT_ORDERS, list(orders))
        events = domain.set_sort_order(orders, {r["name"]: r["sort_order"] for r in rows})
        for event in events:
            await uow.append(domain.environment_stream(event.name), [event], actor(request))
    return empty()


async def create_environment(request: web.Request) -> web.Response:
    cmd = await read_json(request, CreateEnvironment)
    validate_name(cmd.name, "$.name", "Environment name")
    async with unit_of_work(request) as uow:
        exists = await uow.conn.fetchval(queries.ENVIRONMENT_EXISTS, cmd.name)
        next_sort_order = 0
        if cmd.sort_order is None and not exists:
            next_sort_order = await uow.conn.fetchval(queries.NEXT_SORT_ORDER)
        event = domain.create_environment(
            cmd, exists=exists, next_sort_order=next_sort_order, now=datetime.now(UTC)
        )
        stream = domain.environment_stream(cmd.name)
        await uow.append(stream, [event], actor(request), new=True)
        row = await uow.conn.fetchrow(queries.ENVIRONMENT, cmd.name)
    assert row is not None  # the inline projection wrote it in this transaction
    return json_response(Environment.from_row(row), status=201)


async def enable_environment(request: web.Request) -> web.Response:
    project_id = request.match_info["projectId"]
    cmd = await read_json(request, EnableEnvironment)
    async with unit_of_work(request) as uow:
        project = await queries.lock_active_project(uow.conn, project_id)
        known = await uow.conn.fetchval(queries.ENVIRONMENT_EXISTS, cmd.environment)
        event = domain.enable_environment(project_id, cmd.environment, project, known=known)
        await uow.append(domain.project_stream(project_id), [event], actor(request))
    return empty()


async def disable_environment(request: web.Request) -> web.Response:
    project_id = request.match_info["projectId"]
    environment = request.match_info["environment"]
    async with unit_of_work(request) as uow:
        project = await queries.lock_active_project(uow.conn, project_id)
        event = domain.disable_environment(project_id, environment, project)
        await uow.append(domain.project_stream(project_id), [event], actor(request))
    return empty()


ROUTES = [
    Route(
        "GET",
        "/api/admin/projects",
        list_projects,
        auth.READ,
        ok={200: ProjectSummaryList},
        past=True,
    ),
    Route(
        "POST",
        "/api/admin/projects",
        create_project,
        auth.CREATE_PROJECT,
        body=CreateProject,
        ok={201: ProjectDetail},
        errors=(NameExists,),
        links={"project": Link(deprecated_overview, {"projectId": "$response.body#/id"})},
    ),
    Route(
        "DELETE",
        "/api/admin/projects/{projectId}",
        archive_project,
        auth.DELETE_PROJECT,
        errors=(Conflict,),
    ),
    Route(
        "GET",
        "/api/admin/environments",
        list_environments,
        auth.READ,
        ok={200: EnvironmentList},
        past=True,
    ),
    Route(
        "PUT",
        "/api/admin/environments/update/{name}",
        update_environment,
        auth.ADMIN,
        body=UpdateEnvironment,
        ok={200: EnvironmentDetail},
    ),
    Route(
        "PUT",
        "/api/admin/environments/sort-order",
        update_sort_order,
        auth.ADMIN,
        body=SortOrders,
    ),
    Route(
        "GET",
        "/api/admin/environments/project/{projectId}",
        get_project_environments,
        auth.READ,
        ok={200: ProjectEnvironmentList},
        past=True,
    ),
    Route(
        "GET",
        "/api/admin/environments/{name:(?!sort-order$)[^/]+}",  # sort-order: a route of its own
        get_environment,
        auth.READ,
        ok={200: EnvironmentDetail},
        past=True,
    ),
    Route(
        "POST",
        "/api/admin/environments/{name}/on",
        toggle_environment_on,
        auth.ADMIN,
        ok={204: None},
    ),
    Route(
        "POST",
        "/api/admin/environments/{name}/off",
        toggle_environment_off,
        auth.ADMIN,
        ok={204: None},
    ),
    Route(
        "POST",
        "/api/admin/environments",
        create_environment,
        auth.ADMIN,
        body=CreateEnvironment,
        ok={201: Environment},
        errors=(NameExists,),
    ),
    Route(
        "POST",
        "/api/admin/projects/{projectId}/environments",
        enable_environment,
        auth.UPDATE_PROJECT,
        body=EnableEnvironment,
        errors=(NameExists,),
    ),
    Route(
        "DELETE",
        "/api/admin/projects/{projectId}/environments/{environment}",
        disable_environment,
        auth.UPDATE_PROJECT,
        errors=(ValidationError,),
    ),
]
