"""What a flag's page shows of SDKs' reports (GET /api/admin/client-metrics/features/:name and
its /raw): the last hour per environment, the applications seen, and hour by hour."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from tests.factories import ADMIN, api_token, create, error, ok

if TYPE_CHECKING:
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

USAGE = "/api/admin/client-metrics/features"


def iso(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


async def report(client: Client, token: str, app: str, stop: datetime, **counts: Any) -> None:
    body = {
        "appName": app,
        "bucket": {
            "start": iso(stop - timedelta(minutes=1)),
            "stop": iso(stop),
            "toggles": {"f": counts},
        },
    }
    resp = await client.post("/api/client/metrics", json=body, headers={"Authorization": token})
    assert resp.status == 202, await resp.text()


async def test_a_flag_s_usage_as_its_page_shows_it(client: Client) -> None:
    await ok(await create(client, {"name": "f"}), 200)
    token = (await api_token(client, environment="development"))["secret"]
    now = datetime.now(UTC)
    if now.minute == 59 and now.second >= 50:  # the hours below must not turn while it runs
        await asyncio.sleep(61 - now.second)
        now = datetime.now(UTC)
    hour = now.replace(minute=0, second=0, microsecond=0)
    await report(client, token, "web", now, yes=3, no=1, variants={"blue": 2})
    await report(client, token, "api", now, yes=1, no=0)
    await report(client, token, "web", hour - timedelta(hours=2), yes=5, no=5)
    await report(client, token, "old", hour - timedelta(hours=30), yes=1, no=1)
    usage = await ok(await client.get(f"{USAGE}/f", headers=ADMIN))
    assert usage == {
        "version": 1,
        "maturity": "stable",
        "featureName": "f",
        "lastHourUsage": [
            {"environment": "development", "timestamp": iso(hour), "yes": 4, "no": 1}
        ],
        "seenApplications": ["api", "web"],
    }
    # The flag shows the last hour's counts in each environment too (Unleash's yes and no).
    shown = await ok(await client.get("/api/admin/projects/default/features/f", headers=ADMIN))
    assert [(e["name"], e["yes"], e["no"]) for e in shown["environments"]] == [
        ("development", 4, 1),
        ("production", 0, 0),
    ]
    raw = await ok(await client.get(f"{USAGE}/f/raw?hoursBack=3", headers=ADMIN))

    def row(app: str, at: datetime, yes: int, no: int, **variants: int) -> dict[str, Any]:
        return {
            "featureName": "f",
            "appName": app,
            "environment": "development",
            "timestamp": iso(at),
            "yes": yes,
            "no": no,
            "variants": variants,
        }

    two, one = hour - timedelta(hours=2), hour - timedelta(hours=1)
    assert raw == {
        "version": 1,
        "maturity": "stable",
        "data": [
            row("api", two, 0, 0),
            row("web", two, 5, 5),
            row("api", one, 0, 0),
            row("web", one, 0, 0),
            row("api", hour, 1, 0),
            row("web", hour, 3, 1, blue=2),
        ],
    }
    # The default is 24 hours; more than 48 is 48 (the report of 30 hours ago shows then).
    day = await ok(await client.get(f"{USAGE}/f/raw", headers=ADMIN))
    assert {(d["appName"], d["timestamp"]) for d in day["data"]} >= {("web", iso(two))}
    assert len(day["data"]) == 2 * 24
    most = await ok(await client.get(f"{USAGE}/f/raw?hoursBack=1000", headers=ADMIN))
    assert len(most["data"]) == 3 * 48
    resp = await client.get(f"{USAGE}/f/raw?hoursBack=0", headers=ADMIN)
    await error(resp, 400, "ValidationError")


async def test_a_flag_no_sdk_reported_has_no_usage(client: Client) -> None:
    for name in ("f", "no-such-flag"):
        usage = await ok(await client.get(f"{USAGE}/{name}", headers=ADMIN))
        assert usage == {
            "version": 1,
            "maturity": "stable",
            "featureName": name,
            "lastHourUsage": [],
            "seenApplications": [],
        }
        raw = await ok(await client.get(f"{USAGE}/{name}/raw?hoursBack=48", headers=ADMIN))
        assert raw == {"version": 1, "maturity": "stable", "data": []}
