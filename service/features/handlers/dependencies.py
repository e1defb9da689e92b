"""HTTP handlers of /api/admin/projects/:projectId/features/:child/dependencies."""

from __future__ import annotations

from typing import TYPE_CHECKING

from service import auth, store
from service.errors import Conflict
from service.features import domain, queries
from service.features.commands import DependencyBody
from service.http import Route, actor, empty, read_json, transaction

if TYPE_CHECKING:
    from aiohttp import web

BASE = "/api/admin/projects/{projectId}/features/{child}/dependencies"


async def add_dependency(request: web.Request) -> web.Response:
    child, project = request.match_info["child"], request.match_info["projectId"]
    body = await read_json(request, DependencyBody)
    async with transaction(request) as conn:
        state = await queries.lock_dependencies(conn, child, body.feature)
        event = domain.add_dependency(child, project, body, state)
        await store.append(conn, domain.stream(child), [event], actor(request))
    return empty()


async def remove_dependency(request: web.Request) -> web.Response:
    child, project = request.match_info["child"], request.match_info["projectId"]
    parent = request.match_info["parent"]
    async with transaction(request) as conn:
        state = await queries.lock_dependencies(conn, child, None)
        event = domain.remove_dependency(child, project, parent, state)
        await store.append(conn, domain.stream(child), [event], actor(request))
    return empty()


async def remove_all_dependencies(request: web.Request) -> web.Response:
    child, project = request.match_info["child"], request.match_info["projectId"]
    async with transaction(request) as conn:
        state = await queries.lock_dependencies(conn, child, None)
        events = domain.remove_dependencies(child, project, state)
        if events:
            await store.append(conn, domain.stream(child), events, actor(request))
    return empty()


ROUTES = [
    Route(
        "POST", BASE, add_dependency, auth.UPDATE_FEATURE, body=DependencyBody, errors=(Conflict,)
    ),
    Route("DELETE", BASE, remove_all_dependencies, auth.UPDATE_FEATURE),
    Route("DELETE", BASE + "/{parent}", remove_dependency, auth.UPDATE_FEATURE),
]
