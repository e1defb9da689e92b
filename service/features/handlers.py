"""HTTP handlers of /api/admin/projects/:projectId/features."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from aiohttp import web

from service import auth, store
from service.appkeys import POOL, REQUEST_ID
from service.errors import NotFound
from service.features import domain, queries
from service.features.commands import CreateFeature, ReviveFeatures
from service.http import Route, json_response, principal, read_json
from service.names import validate_name
from service.projects import queries as projects

if TYPE_CHECKING:
    from service.events import Metadata


async def create_feature(request: web.Request) -> web.Response:
    project_id = request.match_info["projectId"]
    cmd = await read_json(request, CreateFeature)
    validate_name(cmd.name)  # a bad name is a 400, before the project's 404
    async with request.app[POOL].acquire() as conn, conn.transaction():
        context = await conn.fetchrow(queries.CREATE_CONTEXT, project_id, cmd.name)
        if context is None or context["archived_at"] is not None:
            raise domain.project_missing(project_id)
        event = domain.create_feature(
            cmd, project_id, existing_archived=context["name_taken"], now=datetime.now(UTC)
        )
        await store.append_new(
            conn, domain.stream(cmd.name), [event], _meta(request), exists=domain.FLAG_EXISTS
        )
    return json_response(
        queries.feature_json(queries.new_feature_row(event, context["environments"]))
    )


async def get_feature(request: web.Request) -> web.Response:
    name, project_id = request.match_info["featureName"], request.match_info["projectId"]
    async with request.app[POOL].acquire() as conn:
        body = await queries.feature_in_project(conn, name, project_id)
    if body is None:
        raise NotFound(f"Could not find feature flag with name {name} in project {project_id}")
    return json_response(body)


async def list_features(request: web.Request) -> web.Response:
    project_id = request.match_info["projectId"]
    async with request.app[POOL].acquire() as conn:
        project = await conn.fetchrow(projects.PROJECT, project_id)
        if project is None or project["archived_at"] is not None:
            raise domain.project_missing(project_id)
        rows = await conn.fetch(queries.ACTIVE_FEATURES_IN_PROJECT, project_id)
    return json_response({"version": 1, "features": [queries.feature_json(r) for r in rows]})


async def archive_feature(request: web.Request) -> web.Response:
    name, project_id = request.match_info["featureName"], request.match_info["projectId"]
    async with request.app[POOL].acquire() as conn, conn.transaction():
        event = domain.archive_feature(
            name,
            project_id,
            archived=await conn.fetchval(queries.ARCHIVED_STATE, name, project_id),
            now=datetime.now(UTC),
        )
        await store.append_to_current(conn, domain.stream(name), [event], _meta(request))
    return web.Response(status=202)


async def revive_features(request: web.Request) -> web.Response:
    project_id = request.match_info["projectId"]
    cmd = await read_json(request, ReviveFeatures)
    async with request.app[POOL].acquire() as conn, conn.transaction():
        project = await conn.fetchrow(queries.LOCK_PROJECT_SHARED, project_id)
        if project is None or project["archived_at"] is not None:
            raise domain.project_missing(project_id)
        rows = await conn.fetch(queries.ARCHIVED_IN_PROJECT, project_id, cmd.features)
        events = domain.revive_features(
            cmd.features,
            project_id,
            archived_here={r["name"] for r in rows},
            now=datetime.now(UTC),
        )
        for event in events:
            await store.append_to_current(conn, domain.stream(event.name), [event], _meta(request))
    return web.Response(status=200)


def _meta(request: web.Request) -> Metadata:
    return principal(request).metadata(request[REQUEST_ID])


ROUTES = [
    Route(
        "POST",
        "/api/admin/projects/{projectId}/features",
        create_feature,
        auth.CREATE_FEATURE,
        body=True,
    ),
    Route("GET", "/api/admin/projects/{projectId}/features", list_features, auth.READ),
    Route("GET", "/api/admin/projects/{projectId}/features/{featureName}", get_feature, auth.READ),
    Route(
        "DELETE",
        "/api/admin/projects/{projectId}/features/{featureName}",
        archive_feature,
        auth.DELETE_FEATURE,
    ),
    Route(
        "POST",
        "/api/admin/projects/{projectId}/revive",
        revive_features,
        auth.UPDATE_FEATURE,
        body=True,
    ),
]
