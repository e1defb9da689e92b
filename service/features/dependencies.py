"""HTTP handlers of /api/admin/projects/:projectId/features/:child/dependencies."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from service import auth, store
from service.appkeys import POOL, REQUEST_ID
from service.errors import NotFound
from service.features import domain, queries
from service.features.commands import DependencyBody
from service.features.events import DependencyRemoved
from service.http import Route, principal, read_json

if TYPE_CHECKING:
    from service.connections import Conn
    from service.events import Event

BASE = "/api/admin/projects/{projectId}/features/{child}/dependencies"


async def _locked_projects(conn: Conn, names: list[str]) -> dict[str, str]:
    """Lock the active flags among names (in name order); return name -> project."""
    rows = await conn.fetch(queries.LOCK_PAIR, sorted(set(names)))
    return {r["name"]: r["project"] for r in rows}


def _check_child(found: dict[str, str], child: str, project: str) -> None:
    if found.get(child) != project:
        raise NotFound(f"There is no active flag named {child} in project {project}")


async def _record(request: web.Request, conn: Conn, child: str, events: list[Event]) -> None:
    meta = principal(request).metadata(request[REQUEST_ID])
    await store.append_to_current(conn, domain.stream(child), events, meta)


async def add_dependency(request: web.Request) -> web.Response:
    child, project = request.match_info["child"], request.match_info["projectId"]
    body = await read_json(request, DependencyBody)
    async with request.app[POOL].acquire() as conn, conn.transaction():
        found = await _locked_projects(conn, [child, body.feature])
        _check_child(found, child, project)
        event = domain.add_dependency(
            child,
            project,
            body,
            parent_found=found.get(body.feature) == project,
            parent_has_parents=await conn.fetchval(queries.HAS_PARENTS, body.feature),
            child_has_children=await conn.fetchval(queries.HAS_CHILDREN, child),
        )
        await _record(request, conn, child, [event])
    return web.Response(status=200)


async def remove_dependency(request: web.Request) -> web.Response:
    child, project = request.match_info["child"], request.match_info["projectId"]
    parent = request.match_info["parent"]
    async with request.app[POOL].acquire() as conn, conn.transaction():
        _check_child(await _locked_projects(conn, [child]), child, project)
        parents = [r["parent"] for r in await conn.fetch(queries.PARENTS, child)]
        if parent not in parents:
            raise NotFound(f"{child} does not depend on {parent}")
        await _record(
            request, conn, child, [DependencyRemoved(name=child, project=project, parent=parent)]
        )
    return web.Response(status=200)


async def remove_all_dependencies(request: web.Request) -> web.Response:
    child, project = request.match_info["child"], request.match_info["projectId"]
    async with request.app[POOL].acquire() as conn, conn.transaction():
        _check_child(await _locked_projects(conn, [child]), child, project)
        events: list[Event] = [
            DependencyRemoved(name=child, project=project, parent=r["parent"])
            for r in await conn.fetch(queries.PARENTS, child)
        ]
        if events:
            await _record(request, conn, child, events)
    return web.Response(status=200)


ROUTES = [
    Route("POST", BASE, add_dependency, auth.UPDATE_FEATURE, body=True),
    Route("DELETE", BASE, remove_all_dependencies, auth.UPDATE_FEATURE),
    Route("DELETE", BASE + "/{parent}", remove_dependency, auth.UPDATE_FEATURE),
]
