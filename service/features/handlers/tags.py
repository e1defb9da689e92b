"""HTTP handlers of /api/admin/features/:featureName/tags."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from service import auth
from service.errors import Conflict, NotFound
from service.features import domain, queries
from service.features.commands import BulkTags, TagBody, UpdateTags
from service.features.responses import Tag, TagList
from service.http.answers import empty, json_response
from service.http.past import reading
from service.http.requests import actor, read_json, unit_of_work
from service.http.routes import Route

if TYPE_CHECKING:
    from aiohttp import web

    from service.work import UnitOfWork

BASE = "/api/admin/features/{featureName}/tags"


async def list_tags(request: web.Request) -> web.Response:
    name = request.match_info["featureName"]
    async with reading(request) as conn:
        if not await conn.fetchval(queries.FLAG_EXISTS, name):
            raise NotFound(f"There is no flag named {name}")
        rows = await conn.fetch(queries.TAGS, name)
    return json_response(TagList.from_rows(rows))


async def add_tag(request: web.Request) -> web.Response:
    name = request.match_info["featureName"]
    body = await read_json(request, TagBody)
    value = domain.tag_value(body.value)
    async with unit_of_work(request) as uow:
        # The tag type before the flag: deleting a type locks it, then the flags it untags.
        type_exists = await uow.conn.fetchval(queries.LOCK_TAG_TYPE_SHARED, body.type)
        event = domain.add_tag(
            name,
            body,
            type_exists=type_exists is not None,
            project=await uow.conn.fetchval(queries.LOCK_FEATURE_BY_NAME, name),
            has_tag=await uow.conn.fetchval(queries.HAS_TAG, name, body.type, value),
            now=datetime.now(UTC),
        )
        await uow.append(domain.stream(name), [event], actor(request))
    return json_response(Tag(value=event.value, type=event.tag_type), status=201)


async def remove_tag(request: web.Request) -> web.Response:
    name = request.match_info["featureName"]
    tag_type, value = request.match_info["type"], request.match_info["value"]
    async with unit_of_work(request) as uow:
        event = domain.remove_tag(
            name,
            tag_type,
            value,
            project=await uow.conn.fetchval(queries.LOCK_FEATURE_BY_NAME, name),
            has_tag=await uow.conn.fetchval(queries.HAS_TAG, name, tag_type, value),
        )
        await uow.append(domain.stream(name), [event], actor(request))
    return empty()


async def _retag(
    request: web.Request,
    uow: UnitOfWork,
    changes: UpdateTags,
    names: list[str],
    project_id: str | None,
) -> None:
    """The same tag changes on each named flag, under its lock; a flag outside `project_id`
    (when given) is treated as missing."""
    # The tag types first, then the flags: the order a tag type's deletion takes them in.
    wanted = sorted({tag.type for tag in (*changes.added_tags, *changes.removed_tags)})
    known = {r["name"] for r in await uow.conn.fetch(queries.LOCK_TAG_TYPES_SHARED, wanted)}
    now = datetime.now(UTC)
    for name in sorted(set(names)):  # in name order: two bulk edits never deadlock
        project = await uow.conn.fetchval(queries.LOCK_FEATURE_BY_NAME, name)
        current = {(r["type"], r["value"]) for r in await uow.conn.fetch(queries.TAGS, name)}
        events = domain.update_tags(
            name,
            changes.added_tags,
            changes.removed_tags,
            known_types=known,
            project=project if project_id is None or project == project_id else None,
            current=current,
            now=now,
        )
        if events:
            await uow.append(domain.stream(name), events, actor(request))


async def update_tags(request: web.Request) -> web.Response:
    """Unleash's bulk edit of a flag's tags (the UI's tag dialog): 200 with the flag's tags."""
    name = request.match_info["featureName"]
    body = await read_json(request, UpdateTags)
    async with unit_of_work(request) as uow:
        await _retag(request, uow, body, [name], None)
        rows = await uow.conn.fetch(queries.TAGS, name)
    return json_response(TagList.from_rows(rows))


async def update_project_tags(request: web.Request) -> web.Response:
    """Unleash's `PUT /api/admin/projects/:projectId/tags`: the same tag changes on several
    flags of the project, all or nothing (a flag that is not an active one of the project is a
    404 and changes nothing); 200 without a body."""
    project_id = request.match_info["projectId"]
    body = await read_json(request, BulkTags)
    async with unit_of_work(request) as uow:
        await _retag(request, uow, body.tags, body.features, project_id)
    return empty()


ROUTES = [
    Route("GET", BASE, list_tags, auth.READ, ok={200: TagList}, past=True),
    Route(
        "POST",
        BASE,
        add_tag,
        auth.UPDATE_FEATURE,
        body=TagBody,
        ok={201: Tag},
        errors=(Conflict,),
    ),
    Route("DELETE", BASE + "/{type}/{value}", remove_tag, auth.UPDATE_FEATURE),
    Route("PUT", BASE, update_tags, auth.UPDATE_FEATURE, body=UpdateTags, ok={200: TagList}),
    Route(
        "PUT",
        "/api/admin/projects/{projectId}/tags",
        update_project_tags,
        auth.UPDATE_FEATURE,
        body=BulkTags,
        errors=(NotFound,),
    ),
]
