"""Maintenance mode's refusal, as Unleash's maintenanceMiddleware: while it is on, the admin
API refuses every change (POST, PUT, DELETE, and PATCH: docs/behavior.md) with 503, except
maintenance mode's own, so that it can be turned off. Reads, the client and
frontend APIs (SDKs), signing in and out are never refused. The database is asked for each
change, so that every replica refuses from the commit that turned it on."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from aiohttp import web

from service.appkeys import POOL
from service.errors import MaintenanceMode
from service.instance.state import maintenance as maintenance_on

if TYPE_CHECKING:
    from service.http.routes import Handler

ADMIN_PREFIX: Final = "/api/admin/"
OWN_PATH: Final = "/api/admin/maintenance"
CHANGES: Final = frozenset({"POST", "PUT", "DELETE", "PATCH"})
MESSAGE: Final = "Unleash is currently in maintenance mode."


def refusable(method: str, path: str) -> bool:
    """A change the admin API refuses while maintenance mode is on: under /api/admin, all but
    maintenance mode's own. (Unleash lets through every path that contains `/maintenance`,
    so also the changes of a flag named `maintenance...`; here that is its one route.)"""
    return method in CHANGES and path.startswith(ADMIN_PREFIX) and path.rstrip("/") != OWN_PATH


@web.middleware
async def maintenance(request: web.Request, handler: Handler) -> web.StreamResponse:
    """After authentication (a caller without a valid token still gets 401), before the
    body is read."""
    if refusable(request.method, request.path):
        async with request.app[POOL].acquire() as conn:
            on = await maintenance_on(conn)
        if on:
            raise MaintenanceMode(MESSAGE)
    return await handler(request)
