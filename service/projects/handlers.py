"""HTTP handlers of /api/admin/projects and /api/admin/environments."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from aiohttp import web

from service import auth, store
from service.appkeys import POOL, REQUEST_ID
from service.errors import NotFound
from service.http import Route, json_response, principal, read_json
from service.names import validate_name
from service.projects import domain, queries
from service.projects.commands import CreateEnvironment, CreateProject, EnableEnvironment

if TYPE_CHECKING:
    from service.connections import Conn
    from service.events import Metadata


async def list_projects(request: web.Request) -> web.Response:
    rows = await request.app[POOL].fetch(queries.LIST_PROJECTS)
    projects = [queries.project_json(r, r["feature_count"]) for r in rows]
    return json_response({"version": 1, "projects": projects})


async def get_project(request: web.Request) -> web.Response:
    project_id = request.match_info["projectId"]
    async with request.app[POOL].acquire() as conn:
        body = await queries.project_detail(conn, project_id)
    if body is None:
        raise NotFound(f"Project {project_id} does not exist")
    return json_response(body)


async def create_project(request: web.Request) -> web.Response:
    cmd = await read_json(request, CreateProject)
    async with request.app[POOL].acquire() as conn, conn.transaction():
        exists = await conn.fetchrow(queries.PROJECT, cmd.id) is not None
        environments = [r["name"] for r in await conn.fetch(queries.ENVIRONMENT_NAMES)]
        event = domain.create_project(
            cmd, exists=exists, environments=environments, now=datetime.now(UTC)
        )
        await store.append_new(
            conn,
            domain.project_stream(cmd.id),
            [event],
            _meta(request),
            exists=f"A project with id {cmd.id} already exists",
        )
        body = await queries.project_detail(conn, cmd.id)
    return json_response(body, status=201)


async def archive_project(request: web.Request) -> web.Response:
    project_id = request.match_info["projectId"]
    async with request.app[POOL].acquire() as conn, conn.transaction():
        row = await conn.fetchrow(queries.LOCK_PROJECT, project_id)
        if row is None or row["archived_at"] is not None:
            raise NotFound(f"Project {project_id} does not exist")
        active = await conn.fetchval(queries.ACTIVE_FLAGS, project_id)
        event = domain.archive_project(project_id, active_flags=active, now=datetime.now(UTC))
        await store.append_to_current(
            conn, domain.project_stream(project_id), [event], _meta(request)
        )
    return web.Response(status=200)


async def list_environments(request: web.Request) -> web.Response:
    rows = await request.app[POOL].fetch(queries.LIST_ENVIRONMENTS)
    return json_response(
        {"version": 1, "environments": [queries.environment_json(r) for r in rows]}
    )


async def create_environment(request: web.Request) -> web.Response:
    cmd = await read_json(request, CreateEnvironment)
    validate_name(cmd.name, "$.name", "Environment name")
    async with request.app[POOL].acquire() as conn, conn.transaction():
        exists = await conn.fetchval(queries.ENVIRONMENT_EXISTS, cmd.name)
        next_sort_order = 0
        if cmd.sort_order is None and not exists:
            next_sort_order = await conn.fetchval(queries.NEXT_SORT_ORDER)
        event = domain.create_environment(
            cmd, exists=exists, next_sort_order=next_sort_order, now=datetime.now(UTC)
        )
        await store.append_new(
            conn,
            domain.environment_stream(cmd.name),
            [event],
            _meta(request),
            exists=f"An environment named {cmd.name} already exists",
        )
        row = await conn.fetchrow(queries.ENVIRONMENT, cmd.name)
    assert row is not None
    return json_response(queries.environment_json(row), status=201)


async def enable_environment(request: web.Request) -> web.Response:
    project_id = request.match_info["projectId"]
    cmd = await read_json(request, EnableEnvironment)
    async with request.app[POOL].acquire() as conn, conn.transaction():
        enabled = await _active_project_environments(conn, project_id)
        event = domain.enable_environment(
            project_id,
            cmd.environment,
            known=await conn.fetchval(queries.ENVIRONMENT_EXISTS, cmd.environment),
            enabled=cmd.environment in enabled,
        )
        await store.append_to_current(
            conn, domain.project_stream(project_id), [event], _meta(request)
        )
    return web.Response(status=200)


async def disable_environment(request: web.Request) -> web.Response:
    project_id = request.match_info["projectId"]
    environment = request.match_info["environment"]
    async with request.app[POOL].acquire() as conn, conn.transaction():
        enabled = await _active_project_environments(conn, project_id)
        event = domain.disable_environment(project_id, environment, enabled=enabled)
        await store.append_to_current(
            conn, domain.project_stream(project_id), [event], _meta(request)
        )
    return web.Response(status=200)


def _meta(request: web.Request) -> Metadata:
    return principal(request).metadata(request[REQUEST_ID])


async def _active_project_environments(conn: Conn, project_id: str) -> list[str]:
    """The project's environments, with the project row locked: changes to it queue."""
    row = await conn.fetchrow(queries.LOCK_ACTIVE_PROJECT, project_id)
    if row is None or row["archived_at"] is not None:
        raise NotFound(f"Project {project_id} does not exist")
    return [r["name"] for r in await conn.fetch(queries.PROJECT_ENVIRONMENTS, project_id)]


ROUTES = [
    Route("GET", "/api/admin/projects", list_projects, auth.READ),
    Route("POST", "/api/admin/projects", create_project, auth.CREATE_PROJECT, body=True),
    Route("GET", "/api/admin/projects/{projectId}", get_project, auth.READ),
    Route("DELETE", "/api/admin/projects/{projectId}", archive_project, auth.DELETE_PROJECT),
    Route("GET", "/api/admin/environments", list_environments, auth.READ),
    Route("POST", "/api/admin/environments", create_environment, auth.ADMIN, body=True),
    Route(
        "POST",
        "/api/admin/projects/{projectId}/environments",
        enable_environment,
        auth.UPDATE_PROJECT,
        body=True,
    ),
    Route(
        "DELETE",
        "/api/admin/projects/{projectId}/environments/{environment}",
        disable_environment,
        auth.UPDATE_PROJECT,
    ),
]
