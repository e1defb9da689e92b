"""What a flag's page shows of SDKs' reports: Unleash's GET /api/admin/client-metrics/features/
:name (the last hour, the applications seen) and its `/raw` (hour by hour), read from schema
`telemetry` (never the log, so a past state, `?at=`, is not offered)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Final

import msgspec

from service import auth
from service.appkeys import POOL
from service.http.answers import json_response
from service.http.requests import int_param
from service.http.routes import Param, Route

if TYPE_CHECKING:
    import asyncpg
    from aiohttp import web

# The last hour's counts per environment, and the applications that reported the flag in the
# last 24 hours (Unleash's getFeatureToggleMetricsSummary and its store's two queries).
LAST_HOUR = """
SELECT environment, min(hour) AS hour, sum(yes)::bigint AS yes, sum(no)::bigint AS no
FROM telemetry.client_metrics_hourly
WHERE feature_name = $1 AND hour >= now() - interval '1 hour'
GROUP BY environment ORDER BY environment
"""
SEEN_APPLICATIONS = """
SELECT DISTINCT app_name FROM telemetry.client_metrics_hourly
WHERE feature_name = $1 AND hour >= now() - interval '24 hours'
ORDER BY app_name
"""
# Hour by hour for the last $2 hours (the current one included), for each environment and
# application (at most 100, by name) that reported the flag then, zero where they did not (as
# Unleash fills its hour buckets), oldest first.
HOURLY = """
WITH hours AS (
    SELECT generate_series(date_trunc('hour', now(), 'UTC') - ($2 - 1) * interval '1 hour',
                           date_trunc('hour', now(), 'UTC'), interval '1 hour') AS hour
), reported AS (
    SELECT * FROM telemetry.client_metrics_hourly
    WHERE feature_name = $1 AND hour >= (SELECT min(hour) FROM hours)
), apps AS (
    SELECT DISTINCT app_name FROM reported ORDER BY app_name LIMIT 100
), pairs AS (
    SELECT DISTINCT environment, app_name FROM reported WHERE app_name IN (SELECT * FROM apps)
)
SELECT p.environment, p.app_name, h.hour, coalesce(r.yes, 0) AS yes, coalesce(r.no, 0) AS no,
       coalesce(r.variants, '{}')::text AS variants
FROM pairs p CROSS JOIN hours h
LEFT JOIN reported r ON r.environment = p.environment AND r.app_name = p.app_name
                    AND r.hour = h.hour
ORDER BY h.hour, p.environment, p.app_name
"""
HOURS_BACK: Final = (24, 1, 48)  # default, least, most (Unleash's, without extendedUsageMetrics)

_variants = msgspec.json.Decoder(dict[str, int])


class EnvironmentUsage(msgspec.Struct, frozen=True, kw_only=True):
    environment: str
    timestamp: datetime  # the start of the hour
    yes: int
    no: int


class FeatureUsage(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Unleash's featureUsageSchema."""

    version: int = 1
    maturity: str = "stable"
    feature_name: str
    last_hour_usage: list[EnvironmentUsage]
    seen_applications: list[str]


class HourlyUsage(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    feature_name: str
    app_name: str
    environment: str
    timestamp: datetime
    yes: int
    no: int
    variants: dict[str, int]

    @classmethod
    def from_row(cls, name: str, row: asyncpg.Record) -> HourlyUsage:
        return cls(
            feature_name=name,
            app_name=row["app_name"],
            environment=row["environment"],
            timestamp=row["hour"],
            yes=row["yes"],
            no=row["no"],
            variants=_variants.decode(row["variants"]),
        )


class FeatureMetrics(msgspec.Struct, frozen=True, kw_only=True):
    """Unleash's featureMetricsSchema."""

    version: int = 1
    maturity: str = "stable"
    data: list[HourlyUsage]


async def feature_usage(request: web.Request) -> web.Response:
    """The flag's last hour and the applications that reported it; empty for a name no SDK
    reported (as in Unleash, whether or not a flag has it)."""
    name = request.match_info["name"]
    async with request.app[POOL].acquire() as conn:
        hours = await conn.fetch(LAST_HOUR, name)
        apps = await conn.fetch(SEEN_APPLICATIONS, name)
    usage = [
        EnvironmentUsage(
            environment=r["environment"], timestamp=r["hour"], yes=r["yes"], no=r["no"]
        )
        for r in hours
    ]
    return json_response(
        FeatureUsage(
            feature_name=name,
            last_hour_usage=usage,
            seen_applications=[r["app_name"] for r in apps],
        )
    )


HOURS: Final = Param(
    "hoursBack",
    Annotated[int, msgspec.Meta(ge=HOURS_BACK[1])],
    f"This many hours back, the current one included (default {HOURS_BACK[0]}; more than"
    f" {HOURS_BACK[2]} is {HOURS_BACK[2]})",
)


async def feature_metrics(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    default, least, most = HOURS_BACK
    hours = min(int_param(request, HOURS.name, default, least), most)
    async with request.app[POOL].acquire() as conn:
        rows = await conn.fetch(HOURLY, name, hours)
    return json_response(FeatureMetrics(data=[HourlyUsage.from_row(name, r) for r in rows]))


BASE = "/api/admin/client-metrics/features/{name}"
ROUTES = [
    Route("GET", BASE, feature_usage, auth.READ, ok={200: FeatureUsage}),
    Route(
        "GET", BASE + "/raw", feature_metrics, auth.READ, ok={200: FeatureMetrics}, query=(HOURS,)
    ),
]
