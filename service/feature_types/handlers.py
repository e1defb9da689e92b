"""HTTP handlers of /api/admin/feature-types."""

from __future__ import annotations

from typing import TYPE_CHECKING

from service import auth
from service.errors import NotFound
from service.feature_types import domain, queries
from service.feature_types.commands import UpdateLifetime
from service.feature_types.responses import FeatureType, FeatureTypeList
from service.http.answers import json_response
from service.http.past import reading
from service.http.requests import actor, read_json, unit_of_work
from service.http.routes import Route

if TYPE_CHECKING:
    from aiohttp import web


async def list_feature_types(request: web.Request) -> web.Response:
    async with reading(request) as conn:
        rows = await conn.fetch(queries.ALL_FEATURE_TYPES)
    return json_response(FeatureTypeList(types=[FeatureType.from_row(r) for r in rows]))


async def update_lifetime(request: web.Request) -> web.Response:
    """The type named in any case, as Unleash takes it; answers the type as it is now."""
    type_id = request.match_info["id"].lower()
    body = await read_json(request, UpdateLifetime)
    async with unit_of_work(request) as uow:
        row = await uow.conn.fetchrow(queries.LOCK_LIFETIME, type_id)
        event = domain.change_lifetime(
            type_id, body, current=None if row is None else (row["lifetime_days"],)
        )
        if event is not None:
            await uow.append(domain.stream(type_id), [event], actor(request))
        found = await uow.conn.fetchrow(queries.FEATURE_TYPE, type_id)
    assert found is not None  # locked in this transaction
    return json_response(FeatureType.from_row(found))


ROUTES = [
    Route(
        "GET",
        "/api/admin/feature-types",
        list_feature_types,
        auth.READ,
        ok={200: FeatureTypeList},
        past=True,
    ),
    Route(
        "PUT",
        "/api/admin/feature-types/{id}/lifetime",
        update_lifetime,
        auth.ADMIN,
        body=UpdateLifetime,
        ok={200: FeatureType},
        errors=(NotFound,),
    ),
]
