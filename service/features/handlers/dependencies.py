"""HTTP handlers of /api/admin/projects/:projectId/features/:child/dependencies, and what the
UI's dependency dialog reads: the possible parents, a parent's variants, whether a project
has any dependency."""

from __future__ import annotations

from typing import TYPE_CHECKING

from service import auth
from service.errors import Conflict
from service.features import domain, queries
from service.features.commands import DependencyBody
from service.http.answers import empty, json_response
from service.http.past import reading
from service.http.requests import actor, read_json, unit_of_work
from service.http.routes import Route

if TYPE_CHECKING:
    from aiohttp import web

BASE = "/api/admin/projects/{projectId}/features/{child}/dependencies"


async def add_dependency(request: web.Request) -> web.Response:
    child, project = request.match_info["child"], request.match_info["projectId"]
    body = await read_json(request, DependencyBody)
    async with unit_of_work(request) as uow:
        state = await queries.lock_dependencies(uow.conn, child, body.feature)
        event = domain.add_dependency(child, project, body, state)
        await uow.append(domain.stream(child), [event], actor(request))
    return empty()


async def remove_dependency(request: web.Request) -> web.Response:
    child, project = request.match_info["child"], request.match_info["projectId"]
    parent = request.match_info["parent"]
    async with unit_of_work(request) as uow:
        state = await queries.lock_dependencies(uow.conn, child, None)
        event = domain.remove_dependency(child, project, parent, state)
        await uow.append(domain.stream(child), [event], actor(request))
    return empty()


async def remove_all_dependencies(request: web.Request) -> web.Response:
    child, project = request.match_info["child"], request.match_info["projectId"]
    async with unit_of_work(request) as uow:
        state = await queries.lock_dependencies(uow.conn, child, None)
        events = domain.remove_dependencies(child, project, state)
        if events:
            await uow.append(domain.stream(child), events, actor(request))
    return empty()


PROJECT_FEATURE = "/api/admin/projects/{projectId}/features"


async def parent_options(request: web.Request) -> web.Response:
    """The flags this one may depend on, by name; none when it is no active flag of the
    project (as in Unleash, which answers an empty list for an unknown flag)."""
    child, project = request.match_info["child"], request.match_info["projectId"]
    async with reading(request) as conn:
        found = await conn.fetchval(queries.ACTIVE_FEATURE, child, project) is not None
        rows = await conn.fetch(queries.PARENT_OPTIONS, child, project) if found else []
    return json_response([r["name"] for r in rows])


async def parent_variants(request: web.Request) -> web.Response:
    """The variants a dependency on this parent may name: its strategies' and environments'.
    None for a name that is no active flag of the project: the UI asks for the project's own
    id in the flag's place on the project page, and Unleash answers that with `[]`."""
    parent, project = request.match_info["parent"], request.match_info["projectId"]
    async with reading(request) as conn:
        found = await conn.fetchval(queries.ACTIVE_FEATURE, parent, project) is not None
        rows = await conn.fetch(queries.PARENT_VARIANTS, parent) if found else []
    return json_response([r["name"] for r in rows])


async def dependencies_exist(request: web.Request) -> web.Response:
    """Whether any flag of the project depends on another (Unleash answers for every project
    at once, whichever is asked)."""
    async with reading(request) as conn:
        found = await conn.fetchval(
            queries.PROJECT_HAS_DEPENDENCIES, request.match_info["projectId"]
        )
    return json_response(bool(found))


ROUTES = [
    Route(
        "POST", BASE, add_dependency, auth.UPDATE_FEATURE, body=DependencyBody, errors=(Conflict,)
    ),
    Route("DELETE", BASE, remove_all_dependencies, auth.UPDATE_FEATURE),
    Route("DELETE", BASE + "/{parent}", remove_dependency, auth.UPDATE_FEATURE),
    Route(
        "GET",
        PROJECT_FEATURE + "/{child}/parents",
        parent_options,
        auth.READ,
        ok={200: list[str]},
        past=True,
    ),
    Route(
        "GET",
        PROJECT_FEATURE + "/{parent}/parent-variants",
        parent_variants,
        auth.READ,
        ok={200: list[str]},
        past=True,
    ),
    Route(
        "GET",
        "/api/admin/projects/{projectId}/dependencies",
        dependencies_exist,
        auth.READ,
        ok={200: bool},
        past=True,
    ),
]
