"""HTTP handlers of /api/admin/features-batch: export, validate and import (docs/behavior.md,
"Export and import")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from service import auth
from service.appkeys import POOL
from service.errors import ImportRefused, MissingPermissions, NotFound
from service.http.answers import empty, json_response
from service.http.requests import actor, principal, read_json, unit_of_work
from service.http.routes import Route
from service.transfer import imports, queries
from service.transfer.commands import ExportQuery, ImportToggles
from service.transfer.responses import ExportResult, ImportValidation

if TYPE_CHECKING:
    from aiohttp import web

BASE = "/api/admin/features-batch"


async def export_features(request: web.Request) -> web.Response:
    query = await read_json(request, ExportQuery)
    async with request.app[POOL].acquire() as conn:
        found = await queries.export(conn, query)
    response = json_response(found)
    if query.download_file:
        response.headers["Content-Disposition"] = 'attachment; filename="export.json"'
    return response


async def validate_import(request: web.Request) -> web.Response:
    cmd = await read_json(request, ImportToggles)
    async with request.app[POOL].acquire() as conn:
        found = await imports.check(conn, cmd, principal(request).can)
    return json_response(found)


async def import_features(request: web.Request) -> web.Response:
    cmd = await read_json(request, ImportToggles)
    async with unit_of_work(request) as uow:
        await imports.apply(uow, cmd, actor(request), allowed=principal(request).can)
    return empty()


ROUTES = [
    Route(
        "POST",
        BASE + "/export",
        export_features,
        auth.READ,
        body=ExportQuery,
        ok={200: ExportResult},
        errors=(NotFound,),
    ),
    Route(
        "POST",
        BASE + "/validate",
        validate_import,
        auth.READ,
        body=ImportToggles,
        ok={200: ImportValidation},
        errors=(NotFound,),
    ),
    Route(
        "POST",
        BASE + "/import",
        import_features,
        auth.UPDATE_FEATURE,
        body=ImportToggles,
        errors=(ImportRefused, MissingPermissions, NotFound),
    ),
]
