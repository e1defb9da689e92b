"""HTTP handlers of /api/admin/segments."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

import msgspec

from service import auth
from service.appkeys import POOL
from service.errors import Conflict, NameExists, NotFound
from service.features import domain, queries
from service.features.commands import SegmentBody, SegmentName, StrategySegments
from service.features.responses import (
    Segment,
    SegmentList,
    SegmentStrategies,
    SegmentStrategy,
    Strategy,
)
from service.http.answers import empty, json_response
from service.http.past import reading
from service.http.requests import actor, read_json, unit_of_work
from service.http.routes import NUMBERED, Link, Route

if TYPE_CHECKING:
    import asyncpg
    from aiohttp import web


def _segment_id(request: web.Request) -> int:
    value = request.match_info["id"]
    if not (value.isascii() and value.isdigit()) or len(value) > 9:
        raise domain.segment_missing(value)
    return int(value)


async def list_segments(request: web.Request) -> web.Response:
    async with reading(request) as conn:
        rows = await conn.fetch(queries.ALL_SEGMENTS_WITH_USAGE)
    return json_response(
        SegmentList(
            segments=[
                msgspec.structs.replace(
                    Segment.from_row(r),
                    used_in_features=r["used_in_features"],
                    used_in_projects=r["used_in_projects"],
                )
                for r in rows
            ]
        )
    )


async def get_segment(request: web.Request) -> web.Response:
    segment_id = _segment_id(request)
    async with reading(request) as conn:
        row = await conn.fetchrow(queries.SEGMENT_BY_ID, segment_id)
    if row is None:
        raise domain.segment_missing(segment_id)
    return json_response(Segment.from_row(row))


async def validate_segment(request: web.Request) -> web.Response:
    """Whether a segment may take this name: 204 when it is valid and free, 400 when it breaks
    the rule of names (1 to 100 characters), 409 when a segment has it (as creating it would
    answer). The segment forms of Unleash's UI ask as the name is typed."""
    body = await read_json(request, SegmentName)
    async with request.app[POOL].acquire() as conn:
        taken = await conn.fetchval(queries.SEGMENT_NAME_TAKEN, body.name, 0)
    domain.segment_name_free(body.name, taken=taken)
    return empty(204)


# Segment ids are PostgreSQL integers from 1 on: another number is no segment's.
_SEGMENT_IDS: Final = range(1, 2**31)


def _segment_number(request: web.Request) -> int | None:
    """The path's `id` (a whole number: the route's pattern); None when no segment can have
    it."""
    value = request.match_info["id"]
    digits = value.lstrip("0")
    if value.startswith("-") or len(digits) > len(str(_SEGMENT_IDS.stop)):
        return None  # and no int() of thousands of digits, which Python refuses
    number = int(digits or "0")
    return number if number in _SEGMENT_IDS else None


async def get_strategies_by_segment_id(request: web.Request) -> web.Response:
    """The strategies that use the segment, those of archived flags too (they keep it from
    being deleted); none for a number that is no segment's id, as in Unleash. Unleash's UI
    reads them before it offers to delete a segment."""
    segment_id = _segment_number(request)
    rows: list[asyncpg.Record] = []
    async with reading(request) as conn:  # entered for every id: it checks `?at=` too
        if segment_id is not None:
            rows = await conn.fetch(queries.STRATEGIES_USING_SEGMENT, segment_id)
    return json_response(SegmentStrategies(strategies=[SegmentStrategy.from_row(r) for r in rows]))


async def create_segment(request: web.Request) -> web.Response:
    body = await read_json(request, SegmentBody)
    async with unit_of_work(request) as uow:
        segment_id = await uow.conn.fetchval(queries.NEXT_SEGMENT_ID)
        event = domain.create_segment(
            body,
            segment_id=segment_id,
            name_taken=await uow.conn.fetchval(queries.SEGMENT_NAME_TAKEN, body.name, 0),
            now=datetime.now(UTC),
        )
        stream = domain.segment_stream(segment_id)
        await uow.append(stream, [event], actor(request), new=True)
        row = await uow.conn.fetchrow(queries.SEGMENT_BY_ID, segment_id)
    assert row is not None  # written or locked in this transaction
    return json_response(Segment.from_row(row), status=201)


async def update_segment(request: web.Request) -> web.Response:
    segment_id = _segment_id(request)
    body = await read_json(request, SegmentBody)
    async with unit_of_work(request) as uow:
        found = await uow.conn.fetchval(queries.LOCK_SEGMENT, segment_id) is not None
        event = domain.update_segment(
            segment_id,
            body,
            found=found,
            name_taken=await uow.conn.fetchval(queries.SEGMENT_NAME_TAKEN, body.name, segment_id),
        )
        await uow.append(domain.segment_stream(segment_id), [event], actor(request))
    return empty(204)


async def delete_segment(request: web.Request) -> web.Response:
    segment_id = _segment_id(request)
    async with unit_of_work(request) as uow:
        name = await uow.conn.fetchval(queries.LOCK_SEGMENT, segment_id)
        event = domain.delete_segment(
            segment_id,
            name=name,
            used_by=await uow.conn.fetchval(queries.SEGMENT_USED_BY, segment_id) if name else 0,
        )
        await uow.append(domain.segment_stream(segment_id), [event], actor(request))
    return empty(204)


async def segments_of_strategy(request: web.Request) -> web.Response:
    """The segments a strategy uses (the UI's strategy form reads them); none for an id that
    is no strategy's, as in Unleash."""
    try:
        strategy_id = uuid.UUID(request.match_info["strategyId"])
    except ValueError:
        return json_response(SegmentList(segments=[]))
    async with reading(request) as conn:
        rows = await conn.fetch(queries.SEGMENTS_OF_STRATEGY, strategy_id)
    return json_response(SegmentList(segments=[Segment.from_row(r) for r in rows]))


async def set_strategy_segments(request: web.Request) -> web.Response:
    """The segments one strategy uses (all of them), as Unleash's UI saves them; the answer
    is the body, as Unleash's."""
    body = await read_json(request, StrategySegments)
    try:
        strategy_id = uuid.UUID(body.strategy_id)
    except ValueError:
        raise domain.strategy_not_found(body.strategy_id) from None
    async with unit_of_work(request) as uow:
        # A strategy stays with its flag: which flag is read before the flag's lock.
        feature = await uow.conn.fetchval(queries.FEATURE_OF_STRATEGY, strategy_id)
        if feature is None:
            raise domain.strategy_not_found(body.strategy_id)
        target = domain.Target(feature, body.project_id, body.environment_id)
        state = await queries.environment_state(uow.conn, target, lock=True)
        domain.check_target(target, state)
        row = await uow.conn.fetchrow(
            queries.STRATEGY_IN, strategy_id, feature, body.environment_id
        )
        if row is None:
            raise domain.strategy_not_found(body.strategy_id)
        event = domain.strategy_segments_set(
            target,
            msgspec.to_builtins(Strategy.from_row(row)),
            state,
            segment_ids=body.segment_ids,
            missing_segments=await queries.missing_segments(uow.conn, body.segment_ids),
        )
        if event is not None:
            await uow.append(domain.stream(feature), [event], actor(request))
    return json_response(body, status=201)


ROUTES = [
    Route("GET", "/api/admin/segments", list_segments, auth.READ, ok={200: SegmentList}, past=True),
    Route(
        "POST",
        "/api/admin/segments",
        create_segment,
        auth.CREATE_SEGMENT,
        body=SegmentBody,
        ok={201: Segment},
        errors=(NameExists,),
        links={"segment": Link(get_segment, {"id": "$response.body#/id"})},
    ),
    Route(
        "GET",
        "/api/admin/segments/{id:\\d+}",
        get_segment,
        auth.READ,
        ok={200: Segment},
        past=True,
        params=NUMBERED,
    ),
    Route(
        "POST",
        "/api/admin/segments/validate",
        validate_segment,
        auth.READ,
        body=SegmentName,
        ok={204: None},
        errors=(NameExists,),
    ),
    Route(
        "GET",
        "/api/admin/segments/{id:-?[0-9]+}/strategies",
        get_strategies_by_segment_id,
        auth.READ,
        ok={200: SegmentStrategies},
        past=True,
        params={"id": int},
    ),
    Route(
        "PUT",
        "/api/admin/segments/{id:\\d+}",
        update_segment,
        auth.UPDATE_SEGMENT,
        body=SegmentBody,
        ok={204: None},
        errors=(NameExists,),
        params=NUMBERED,
    ),
    Route(
        "DELETE",
        "/api/admin/segments/{id:\\d+}",
        delete_segment,
        auth.DELETE_SEGMENT,
        ok={204: None},
        errors=(Conflict,),
        params=NUMBERED,
    ),
    Route(
        "GET",
        "/api/admin/segments/strategies/{strategyId}",
        segments_of_strategy,
        auth.READ,
        ok={200: SegmentList},
        past=True,
    ),
    Route(
        "POST",
        "/api/admin/segments/strategies",
        set_strategy_segments,
        auth.UPDATE_FEATURE,  # Unleash's UPDATE_FEATURE_STRATEGY, which ours is part of
        body=StrategySegments,
        ok={201: StrategySegments},
        errors=(NotFound,),
    ),
]
