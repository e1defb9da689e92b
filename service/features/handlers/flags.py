"""HTTP handlers of /api/admin/projects/:projectId/features: create, read, list, and mark
stale (archiving and reviving are the archive's: handlers/archive.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from service import auth
from service.errors import InvalidOperation, NameExists, NotFound
from service.features import domain, queries
from service.features.commands import CreateFeature, MarkStale
from service.features.responses import Feature, FeatureList
from service.http.answers import empty, json_response
from service.http.past import reading
from service.http.requests import actor, read_json, unit_of_work
from service.http.routes import Link, Route

if TYPE_CHECKING:
    from aiohttp import web


async def create_feature(request: web.Request) -> web.Response:
    project_id = request.match_info["projectId"]
    cmd = await read_json(request, CreateFeature)
    async with unit_of_work(request) as uow:
        project_active = await uow.conn.fetchval(queries.LOCK_PROJECT_SHARED, project_id)
        version = await queries.freed_stream(uow.conn, cmd.name)  # before the name's holder
        context = await uow.conn.fetchrow(queries.CREATE_CONTEXT, project_id, cmd.name)
        assert context is not None  # a SELECT from an aggregate has its one row
        event = domain.create_feature(
            cmd,
            project_id,
            project_active=bool(project_active),
            holder_archived=context["holder_archived"],
            now=datetime.now(UTC),
        )
        await uow.append(
            domain.stream(cmd.name),
            [event],
            actor(request),
            new=version is None,
            at_version=version,
        )
    return json_response(Feature.created(event, context))


async def get_feature(request: web.Request) -> web.Response:
    name, project_id = request.match_info["featureName"], request.match_info["projectId"]
    async with reading(request) as conn:
        found = await queries.feature_in_project(conn, name, project_id)
    if found is None:
        raise NotFound(f"Could not find feature flag with name {name} in project {project_id}")
    return json_response(Feature.from_rows(*found))


async def list_features(request: web.Request) -> web.Response:
    project_id = request.match_info["projectId"]
    async with reading(request) as conn:
        if not await conn.fetchval(queries.PROJECT_ACTIVE, project_id):
            raise domain.project_missing(project_id)
        rows = await conn.fetch(queries.ACTIVE_FEATURES_IN_PROJECT, project_id)
        found = await queries.features(conn, rows)
    return json_response(FeatureList(features=[Feature.from_rows(*f) for f in found]))


async def mark_stale(request: web.Request) -> web.Response:
    """Unleash's `POST /api/admin/projects/:projectId/stale`: 202, one event per flag whose
    staleness changes; names that are no flag are ignored."""
    project_id = request.match_info["projectId"]
    cmd = await read_json(request, MarkStale)
    async with unit_of_work(request) as uow:
        rows = await uow.conn.fetch(queries.LOCK_FLAGS, sorted(set(cmd.features)))
        events = domain.mark_stale(
            cmd.features,
            project_id,
            stale=cmd.stale,
            flags={r["name"]: (r["project"], r["stale"]) for r in rows},
        )
        for event in events:
            await uow.append(domain.stream(event.name), [event], actor(request))
    return empty(202)


ROUTES = [
    Route(
        "POST",
        "/api/admin/projects/{projectId}/features",
        create_feature,
        auth.CREATE_FEATURE,
        body=CreateFeature,
        ok={200: Feature},
        errors=(NameExists,),
        links={
            "feature": Link(
                get_feature,
                {"projectId": "$response.body#/project", "featureName": "$response.body#/name"},
            )
        },
    ),
    Route(
        "GET",
        "/api/admin/projects/{projectId}/features",
        list_features,
        auth.READ,
        ok={200: FeatureList},
        past=True,
    ),
    Route(
        "GET",
        "/api/admin/projects/{projectId}/features/{featureName}",
        get_feature,
        auth.READ,
        ok={200: Feature},
        past=True,
    ),
    Route(
        "POST",
        "/api/admin/projects/{projectId}/stale",
        mark_stale,
        auth.UPDATE_FEATURE,
        body=MarkStale,
        ok={202: None},
        errors=(InvalidOperation,),
    ),
]
