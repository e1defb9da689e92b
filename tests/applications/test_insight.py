"""Project insight (docs/behavior.md, "Project insight"): the health report, the insights and
the lead time to production, exact from the log's commit times (the async read model
feature_lead_times)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from service import auth
from service.appkeys import POOL
from tests.conftest import as_principal
from tests.factories import ADMIN, ISO, error, flag, ok

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

PROJECT = "/api/admin/projects/default"


async def caught_up(app: web.Application) -> None:
    """The async read model of lead times has every event."""
    async with app[POOL].acquire() as conn:
        for _ in range(200):
            behind = await conn.fetchval(
                "SELECT (SELECT position FROM log_head) - position FROM projection_checkpoints "
                "WHERE name = 'lead_times'"
            )
            if behind == 0:
                return
            await asyncio.sleep(0.05)
    raise AssertionError("lead_times did not catch up")


async def switch(client: Client, name: str, environment: str, on: bool = True) -> None:
    url = f"{PROJECT}/features/{name}/environments/{environment}/{'on' if on else 'off'}"
    await ok(await client.post(url, headers=ADMIN))


async def exact_days(app: web.Application, name: str) -> float:
    """From the flag's creation to the commit of its first enabling in production, in days."""
    async with app[POOL].acquire() as conn:
        seconds = await conn.fetchval(
            "SELECT extract(epoch FROM min(e.recorded_at) - f.created_at) FROM events e "
            "JOIN features f ON f.name = e.stream_key "
            "WHERE e.type = 'FeatureEnvironmentEnabled' AND e.stream_key = $1 "
            "AND e.data ->> 'environment' = 'production' GROUP BY f.created_at",
            name,
        )
    return float(seconds) / 86_400


async def test_lead_time_is_exact_from_the_log(client: Client, app: web.Application) -> None:
    for name in ("a", "b", "c"):
        await flag(client, name)
    await switch(client, "a", "development")  # not production: no lead time yet
    await caught_up(app)
    assert await ok(await client.get(f"{PROJECT}/dora", headers=ADMIN)) == {
        "features": [],
        "projectAverage": 0,
    }
    await switch(client, "a", "production")
    await switch(client, "b", "production")
    first_b = await exact_days(app, "b")
    await switch(client, "b", "production", on=False)
    await switch(client, "b", "production")  # a later enabling keeps the first
    await caught_up(app)
    body = await ok(await client.get(f"{PROJECT}/dora", headers=ADMIN))
    a, b = await exact_days(app, "a"), first_b
    assert body == {
        "features": [
            {"name": "a", "timeToProduction": a},
            {"name": "b", "timeToProduction": b},
        ],
        "projectAverage": (a + b) / 2,
    }
    assert 0 < a < 1  # seconds, not whole days
    assert await ok(await client.get("/api/admin/projects/nope/dora", headers=ADMIN)) == {
        "features": [],
        "projectAverage": 0,
    }


async def test_a_deleted_flag_s_name_starts_afresh(client: Client, app: web.Application) -> None:
    await flag(client, "gone")
    await switch(client, "gone", "production")
    await ok(await client.delete(f"{PROJECT}/features/gone", headers=ADMIN), 200, 202)
    await ok(
        await client.post(f"{PROJECT}/delete", json={"features": ["gone"]}, headers=ADMIN), 200, 202
    )
    await flag(client, "gone")
    await caught_up(app)
    assert (await ok(await client.get(f"{PROJECT}/dora", headers=ADMIN)))["features"] == []
    async with app[POOL].acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM feature_lead_times") == 0


async def test_the_health_report(client: Client, app: web.Application) -> None:
    await flag(client, "fresh")
    await flag(client, "old")
    await ok(
        await client.patch(
            f"{PROJECT}/features/old",
            json=[{"op": "replace", "path": "/stale", "value": True}],
            headers=ADMIN,
        )
    )
    await switch(client, "fresh", "production")
    await caught_up(app)
    body = await ok(await client.get(f"{PROJECT}/health-report", headers=ADMIN))
    assert ISO.match(body.pop("createdAt"))
    stats = body.pop("stats")
    assert stats["createdCurrentWindow"] == 2
    assert stats["avgTimeToProdCurrentWindow"] == round(await exact_days(app, "fresh"), 1)
    features = body.pop("features")
    assert [(f["name"], f["stale"], f["potentiallyStale"]) for f in features] == [
        ("fresh", False, False),
        ("old", True, False),
    ]
    body.pop("updatedAt")
    assert body == {
        "name": "Default",
        "description": "Default project",
        "mode": "open",
        "featureLimit": None,
        "featureNaming": {"pattern": None, "example": None, "description": None},
        "defaultStickiness": "default",
        "health": 50,
        "favorite": False,
        "environments": [{"environment": "development"}, {"environment": "production"}],
        "members": 0,
        "version": 1,
        "potentiallyStaleCount": 0,
        "activeCount": 1,
        "staleCount": 1,
    }
    message = await error(
        await client.get("/api/admin/projects/nope/health-report", headers=ADMIN),
        404,
        "NotFoundError",
    )
    assert "nope" in message


async def test_insights(client: Client, app: web.Application) -> None:
    await flag(client, "x", type="experiment")
    await switch(client, "x", "production")
    await caught_up(app)
    body = await ok(await client.get(f"{PROJECT}/insights", headers=ADMIN))
    assert body["featureTypeCounts"] == [{"type": "experiment", "count": 1}]
    assert body["health"] == {
        "activeCount": 1,
        "potentiallyStaleCount": 0,
        "staleCount": 0,
        "rating": 100,
    }
    assert body["leadTime"]["features"] == [
        {"name": "x", "timeToProduction": await exact_days(app, "x")}
    ]
    assert body["members"] == {"currentMembers": 0, "change": 0}
    await error(
        await client.get("/api/admin/projects/nope/insights", headers=ADMIN), 404, "NotFoundError"
    )


async def test_insight_is_read_by_any_admin_api_principal(client: Client) -> None:
    viewer = as_principal(auth.READ)
    for path in ("health-report", "dora", "insights"):
        await ok(await client.get(f"{PROJECT}/{path}", headers=viewer))
        await error(
            await client.get(f"{PROJECT}/{path}", headers=as_principal()), 403, "NoAccessError"
        )
