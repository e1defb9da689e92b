"""A project environment's default strategy (what switching a flag on there adds when it has no
strategy that runs), and switching many flags on or off in one environment at once."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eventlog.events.projects import DefaultStrategyData
from projections.verify import verify
from service import auth
from service.appkeys import POOL
from service.features import domain
from tests.conftest import as_principal
from tests.factories import ADMIN, error, event_count, flag, ok

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

PROJECT = "/api/admin/projects/default"
DEFAULT = f"{PROJECT}/environments/development/default-strategy"
BULK = f"{PROJECT}/bulk_features/environments/development"
HALF = {
    "name": "flexibleRollout",
    "title": "Half",
    "constraints": [{"contextName": "userId", "operator": "IN", "values": ["1"]}],
    "parameters": {"rollout": "50", "stickiness": "default", "groupId": ""},
}
VIEWER = as_principal(auth.READ)


async def strategies(client: Client, name: str, environment: str = "development") -> Any:
    url = f"{PROJECT}/features/{name}/environments/{environment}/strategies"
    return await ok(await client.get(url, headers=ADMIN))


async def test_set_a_default_strategy(client: Client, app: web.Application) -> None:
    body = await ok(await client.post(DEFAULT, json=HALF, headers=ADMIN))
    assert body == {
        "name": "flexibleRollout",
        "title": "Half",
        "disabled": False,
        "constraints": [
            {
                "contextName": "userId",
                "operator": "IN",
                "caseInsensitive": False,
                "inverted": False,
                "values": ["1"],
                "value": None,
            }
        ],
        "parameters": {"rollout": "50", "stickiness": "default", "groupId": ""},
        "variants": [],
        "segments": [],
    }
    assert await event_count(app, "DefaultStrategySet") == 1
    overview = await ok(await client.get(f"{PROJECT}/overview", headers=ADMIN))
    assert overview["environments"] == [
        {"environment": "development", "defaultStrategy": body},
        {"environment": "production"},
    ]
    # Switched on without a strategy, a flag gets it there, its groupId "" the flag's name.
    await flag(client, "half")
    await ok(
        await client.post(f"{PROJECT}/features/half/environments/development/on", headers=ADMIN)
    )
    [added] = await strategies(client, "half")
    assert (added["title"], added["parameters"], added["constraints"]) == (
        "Half",
        {"rollout": "50", "stickiness": "default", "groupId": "half"},
        body["constraints"],
    )
    # Elsewhere the built-in default stays.
    await ok(
        await client.post(f"{PROJECT}/features/half/environments/production/on", headers=ADMIN)
    )
    [built_in] = await strategies(client, "half", "production")
    assert built_in["parameters"] == {"rollout": "100", "stickiness": "default", "groupId": "half"}
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok
        kind = await conn.fetchval(
            "SELECT event_kind(type, data) FROM events WHERE type = 'DefaultStrategySet'"
        )
    assert kind == "default-strategy-updated"


async def test_default_strategies_are_checked(client: Client, app: web.Application) -> None:
    message = await error(
        await client.post(DEFAULT, json={"name": "default"}, headers=ADMIN), 400, "ValidationError"
    )
    assert message == (
        'Only "flexibleRollout" strategy can be used as a default strategy for an environment'
    )
    bad: object
    for bad in ({}, {"name": "flexibleRollout", "parameters": {"rollout": 5}}, []):
        await error(await client.post(DEFAULT, json=bad, headers=ADMIN), 400, "ValidationError")
    segment = {"name": "flexibleRollout", "segments": [99]}
    await error(await client.post(DEFAULT, json=segment, headers=ADMIN), 400, "ValidationError")
    rollout = {"name": "flexibleRollout"}
    nowhere = "/api/admin/projects/nope/environments/development/default-strategy"
    await error(await client.post(nowhere, json=rollout, headers=ADMIN), 404, "NotFoundError")
    unknown = f"{PROJECT}/environments/nope/default-strategy"
    await error(await client.post(unknown, json=rollout, headers=ADMIN), 404, "NotFoundError")
    await error(await client.post(DEFAULT, json=rollout, headers=VIEWER), 403, "NoAccessError")
    assert await event_count(app, "DefaultStrategySet") == 0


@given(group_id=st.one_of(st.none(), st.text(max_size=5)))
@settings(max_examples=50, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_default_groupid_follows_unleash(group_id: str | None) -> None:
    parameters = {"rollout": "20"} | ({} if group_id is None else {"groupId": group_id})
    default = DefaultStrategyData(
        name="flexibleRollout",
        title=None,
        disabled=False,
        constraints=[],
        parameters=parameters,
        variants=[],
        segments=[],
    )
    made = domain.default_strategy("flag", "id", 3, default)
    expected = "flag" if group_id == "" else group_id or ""
    assert made.parameters == {"rollout": "20", "groupId": expected}
    assert made.sort_order == 3


async def test_bulk_on_and_off(client: Client, app: web.Application) -> None:
    await ok(await client.post(DEFAULT, json=HALF, headers=ADMIN))
    for name in ("b-one", "b-two"):
        await flag(client, name)
    body = {"features": ["b-two", "b-one", "b-two"]}
    assert (await client.post(f"{BULK}/on", json=body, headers=ADMIN)).status == 200
    for name in ("b-one", "b-two"):
        [added] = await strategies(client, name)
        assert added["parameters"]["groupId"] == name
        assert added["parameters"]["rollout"] == "50"
    assert await event_count(app, "FeatureEnvironmentEnabled") == 2
    assert (await client.post(f"{BULK}/on", json=body, headers=ADMIN)).status == 200
    assert await event_count(app, "FeatureEnvironmentEnabled") == 2  # already on
    assert (await client.post(f"{BULK}/off", json=body, headers=ADMIN)).status == 200
    assert await event_count(app, "FeatureEnvironmentDisabled") == 2
    assert (await client.post(f"{BULK}/on", json={"features": []}, headers=ADMIN)).status == 200
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok


async def test_bulk_is_all_or_nothing(client: Client, app: web.Application) -> None:
    await flag(client, "b-real")
    before = await event_count(app)
    body = {"features": ["b-real", "b-missing"]}
    message = await error(
        await client.post(f"{BULK}/on", json=body, headers=ADMIN), 404, "NotFoundError"
    )
    assert message == 'There\'s no feature named "b-missing" in project "default".'
    assert await event_count(app) == before  # b-real was not switched on either
    unknown = f"{PROJECT}/bulk_features/environments/nope/on"
    await error(
        await client.post(unknown, json={"features": ["b-real"]}, headers=ADMIN),
        404,
        "NotFoundError",
    )
    for bad in ({}, {"features": "b-real"}, {"features": [1]}):
        await error(
            await client.post(f"{BULK}/off", json=bad, headers=ADMIN), 400, "ValidationError"
        )
    resp = await client.post(
        f"{BULK}/on?shouldActivateDisabledStrategies=x", json=body, headers=ADMIN
    )
    await error(resp, 400, "ValidationError")
    resp = await client.post(f"{BULK}/on", json={"features": ["b-real"]}, headers=VIEWER)
    await error(resp, 403, "NoAccessError")
    assert await event_count(app) == before
