"""HTTP handlers of /api/admin/features/:featureName/tags."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from aiohttp import web

from service import auth, store
from service.appkeys import POOL, REQUEST_ID
from service.errors import Conflict, NotFound
from service.features import domain, queries
from service.features.commands import TagBody
from service.features.events import FeatureTagged, FeatureUntagged
from service.http import Route, json_response, principal, read_json

if TYPE_CHECKING:
    from service.connections import Conn

BASE = "/api/admin/features/{featureName}/tags"


async def _lock(conn: Conn, name: str) -> None:
    if await conn.fetchval(queries.LOCK_FEATURE_BY_NAME, name) is None:
        raise NotFound(f"There is no active flag named {name}")


async def list_tags(request: web.Request) -> web.Response:
    name = request.match_info["featureName"]
    async with request.app[POOL].acquire() as conn:
        if await conn.fetchval(queries.NAME_EXISTS, name) is None:
            raise NotFound(f"There is no flag named {name}")
        raw = await conn.fetchval(queries.TAGS_JSON, name)
    return web.Response(body=f'{{"version": 1, "tags": {raw}}}', content_type="application/json")


async def add_tag(request: web.Request) -> web.Response:
    name = request.match_info["featureName"]
    body = await read_json(request, TagBody)
    value = domain.tag_value(body.value)
    domain.check_tag_type(body.type)
    async with request.app[POOL].acquire() as conn, conn.transaction():
        await _lock(conn, name)
        if await conn.fetchval(queries.HAS_TAG, name, body.type, value):
            raise Conflict(f"Flag {name} already has the tag {body.type}:{value}")
        event = FeatureTagged(
            name=name, tag_type=body.type, value=value, tagged_at=datetime.now(UTC)
        )
        meta = principal(request).metadata(request[REQUEST_ID])
        await store.append_to_current(conn, domain.stream(name), [event], meta)
    return json_response({"value": value, "type": body.type}, status=201)


async def remove_tag(request: web.Request) -> web.Response:
    name = request.match_info["featureName"]
    tag_type, value = request.match_info["type"], request.match_info["value"]
    async with request.app[POOL].acquire() as conn, conn.transaction():
        await _lock(conn, name)
        if not await conn.fetchval(queries.HAS_TAG, name, tag_type, value):
            raise NotFound(f"Flag {name} has no tag {tag_type}:{value}")
        event = FeatureUntagged(name=name, tag_type=tag_type, value=value)
        meta = principal(request).metadata(request[REQUEST_ID])
        await store.append_to_current(conn, domain.stream(name), [event], meta)
    return web.Response(status=200)


ROUTES = [
    Route("GET", BASE, list_tags, auth.READ),
    Route("POST", BASE, add_tag, auth.UPDATE_FEATURE, body=True),
    Route("DELETE", BASE + "/{type}/{value}", remove_tag, auth.UPDATE_FEATURE),
]
