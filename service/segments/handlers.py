"""HTTP handlers of /api/admin/segments."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from aiohttp import web

from service import auth, store
from service.appkeys import POOL, REQUEST_ID
from service.errors import Conflict, NameExists, NotFound
from service.features import domain as features
from service.http import Route, principal, read_json
from service.segments import queries
from service.segments.commands import SegmentBody
from service.segments.events import SegmentCreated, SegmentDeleted, SegmentUpdated

if TYPE_CHECKING:
    from service.connections import Conn
    from service.events import Event


def stream(segment_id: int) -> tuple[str, str]:
    return ("segment", str(segment_id))


def _json(raw: str, status: int = 200) -> web.Response:
    return web.Response(body=raw, status=status, content_type="application/json")


async def _record(request: web.Request, conn: Conn, segment_id: int, event: Event) -> None:
    meta = principal(request).metadata(request[REQUEST_ID])
    await store.append_to_current(conn, stream(segment_id), [event], meta)


def _segment_id(request: web.Request) -> int:
    value = request.match_info["id"]
    if not (value.isascii() and value.isdigit()) or len(value) > 9:
        raise NotFound(f"No segment with id {value}")
    return int(value)


async def list_segments(request: web.Request) -> web.Response:
    raw = await request.app[POOL].fetchval(queries.ALL_JSON)
    return _json('{"segments": ' + raw + "}")


async def get_segment(request: web.Request) -> web.Response:
    segment_id = _segment_id(request)
    raw = await request.app[POOL].fetchval(queries.SEGMENT_JSON, segment_id)
    if raw is None:
        raise NotFound(f"No segment with id {segment_id}")
    return _json(raw)


async def create_segment(request: web.Request) -> web.Response:
    body = await read_json(request, SegmentBody)
    features.check_constraints(body.constraints)
    async with request.app[POOL].acquire() as conn, conn.transaction():
        if await conn.fetchval(queries.NAME_TAKEN, body.name, 0):
            raise NameExists(f"A segment named {body.name} already exists")
        segment_id = await conn.fetchval(queries.NEXT_ID)
        event = SegmentCreated(
            segment_id=segment_id,
            name=body.name,
            description=body.description,
            constraints=list(body.constraints),
            created_at=datetime.now(UTC),
        )
        await _record(request, conn, segment_id, event)
        raw = await conn.fetchval(queries.SEGMENT_JSON, segment_id)
    return _json(raw, status=201)


async def update_segment(request: web.Request) -> web.Response:
    segment_id = _segment_id(request)
    body = await read_json(request, SegmentBody)
    features.check_constraints(body.constraints)
    async with request.app[POOL].acquire() as conn, conn.transaction():
        if await conn.fetchval(queries.LOCK_FOR_DELETE, segment_id) is None:
            raise NotFound(f"No segment with id {segment_id}")
        if await conn.fetchval(queries.NAME_TAKEN, body.name, segment_id):
            raise NameExists(f"A segment named {body.name} already exists")
        event = SegmentUpdated(
            segment_id=segment_id,
            name=body.name,
            description=body.description,
            constraints=list(body.constraints),
        )
        await _record(request, conn, segment_id, event)
    return web.Response(status=204)


async def delete_segment(request: web.Request) -> web.Response:
    segment_id = _segment_id(request)
    async with request.app[POOL].acquire() as conn, conn.transaction():
        name = await conn.fetchval(queries.LOCK_FOR_DELETE, segment_id)
        if name is None:
            raise NotFound(f"No segment with id {segment_id}")
        used = await conn.fetchval(queries.IN_USE, segment_id)
        if used:
            raise Conflict(
                f"Segment {segment_id} is used by {used} strategy(ies); remove it there first"
            )
        await _record(request, conn, segment_id, SegmentDeleted(segment_id=segment_id, name=name))
    return web.Response(status=204)


ROUTES = [
    Route("GET", "/api/admin/segments", list_segments, auth.READ),
    Route("POST", "/api/admin/segments", create_segment, auth.CREATE_SEGMENT, body=True),
    Route("GET", "/api/admin/segments/{id}", get_segment, auth.READ),
    Route("PUT", "/api/admin/segments/{id}", update_segment, auth.UPDATE_SEGMENT, body=True),
    Route("DELETE", "/api/admin/segments/{id}", delete_segment, auth.DELETE_SEGMENT),
]
