"""HTTP handlers of /api/admin/projects/:projectId/features/:child/dependencies."""

from __future__ import annotations

from typing import TYPE_CHECKING

from service import auth
from service.errors import Conflict
from service.features import domain, queries
from service.features.commands import DependencyBody
from service.http.answers import empty
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


ROUTES = [
    Route(
        "POST", BASE, add_dependency, auth.UPDATE_FEATURE, body=DependencyBody, errors=(Conflict,)
    ),
    Route("DELETE", BASE, remove_all_dependencies, auth.UPDATE_FEATURE),
    Route("DELETE", BASE + "/{parent}", remove_dependency, auth.UPDATE_FEATURE),
]
