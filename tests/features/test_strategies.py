"""Strategies, environment switches and environment variants on a flag, through HTTP."""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING, Any

import pytest

from projections.verify import verify
from service import auth
from service.appkeys import POOL
from tests.conftest import as_principal
from tests.factories import ADMIN, FEATURES, create, error, event_count

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

DEV = f"{FEATURES}/f/environments/development"
ROLLOUT = {
    "name": "flexibleRollout",
    "title": "Half",
    "constraints": [{"contextName": "userId", "operator": "IN", "values": ["a", "b"]}],
    "parameters": {"rollout": "50", "stickiness": "default", "groupId": "f"},
    "variants": [
        {"name": "v1", "weight": 0, "weightType": "variable", "stickiness": "default"},
        {
            "name": "v2",
            "weight": 200,
            "weightType": "fix",
            "stickiness": "default",
            "payload": {"type": "json", "value": '{"a": 1}'},
        },
    ],
}


@pytest.fixture
async def flag(client: Client) -> dict[str, Any]:
    resp = await create(client, {"name": "f"})
    assert resp.status == 200
    body: dict[str, Any] = await resp.json()
    return body


def expected_strategy(strategy_id: str, sort_order: int = 0) -> dict[str, Any]:
    return {
        "id": strategy_id,
        "name": "flexibleRollout",
        "title": "Half",
        "disabled": False,
        "featureName": "f",
        "sortOrder": sort_order,
        "segments": [],
        "constraints": [
            {
                "contextName": "userId",
                "operator": "IN",
                "caseInsensitive": False,
                "inverted": False,
                "values": ["a", "b"],
                "value": None,
            }
        ],
        "variants": [
            {
                "name": "v1",
                "weight": 800,
                "weightType": "variable",
                "stickiness": "default",
                "payload": None,
            },
            {
                "name": "v2",
                "weight": 200,
                "weightType": "fix",
                "stickiness": "default",
                "payload": {"type": "json", "value": '{"a": 1}'},
            },
        ],
        "parameters": {"rollout": "50", "stickiness": "default", "groupId": "f"},
    }


@pytest.mark.usefixtures("flag")
async def test_add_list_update_remove_a_strategy(client: Client, app: web.Application) -> None:
    resp = await client.post(f"{DEV}/strategies", json=ROLLOUT, headers=ADMIN)
    assert resp.status == 200
    added = await resp.json()
    assert uuid.UUID(added["id"])
    assert added == expected_strategy(added["id"])
    listed = await (await client.get(f"{DEV}/strategies", headers=ADMIN)).json()
    assert listed == [added]

    second = await (
        await client.post(f"{DEV}/strategies", json={"name": "default"}, headers=ADMIN)
    ).json()
    assert second["sortOrder"] == 1
    assert (second["constraints"], second["parameters"], second["variants"]) == ([], {}, [])

    changed = {"name": "default", "disabled": True}
    resp = await client.put(f"{DEV}/strategies/{added['id']}", json=changed, headers=ADMIN)
    assert resp.status == 200
    updated = await resp.json()
    assert updated == {
        "id": added["id"],
        "name": "default",
        "title": None,
        "disabled": True,
        "featureName": "f",
        "sortOrder": 0,
        "segments": [],
        "constraints": [],
        "variants": [],
        "parameters": {},
    }
    assert (await client.delete(f"{DEV}/strategies/{added['id']}", headers=ADMIN)).status == 200
    await error(
        await client.delete(f"{DEV}/strategies/{added['id']}", headers=ADMIN), 404, "NotFoundError"
    )
    await error(
        await client.put(f"{DEV}/strategies/nope", json=changed, headers=ADMIN),
        404,
        "NotFoundError",
    )
    listed = await (await client.get(f"{DEV}/strategies", headers=ADMIN)).json()
    assert listed == [second]
    types = ("StrategyAdded", "StrategyUpdated", "StrategyRemoved")
    assert [await event_count(app, t) for t in types] == [2, 1, 1]
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok


async def test_the_feature_shows_switches_and_strategies(
    client: Client, flag: dict[str, Any]
) -> None:
    added = await (await client.post(f"{DEV}/strategies", json=ROLLOUT, headers=ADMIN)).json()
    assert (await client.post(f"{DEV}/on", headers=ADMIN)).status == 200
    assert (await client.post(f"{DEV}/on", headers=ADMIN)).status == 200  # no second event
    body = await (await client.get(f"{FEATURES}/f", headers=ADMIN)).json()
    dev, prod = body["environments"]
    assert body["enabled"] is True
    assert dev == flag["environments"][0] | {
        "enabled": True,
        "strategies": [added],
        "hasStrategies": True,
        "hasEnabledStrategies": True,
    }
    assert prod == flag["environments"][1]
    assert (body["strategies"], body["variants"]) == ([], [])
    assert (await client.post(f"{DEV}/off", headers=ADMIN)).status == 200
    body = await (await client.get(f"{FEATURES}/f", headers=ADMIN)).json()
    assert body["enabled"] is False
    assert body["environments"][0]["enabled"] is False


@pytest.mark.usefixtures("flag")
@pytest.mark.parametrize(
    ("strategy", "message"),
    [
        ({}, "Object missing required field `name`"),
        (
            {
                "name": "default",
                "constraints": [{"contextName": "x", "operator": "LIKE", "values": ["a"]}],
            },
            "Invalid enum value 'LIKE' - at `$.constraints[0].operator`",
        ),
        (
            {"name": "default", "constraints": [{"contextName": "x", "operator": "IN"}]},
            "IN needs a non-empty `values` list - at `$.constraints[0]`",
        ),
        (
            {
                "name": "default",
                "constraints": [{"contextName": "x", "operator": "NUM_GT", "value": "ten"}],
            },
            "NUM_GT needs a number - at `$.constraints[0].value`",
        ),
        (
            {
                "name": "default",
                "constraints": [{"contextName": "x", "operator": "DATE_AFTER", "value": "soon"}],
            },
            "DATE_AFTER needs an ISO 8601 date",
        ),
        (
            {
                "name": "default",
                "constraints": [{"contextName": "x", "operator": "SEMVER_EQ", "value": "1.2"}],
            },
            "SEMVER_EQ needs a semantic version",
        ),
        (
            {"name": "default", "parameters": {"rollout": 50}},
            "Expected `str`, got `int` - at `$.parameters[...]`",
        ),
        (
            {
                "name": "default",
                "variants": [
                    {"name": "v", "weight": 1001, "weightType": "fix", "stickiness": "default"}
                ],
            },
            "Expected `int` <= 1000 - at `$.variants[0].weight`",
        ),
        (
            {
                "name": "default",
                "variants": [
                    {"name": "v", "weight": 10, "weightType": "heavy", "stickiness": "default"}
                ],
            },
            "Invalid enum value 'heavy' - at `$.variants[0].weightType`",
        ),
        (
            {"name": "default", "variants": [{"name": "v", "weight": 10, "weightType": "fix"}]},
            "Object missing required field `stickiness` - at `$.variants[0]`",
        ),
        (
            {
                "name": "default",
                "variants": [
                    {
                        "name": "v",
                        "weight": 1,
                        "weightType": "fix",
                        "stickiness": "d",
                        "payload": {"type": "xml", "value": "<a/>"},
                    }
                ],
            },
            "Invalid enum value 'xml' - at `$.variants[0].payload.type`",
        ),
        (
            {
                "name": "default",
                "variants": [
                    {"name": "v", "weight": 600, "weightType": "fix", "stickiness": "d"},
                    {"name": "w", "weight": 600, "weightType": "fix", "stickiness": "d"},
                ],
            },
            "Fixed variant weights total 1200, more than 1000 - at `$.variants`",
        ),
        ({"name": "default", "segments": [99]}, "Segment 99 does not exist - at `$.segments`"),
    ],
)
async def test_bad_strategies_are_400_and_write_nothing(
    client: Client, app: web.Application, strategy: dict[str, Any], message: str
) -> None:
    before = await event_count(app)
    resp = await client.post(f"{DEV}/strategies", json=strategy, headers=ADMIN)
    assert (await error(resp, 400, "ValidationError")).startswith(message)
    assert await event_count(app) == before


@pytest.mark.usefixtures("flag")
async def test_strategies_need_an_existing_flag_and_project_environment(client: Client) -> None:
    other = f"{FEATURES}/nope/environments/development/strategies"
    await error(
        await client.post(other, json={"name": "default"}, headers=ADMIN), 404, "NotFoundError"
    )
    staging = f"{FEATURES}/f/environments/staging/strategies"
    await error(
        await client.post(staging, json={"name": "default"}, headers=ADMIN), 404, "NotFoundError"
    )
    await client.delete(f"{FEATURES}/f", headers=ADMIN)
    await error(
        await client.post(f"{DEV}/strategies", json={"name": "default"}, headers=ADMIN),
        404,
        "NotFoundError",
    )


@pytest.mark.usefixtures("flag")
async def test_configuration_needs_update_feature(client: Client) -> None:
    reader = as_principal(auth.READ)
    for method, path in (
        ("POST", f"{DEV}/strategies"),
        ("POST", f"{DEV}/on"),
        ("PUT", f"{DEV}/variants"),
    ):
        resp = await client.request(
            method, path, data="x", headers={**reader, "Content-Type": "text/plain"}
        )
        await error(resp, 403, "NoAccessError")
    assert (await client.get(f"{DEV}/strategies", headers=reader)).status == 200


@pytest.mark.usefixtures("flag")
async def test_environment_variants_spread_to_1000(client: Client, app: web.Application) -> None:
    variants = [
        {"name": "a", "weight": 0, "weightType": "variable", "stickiness": "default"},
        {"name": "b", "weight": 100, "weightType": "fix", "stickiness": "userId"},
        {
            "name": "c",
            "weightType": "variable",
            "overrides": [{"contextName": "userId", "values": ["1"]}],
        },
        {"name": "d"},
    ]
    resp = await client.put(f"{DEV}/variants", json=variants, headers=ADMIN)
    assert resp.status == 200
    body = await resp.json()
    assert [(v["name"], v["weight"]) for v in body["variants"]] == [
        ("a", 300),
        ("b", 100),
        ("c", 300),
        ("d", 300),
    ]
    assert sum(v["weight"] for v in body["variants"]) == 1000
    assert body["variants"][2]["overrides"] == [{"contextName": "userId", "values": ["1"]}]
    feature = await (await client.get(f"{FEATURES}/f", headers=ADMIN)).json()
    assert feature["environments"][0]["variants"] == body["variants"]
    assert feature["environments"][0]["variantCount"] == 4
    odd = [{"name": n} for n in ("x", "y", "z")]
    spread = await (await client.put(f"{DEV}/variants", json=odd, headers=ADMIN)).json()
    assert [v["weight"] for v in spread["variants"]] == [334, 333, 333]
    for bad, message in [
        (
            [
                {"name": "a", "weight": 700, "weightType": "fix"},
                {"name": "b", "weight": 400, "weightType": "fix"},
            ],
            "Fixed variant weights total 1100",
        ),
        ([{"name": "a", "weight": 700, "weightType": "fix"}], "Variant weights must total 1000"),
        ([{"name": "a"}, {"name": "a"}], "Variant names must be unique"),
        ({"name": "a"}, "Expected `array`, got `object`"),
    ]:
        resp = await client.put(f"{DEV}/variants", json=bad, headers=ADMIN)
        assert (await error(resp, 400, "ValidationError")).startswith(message)
    assert (await client.put(f"{DEV}/variants", json=[], headers=ADMIN)).status == 200
    assert await event_count(app, "EnvironmentVariantsSet") == 3


@pytest.mark.usefixtures("flag")
async def test_concurrent_strategy_adds_all_land(client: Client, app: web.Application) -> None:
    responses = await asyncio.gather(
        *(
            client.post(f"{DEV}/strategies", json={"name": "default"}, headers=ADMIN)
            for _ in range(20)
        )
    )
    assert [r.status for r in responses] == [200] * 20
    listed = await (await client.get(f"{DEV}/strategies", headers=ADMIN)).json()
    assert sorted(s["sortOrder"] for s in listed) == list(range(20))
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok


@pytest.mark.usefixtures("flag")
async def test_a_bad_body_is_400_before_a_bad_strategy_id(client: Client) -> None:
    resp = await client.put(f"{DEV}/strategies/not-a-uuid", json={}, headers=ADMIN)
    await error(resp, 400, "ValidationError")


@pytest.mark.usefixtures("flag")
@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"type": "json", "value": "{not json"}, "A json payload needs valid JSON"),
        ({"type": "number", "value": "abc"}, "A number payload needs a number"),
        ({"type": "number", "value": "nan"}, "A number payload needs a number"),
    ],
)
async def test_payload_values_fit_their_type(
    client: Client, payload: dict[str, str], message: str
) -> None:
    variant = {
        "name": "v",
        "weight": 0,
        "weightType": "variable",
        "stickiness": "d",
        "payload": payload,
    }
    resp = await client.post(
        f"{DEV}/strategies", json={"name": "default", "variants": [variant]}, headers=ADMIN
    )
    assert (await error(resp, 400, "ValidationError")).startswith(message)
    resp = await client.put(f"{DEV}/variants", json=[variant], headers=ADMIN)
    assert (await error(resp, 400, "ValidationError")).startswith(message)
