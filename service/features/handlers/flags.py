"""HTTP handlers of /api/admin/projects/:projectId/features: create, read, list, edit (JSON
Patch) and mark stale, and whether a new flag's name is free (archiving and reviving are the
archive's: handlers/archive.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import msgspec

from service import auth
from service.appkeys import POOL
from service.errors import InvalidOperation, NameExists, NotFound
from service.favorites import queries as favorites
from service.features import domain, queries
from service.features.commands import (
    CreateFeature,
    MarkStale,
    ValidateFeatureName,
)
from service.features.patches import Patch
from service.features.responses import Feature, FeatureList, Tag
from service.http.answers import empty, json_response
from service.http.past import reading
from service.http.requests import actor, principal, read_json, unit_of_work
from service.http.routes import Link, Route

if TYPE_CHECKING:
    from aiohttp import web

    from eventlog.events.features import FeatureCreated, FeatureTagged


async def create_feature(request: web.Request) -> web.Response:
    project_id = request.match_info["projectId"]
    cmd = await read_json(request, CreateFeature)
    async with unit_of_work(request) as uow:
        wanted = sorted({tag.type for tag in cmd.tags})
        known = {r["name"] for r in await uow.conn.fetch(queries.LOCK_TAG_TYPES_SHARED, wanted)}
        tags = domain.initial_tags(cmd.tags, known)
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
        events: list[FeatureCreated | FeatureTagged] = [event]
        events += domain.tag_new_feature(event, tags)
        await uow.append(
            domain.stream(cmd.name), events, actor(request), new=version is None, at_version=version
        )
        people = (await queries.collaborators(uow.conn, [cmd.name]))[cmd.name]
    shown = [Tag(value=value, type=kind) for kind, value in sorted(tags)]
    return json_response(Feature.created(event, context, people, shown))


async def validate_feature_name(request: web.Request) -> web.Response:
    """Unleash's `POST /api/admin/features/validate`: 200 when the name is valid and free (in
    every project and the archive), else 400 or 409 as a create would answer."""
    cmd = await read_json(request, ValidateFeatureName)
    async with request.app[POOL].acquire() as conn:
        holder_archived = await conn.fetchval(queries.NAME_HOLDER_ARCHIVED, cmd.name)
    domain.validate_feature_name(cmd.name, holder_archived=holder_archived)
    return empty()


async def patch_feature(request: web.Request) -> web.Response:
    """Edit a flag with JSON Patch (docs/behavior.md, "Editing a flag")."""
    name, project_id = request.match_info["featureName"], request.match_info["projectId"]
    operations = await read_json(request, Patch)
    async with unit_of_work(request) as uow:
        row = await uow.conn.fetchrow(queries.LOCK_FLAG_FIELDS, name, project_id)
        state = None if row is None else domain.FlagFields(**dict(row))
        events = domain.patch_feature(name, project_id, operations, state)
        if events:
            await uow.append(domain.stream(name), events, actor(request))
        found = await queries.feature_in_project(uow.conn, name, project_id)
    assert found is not None  # locked above, changed in this transaction
    return json_response(Feature.from_rows(*found))


async def get_feature(request: web.Request) -> web.Response:
    name, project_id = request.match_info["featureName"], request.match_info["projectId"]
    async with reading(request) as conn:
        found = await queries.feature_in_project(conn, name, project_id)
        favorite = found is not None and await favorites.is_favorite_feature(
            conn, principal(request).account_id, name
        )
    if found is None:
        raise NotFound(f"Could not find feature flag with name {name} in project {project_id}")
    return json_response(msgspec.structs.replace(Feature.from_rows(*found), favorite=favorite))


async def list_features(request: web.Request) -> web.Response:
    project_id = request.match_info["projectId"]
    async with reading(request) as conn:
        if not await conn.fetchval(queries.PROJECT_ACTIVE, project_id):
            raise domain.project_missing(project_id)
        rows = await conn.fetch(queries.ACTIVE_FEATURES_IN_PROJECT, project_id)
        found = await queries.features(conn, rows)
    # Unleash's project list shows no flag-level variants (its flag's GET does).
    listed = [msgspec.structs.replace(Feature.from_rows(*f), variants=[]) for f in found]
    return json_response(FeatureList(features=listed))


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
        "PATCH",
        "/api/admin/projects/{projectId}/features/{featureName}",
        patch_feature,
        auth.UPDATE_FEATURE,
        body=Patch,
        ok={200: Feature},
    ),
    Route(
        "POST",
        "/api/admin/features/validate",
        validate_feature_name,
        auth.READ,
        body=ValidateFeatureName,
        errors=(NameExists,),
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
