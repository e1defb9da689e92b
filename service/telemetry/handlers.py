"""HTTP handlers of the SDKs' reports: POST /api/client/register and /api/client/metrics.

Both answer 202 with no body, as Unleash does, once what they report is written: telemetry in
schema `telemetry` (sql/0015), never events in the log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from service import auth
from service.appkeys import POOL
from service.http.answers import empty
from service.http.requests import principal, read_json
from service.http.routes import Route
from service.telemetry import queries
from service.telemetry.commands import (
    RegisterClientApplication,
    RegisterClientMetrics,
    instant,
)

if TYPE_CHECKING:
    from aiohttp import web

    from service.auth import Principal

# Where Unleash counts the reports of a token for every environment (an admin token, a person).
DEFAULT_ENVIRONMENT: Final = "default"


def environment_of(who: Principal) -> str:
    """The token's environment, as Unleash records it (resolveMetricsEnvironment): never what
    the body says."""
    return DEFAULT_ENVIRONMENT if who.environment == "*" else who.environment


async def register_client_application(request: web.Request) -> web.Response:
    """An SDK says it started: its application, instance, SDK and the strategies it knows.
    Registering again replaces what the instance said before."""
    cmd = await read_json(request, RegisterClientApplication)
    who = principal(request)
    async with request.app[POOL].acquire() as conn:
        await conn.execute(
            queries.REGISTER_INSTANCE,
            cmd.app_name,
            cmd.instance,
            environment_of(who),
            cmd.sdk_version,
            cmd.sdk_flavor,
            cmd.sdk_flavor_version,
            cmd.platform_name,
            cmd.platform_version,
            cmd.yggdrasil_version,
            cmd.spec_version,
            cmd.strategies,
            cmd.interval,
            instant(cmd.started),
            list(who.projects),
        )
    return empty(202)


async def register_client_metrics(request: web.Request) -> web.Response:
    """An SDK's evaluations since its last report, added to the hour of the bucket's stop
    (UTC) for each flag that exists, in the token's environment; the flags evaluated there get
    their `lastSeenAt`. Flags counted neither yes nor no, and unknown flags, are left out."""
    cmd = await read_json(request, RegisterClientMetrics)
    async with request.app[POOL].acquire() as conn:
        await queries.record_metrics(conn, environment_of(principal(request)), cmd)
    return empty(202)


ROUTES = [
    Route(
        "POST",
        "/api/client/register",
        register_client_application,
        auth.CLIENT,
        body=RegisterClientApplication,
        ok={202: None},
    ),
    Route(
        "POST",
        "/api/client/metrics",
        register_client_metrics,
        auth.CLIENT,
        body=RegisterClientMetrics,
        ok={202: None},
    ),
]
