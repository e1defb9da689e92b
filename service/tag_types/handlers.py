"""HTTP handlers of /api/admin/tag-types and /api/admin/tags."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from service import auth
from service.appkeys import POOL
from service.errors import NameExists
from service.http.answers import empty, json_response
from service.http.past import reading
from service.http.requests import actor, read_json, unit_of_work
from service.http.routes import Link, Route
from service.tag_types import domain, queries
from service.tag_types.commands import CreateTag, TagTypeBody, UpdateTagType
from service.tag_types.responses import (
    OneTag,
    OneTagType,
    TagItemList,
    TagType,
    TagTypeList,
    ValidTagType,
)

if TYPE_CHECKING:
    from aiohttp import web

TAG_TYPES = "/api/admin/tag-types"
# A tag type by name: any name but `validate`, the path of the validation, so that each path
# has exactly the methods the document lists (405 and its Allow header); the name is reserved.
ONE_TAG_TYPE = TAG_TYPES + "/{name:(?!validate$)[^/]+}"
TAGS = "/api/admin/tags"
ONE_TAG = TAGS + "/{type}/{value}"


async def list_tag_types(request: web.Request) -> web.Response:
    async with reading(request) as conn:
        rows = await conn.fetch(queries.ALL_TAG_TYPES)
    return json_response(TagTypeList(tag_types=[TagType.from_row(r) for r in rows]))


async def get_tag_type(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    async with reading(request) as conn:
        row = await conn.fetchrow(queries.TAG_TYPE, name)
    if row is None:
        raise domain.tag_type_missing(name)
    return json_response(OneTagType(tag_type=TagType.from_row(row)))


async def validate_tag_type(request: web.Request) -> web.Response:
    body = await read_json(request, TagTypeBody)
    async with request.app[POOL].acquire() as conn:
        exists = await conn.fetchval(queries.TAG_TYPE_EXISTS, body.name)
    domain.validate_tag_type(body, exists=exists)
    return json_response(ValidTagType.of(body))


async def create_tag_type(request: web.Request) -> web.Response:
    body = await read_json(request, TagTypeBody)
    async with unit_of_work(request) as uow:
        await uow.conn.execute(queries.LOCK_TAG_TYPE_NAME, body.name)
        event = domain.create_tag_type(
            body,
            exists=await uow.conn.fetchval(queries.TAG_TYPE_EXISTS, body.name),
            now=datetime.now(UTC),
        )
        await uow.append(domain.stream(body.name), [event], actor(request))
    return json_response(TagType.created(event), status=201)


async def update_tag_type(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    body = await read_json(request, UpdateTagType)
    async with unit_of_work(request) as uow:
        row = await uow.conn.fetchrow(queries.LOCK_TAG_TYPE, name)
        current = None if row is None else domain.TagTypeState(**dict(row))
        event = domain.update_tag_type(name, body, current)
        if event is not None:
            await uow.append(domain.stream(name), [event], actor(request))
    return empty()


async def delete_tag_type(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    async with unit_of_work(request) as uow:
        exists = await uow.conn.fetchrow(queries.LOCK_TAG_TYPE, name) is not None
        tagged = await queries.lock_tagged(uow.conn, name) if exists else []
        untagged, deleted = domain.delete_tag_type(name, exists=exists, tagged=tagged)
        for event in untagged:
            await uow.append(("feature", event.name), [event], actor(request))
        await uow.append(domain.stream(name), [deleted], actor(request))
    return empty()


async def list_all_tags(request: web.Request) -> web.Response:
    async with reading(request) as conn:
        rows = await conn.fetch(queries.ALL_TAGS)
    return json_response(TagItemList.from_rows(rows))


async def list_tags_of_type(request: web.Request) -> web.Response:
    """As in Unleash, an unknown type has no tags (an empty list, not a 404)."""
    async with reading(request) as conn:
        rows = await conn.fetch(queries.TAGS_OF_TYPE, request.match_info["type"])
    return json_response(TagItemList.from_rows(rows))


async def create_tag(request: web.Request) -> web.Response:
    body = await read_json(request, CreateTag)
    value = domain.tag_value(body.value)
    async with unit_of_work(request) as uow:
        # The type's row, locked: creates of its tags queue, and the type stays meanwhile.
        type_exists = await uow.conn.fetchrow(queries.LOCK_TAG_TYPE, body.type) is not None
        event = domain.create_tag(
            body,
            type_exists=type_exists,
            tag_exists=await uow.conn.fetchval(queries.TAG_EXISTS, body.type, value),
            now=datetime.now(UTC),
        )
        await uow.append(domain.stream(body.type), [event], actor(request))
    return json_response(OneTag.created(event), status=201)


async def get_tag(request: web.Request) -> web.Response:
    tag_type, value = request.match_info["type"], request.match_info["value"]
    async with reading(request) as conn:
        row = await conn.fetchrow(queries.TAG, tag_type, value)
    if row is None:
        raise domain.tag_missing(tag_type, value)
    return json_response(OneTag.from_row(row))


async def delete_tag(request: web.Request) -> web.Response:
    """Off every flag that carries it (archived ones too), then gone."""
    tag_type, value = request.match_info["type"], request.match_info["value"]
    async with unit_of_work(request) as uow:
        # The type's row first, as tagging a flag locks it (queries.LOCK_TAG_TYPE), then the
        # tag's, then the flags that carry it.
        type_exists = await uow.conn.fetchrow(queries.LOCK_TAG_TYPE, tag_type) is not None
        exists = type_exists and await uow.conn.fetchrow(queries.LOCK_TAG, tag_type, value)
        tagged = await queries.lock_tagged(uow.conn, tag_type, value) if exists else []
        untagged, deleted = domain.delete_tag(tag_type, value, exists=bool(exists), tagged=tagged)
        for event in untagged:
            await uow.append(("feature", event.name), [event], actor(request))
        await uow.append(domain.stream(tag_type), [deleted], actor(request))
    return empty()


ROUTES = [
    Route("GET", TAG_TYPES, list_tag_types, auth.READ, ok={200: TagTypeList}, past=True),
    Route(
        "POST",
        TAG_TYPES,
        create_tag_type,
        auth.CREATE_TAG_TYPE,
        body=TagTypeBody,
        ok={201: TagType},
        errors=(NameExists,),
        links={"tagType": Link(get_tag_type, {"name": "$response.body#/name"})},
    ),
    Route(
        "POST",
        TAG_TYPES + "/validate",
        validate_tag_type,
        auth.READ,
        body=TagTypeBody,
        ok={200: ValidTagType},
        errors=(NameExists,),
    ),
    Route("GET", ONE_TAG_TYPE, get_tag_type, auth.READ, ok={200: OneTagType}, past=True),
    Route(
        "PUT",
        ONE_TAG_TYPE,
        update_tag_type,
        auth.UPDATE_TAG_TYPE,
        body=UpdateTagType,
    ),
    Route("DELETE", ONE_TAG_TYPE, delete_tag_type, auth.DELETE_TAG_TYPE),
    Route("GET", TAGS, list_all_tags, auth.READ, ok={200: TagItemList}, past=True),
    Route(
        "POST",
        TAGS,
        create_tag,
        auth.UPDATE_FEATURE,
        body=CreateTag,
        ok={201: OneTag},
        errors=(NameExists,),
    ),
    Route("GET", TAGS + "/{type}", list_tags_of_type, auth.READ, ok={200: TagItemList}, past=True),
    Route("GET", ONE_TAG, get_tag, auth.READ, ok={200: OneTag}, past=True),
    Route("DELETE", ONE_TAG, delete_tag, auth.UPDATE_FEATURE, ok={200: None}),  # as Unleash
]
