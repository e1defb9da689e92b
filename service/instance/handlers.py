"""HTTP handlers of maintenance mode (/api/admin/maintenance), the frontend API's CORS origins
(POST /api/admin/ui-config, /api/admin/ui-config/cors), the usage statistics
(/api/admin/instance-admin/statistics), the telemetry settings (/api/admin/telemetry/settings)."""

from __future__ import annotations

from typing import Final

from aiohttp import web

from service import auth
from service.admin_ui import INSTANCE_ID
from service.appkeys import POOL
from service.context import builtins as context_builtins
from service.errors import NotFound
from service.http.answers import empty, json_response
from service.http.requests import actor, read_json, unit_of_work
from service.http.routes import Content, Route
from service.instance import domain, queries, state
from service.instance.commands import SetCors, SetUiConfig, ToggleMaintenance
from service.instance.responses import InstanceStats, Maintenance, TelemetrySettings
from service.strategies import builtins as strategy_builtins
from service.ui import UI_VERSION


async def get_maintenance(request: web.Request) -> web.Response:
    async with request.app[POOL].acquire() as conn:
        enabled = await state.maintenance(conn)
    return json_response(Maintenance(enabled=enabled))


async def toggle_maintenance(request: web.Request) -> web.Response:
    """Maintenance mode on or off, for every replica from the commit on."""
    body = await read_json(request, ToggleMaintenance)
    async with unit_of_work(request) as uow:
        current = bool(await uow.conn.fetchval(queries.LOCK_MAINTENANCE))
        event = domain.set_maintenance(body.enabled, current=current)
        if event is not None:
            await uow.append(domain.MAINTENANCE, [event], actor(request))
    return empty(204)


async def _set_origins(request: web.Request, origins: list[str] | None) -> web.Response:
    async with unit_of_work(request) as uow:
        row = await uow.conn.fetchrow(queries.LOCK_ORIGINS)
        current = None if row is None else tuple(row["frontend_api_origins"])
        event = domain.set_origins(origins, current=current)
        if event is not None:
            await uow.append(domain.FRONTEND, [event], actor(request))
    return empty(204)


async def set_cors(request: web.Request) -> web.Response:
    """The frontend API's CORS origins, replacing FRONTEND_API_ORIGINS on every replica."""
    body = await read_json(request, SetCors)
    return await _set_origins(request, body.frontend_api_origins)


async def set_ui_config(request: web.Request) -> web.Response:
    """Unleash's older form of set_cors (deprecated there): the origins, nested."""
    body = await read_json(request, SetUiConfig)
    settings = body.frontend_settings
    return await _set_origins(request, None if settings is None else settings.frontend_api_origins)


async def _statistics(request: web.Request) -> InstanceStats:
    async with request.app[POOL].acquire() as conn:
        row = await conn.fetchrow(queries.STATISTICS)
    assert row is not None  # one row, always
    fields = set(context_builtins.BUILT_IN) | set(row["context_fields"] or ())
    return InstanceStats.from_row(
        row,
        instance_id=INSTANCE_ID,
        version=UI_VERSION,
        roles=len(auth.ROOT_ROLES),
        context_fields=len(fields),
        strategies=len(strategy_builtins.BUILT_IN) + row["custom_strategies"],
    )


async def statistics(request: web.Request) -> web.Response:
    """The instance's usage figures, signed as Unleash signs them (`sum`)."""
    return json_response(await _statistics(request))


async def statistics_csv(request: web.Request) -> web.Response:
    """The same figures as one CSV line under its header, as a file to save."""
    stats = await _statistics(request)
    millis = int(stats.timestamp.timestamp() * 1000)
    response = web.Response(text=stats.csv(), content_type="text/csv", charset="utf-8")
    name = f"unleash-{stats.instance_id}-{millis}.csv"
    response.headers["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


TELEMETRY: Final = TelemetrySettings()


async def telemetry_settings(_request: web.Request) -> web.Response:
    """Unleash's version and feature usage collection: both off, since nothing is ever sent
    (docs/behavior.md)."""
    return json_response(TELEMETRY)


ROUTES: Final = [
    Route("GET", "/api/admin/maintenance", get_maintenance, auth.ADMIN, ok={200: Maintenance}),
    Route(
        "POST",
        "/api/admin/maintenance",
        toggle_maintenance,
        auth.ADMIN,
        body=ToggleMaintenance,
        ok={204: None},
    ),
    Route(
        "POST",
        "/api/admin/ui-config",
        set_ui_config,
        auth.ADMIN,
        body=SetUiConfig,
        ok={204: None},
        errors=(NotFound,),
    ),
    Route(
        "POST",
        "/api/admin/ui-config/cors",
        set_cors,
        auth.ADMIN,
        body=SetCors,
        ok={204: None},
        errors=(NotFound,),
    ),
    Route(
        "GET",
        "/api/admin/instance-admin/statistics",
        statistics,
        auth.READ,
        ok={200: InstanceStats},
    ),
    Route(
        "GET",
        "/api/admin/instance-admin/statistics/csv",
        statistics_csv,
        auth.READ,
        ok={200: Content(("text/csv",), "The statistics as CSV: a header line, a line of values")},
    ),
    Route(
        "GET",
        "/api/admin/telemetry/settings",
        telemetry_settings,
        auth.READ,
        ok={200: TelemetrySettings},
    ),
]
