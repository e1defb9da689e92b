"""POST /api/admin/playground and /advanced: every flag of some projects evaluated for a context
by Unleash's engine, in Unleash's shape, with each strategy's, constraint's and segment's
result; its answers (isEnabled, variant) equal the official Python SDK's for the same context,
for random flags and contexts; the limits of a request; reads only."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from UnleashClient.cache import FileCache
from UnleashClient.clients.unleash_client import UnleashClient

from service.appkeys import POOL
from tests.clientapi import SPEC, auth, rich_flags, strategy, switch, token
from tests.factories import ADMIN, api_token, flag, ok

if TYPE_CHECKING:
    from pathlib import Path

    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

PLAYGROUND = "/api/admin/playground"
ADVANCED = "/api/admin/playground/advanced"
APP = "web"
ENVIRONMENT = "development"


async def play(client: Client, context: dict[str, Any], **body: Any) -> Any:
    payload = {"projects": "*", "environment": ENVIRONMENT, "context": context, **body}
    return await ok(await client.post(PLAYGROUND, json=payload, headers=ADMIN), 200)


def by_name(body: Any) -> dict[str, Any]:
    return {f["name"]: f for f in body["features"]}


async def test_each_strategy_constraint_and_segment_has_its_result(client: Client) -> None:
    made = await rich_flags(client)
    off = await strategy(
        client, "checkout", {"name": "userWithId", "parameters": {"userIds": "x"}, "disabled": True}
    )
    context = {"appName": APP, "userId": "vip-1", "region": "eu"}
    body = await play(client, context)
    assert body["input"] == {"projects": "*", "environment": ENVIRONMENT, "context": context}
    features = by_name(body)
    assert list(features) == ["banner", "checkout", "dormant", "parent", "tagged"]
    checkout = features["checkout"]
    rollout, user_ids, disabled = checkout["strategies"]["data"]
    assert rollout["constraints"] == [
        {
            "contextName": "appName",
            "operator": "NOT_IN",
            "values": ["legacy"],
            "inverted": False,
            "caseInsensitive": False,
            "result": True,
        }
    ]
    assert rollout["segments"][0]["id"] == made["segment"]
    assert rollout["segments"][0]["result"] is True
    assert rollout["result"]["evaluationStatus"] == "complete"
    assert rollout["result"]["variant"]["name"] in {"red", "blue"}
    assert user_ids["result"] == {"enabled": True, "evaluationStatus": "complete"}
    assert disabled["id"] == off["id"]
    assert disabled["result"] == {"enabled": "unknown", "evaluationStatus": "unevaluated"}
    assert disabled["links"] == {
        "edit": "/projects/default/features/checkout/strategies/edit"
        f"?environmentId={ENVIRONMENT}&strategyId={off['id']}"
    }
    assert checkout["strategies"]["result"] is True
    assert checkout["isEnabled"] is True
    assert checkout["isEnabledInCurrentEnvironment"] is True
    assert checkout["hasUnsatisfiedDependency"] is False
    assert features["dormant"] == {
        "name": "dormant",
        "projectId": "default",
        "strategies": {"result": False, "data": []},
        "isEnabledInCurrentEnvironment": False,
        "isEnabled": False,
        "hasUnsatisfiedDependency": False,
        "variant": {"name": "disabled", "enabled": False, "feature_enabled": False},
        "variants": [],
    }
    banner = features["banner"]
    assert banner["variant"]["name"] in {"wide", "narrow"}
    assert [v["name"] for v in banner["variants"]] == ["narrow", "wide"]  # stored by name

    # legacy: the rollout's constraint fails, and outside the segment's regions
    legacy = by_name(await play(client, {"appName": "legacy", "userId": "u-1", "region": "asia"}))
    rollout = legacy["checkout"]["strategies"]["data"][0]
    assert rollout["result"]["enabled"] is False
    assert rollout["constraints"][0]["result"] is False
    assert rollout["segments"][0]["result"] is False
    assert legacy["checkout"]["strategies"]["result"] == "unknown"  # only the off one may
    assert legacy["checkout"]["isEnabled"] is False


async def test_an_unsatisfied_dependency_is_shown(client: Client) -> None:
    await rich_flags(client)
    await switch(client, "parent", on=False)
    checkout = by_name(await play(client, {"appName": APP, "userId": "vip-1"}))["checkout"]
    assert checkout["hasUnsatisfiedDependency"] is True
    assert checkout["isEnabled"] is False
    assert checkout["strategies"]["result"] is True


async def test_a_custom_strategy_is_unknown_when_its_constraints_hold(client: Client) -> None:
    definition = {"name": "tenant", "parameters": []}
    await ok(await client.post("/api/admin/strategies", json=definition, headers=ADMIN), 201)
    await flag(client, "custom")
    constraint = {"contextName": "region", "operator": "IN", "values": ["eu"]}
    await strategy(client, "custom", {"name": "tenant", "constraints": [constraint]})
    await switch(client, "custom")
    eu = by_name(await play(client, {"appName": APP, "region": "eu"}))["custom"]
    assert eu["strategies"]["data"][0]["result"] == {
        "enabled": "unknown",
        "evaluationStatus": "incomplete",
    }
    assert eu["strategies"]["result"] == "unknown"
    assert eu["isEnabled"] is False  # as an SDK without the strategy answers
    us = by_name(await play(client, {"appName": APP, "region": "us"}))["custom"]
    assert us["strategies"]["data"][0]["result"]["enabled"] is False


async def test_projects_and_environments_narrow_the_flags(client: Client) -> None:
    await rich_flags(client)
    assert (await play(client, {"appName": APP}, projects=["nowhere"]))["features"] == []
    features = by_name(await play(client, {"appName": APP}, projects=["default"]))
    assert len(features) == 5
    # an environment nobody has: every flag off, without strategies
    unknown = await play(client, {"appName": APP}, environment="nowhere")
    assert {f["strategies"]["result"] for f in unknown["features"]} == {False}
    assert not any(f["strategies"]["data"] for f in unknown["features"])
    # no `projects`: every project, and the input as given
    body = await ok(
        await client.post(
            PLAYGROUND,
            json={"environment": ENVIRONMENT, "context": {"appName": APP}},
            headers=ADMIN,
        )
    )
    assert body["input"] == {"environment": ENVIRONMENT, "context": {"appName": APP}}
    assert len(body["features"]) == 5


async def test_the_advanced_playground_evaluates_every_combination(client: Client) -> None:
    await rich_flags(client)
    context = {"appName": "web,legacy", "userId": "vip-1,u-2", "properties": {"region": "eu"}}
    request = {"environments": [ENVIRONMENT, "production"], "context": context}
    body = await ok(await client.post(ADVANCED, json=request, headers=ADMIN))
    assert body["input"] == request
    checkout = {f["name"]: f for f in body["features"]}["checkout"]
    assert checkout["projectId"] == "default"
    assert set(checkout["environments"]) == {ENVIRONMENT, "production"}
    development = checkout["environments"][ENVIRONMENT]
    assert [c["context"] for c in development] == [
        {"userId": u, "properties": {"region": "eu"}, "appName": a}
        for a, u in itertools.product(["web", "legacy"], ["vip-1", "u-2"])
    ]
    for one in development:
        single = {"appName": one["context"]["appName"], "userId": one["context"]["userId"]}
        alone = by_name(await play(client, {**single, "properties": {"region": "eu"}}))
        expected = {**alone["checkout"], "environment": ENVIRONMENT, "context": one["context"]}
        assert one == expected
    assert not any(c["isEnabled"] for c in checkout["environments"]["production"])


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ({"environment": ENVIRONMENT, "context": {}}, "appName"),
        ({"environment": ENVIRONMENT, "context": {"appName": ""}}, "appName"),
        ({"environment": ENVIRONMENT}, "context"),
        ({"context": {"appName": APP}}, "environment"),
        ({"projects": "default", "environment": "x", "context": {"appName": APP}}, "projects"),
        ({"environment": "x", "context": {"appName": APP, "currentTime": "soon"}}, "currentTime"),
        ({"environment": "x", "context": {"appName": APP, "properties": "eu"}}, "properties"),
    ],
)
async def test_an_invalid_request_is_400(client: Client, body: Any, where: str) -> None:
    resp = await client.post(PLAYGROUND, json=body, headers=ADMIN)
    found = await ok(resp, 400)
    assert where in found["message"]
    assert set(found) >= {"id", "name", "message"}


async def test_the_advanced_playground_refuses_too_many_combinations(client: Client) -> None:
    await flag(client, "one")
    users = ",".join(f"u{i}" for i in range(200))
    apps = ",".join(f"a{i}" for i in range(151))  # 200 x 151 > 30,000 for one flag
    request = {"environments": [ENVIRONMENT], "context": {"appName": apps, "userId": users}}
    found = await ok(await client.post(ADVANCED, json=request, headers=ADMIN), 400)
    assert "30200 combinations exceeding 30000 limit" in found["message"]
    empty = {"environments": [], "context": {"appName": APP}}
    await ok(await client.post(ADVANCED, json=empty, headers=ADMIN), 400)


async def test_sdk_tokens_may_not_ask_and_nothing_is_written(client: Client, app: Any) -> None:
    await rich_flags(client)
    body = {"environment": ENVIRONMENT, "context": {"appName": APP}}
    secret = await token(client, "client")
    resp = await client.post(PLAYGROUND, json=body, headers=auth(secret))
    assert resp.status == 403
    assert (await client.post(PLAYGROUND, json=body)).status == 401
    async with app[POOL].acquire() as conn:
        before = await conn.fetchval("SELECT count(*) FROM events")
        await play(client, {"appName": APP})
        advanced = {**body, "environments": [ENVIRONMENT]}
        await ok(await client.post(ADVANCED, json=advanced, headers=ADMIN))
        assert await conn.fetchval("SELECT count(*) FROM events") == before


# --- the SDK's answers -----------------------------------------------------------------------

USERS = ["u1", "u2", "u3", "vip"]
REGIONS = ["eu", "us", "EU"]
ADDRESSES = ["10.0.0.1", "192.168.1.7"]

values = st.lists(st.sampled_from(["u1", "vip", "eu", "E", "1", "5", "web", "io"]), min_size=1)
string_constraint = st.fixed_dictionaries(
    {
        "contextName": st.sampled_from(["userId", "appName", "region"]),
        "operator": st.sampled_from(
            ["IN", "NOT_IN", "STR_CONTAINS", "STR_STARTS_WITH", "STR_ENDS_WITH"]
        ),
        "values": values.map(lambda v: sorted(set(v))),
        "inverted": st.booleans(),
        "caseInsensitive": st.booleans(),
    }
)
number_constraint = st.fixed_dictionaries(
    {
        "contextName": st.just("tier"),
        "operator": st.sampled_from(["NUM_GT", "NUM_LT", "NUM_EQ"]),
        "value": st.sampled_from(["1", "5", "7"]),
        "inverted": st.booleans(),
    }
)
constraints = st.lists(st.one_of(string_constraint, number_constraint), max_size=2)
weights = st.sampled_from(["default", "userId", "sessionId"])
strategy_variants = st.lists(
    st.fixed_dictionaries(
        {
            "name": st.sampled_from(["a", "b", "c"]),
            "weight": st.just(1000),
            "weightType": st.just("variable"),
            "stickiness": weights,
            "payload": st.just({"type": "string", "value": "p"}),
        }
    ),
    max_size=2,
    unique_by=lambda v: v["name"],
)
one_strategy = st.one_of(
    st.fixed_dictionaries({"name": st.just("default"), "constraints": constraints}),
    st.fixed_dictionaries(
        {
            "name": st.just("userWithId"),
            "parameters": st.lists(st.sampled_from(USERS), min_size=1).map(
                lambda u: {"userIds": ",".join(u)}
            ),
            "constraints": constraints,
        }
    ),
    st.fixed_dictionaries(
        {
            "name": st.just("flexibleRollout"),
            "parameters": st.fixed_dictionaries(
                {
                    "rollout": st.integers(0, 100).map(str),
                    "stickiness": weights,
                    "groupId": st.sampled_from(["g1", "g2"]),
                }
            ),
            "constraints": constraints,
            "variants": strategy_variants,
        }
    ),
    st.fixed_dictionaries(
        {
            "name": st.just("remoteAddress"),
            "parameters": st.sampled_from([*ADDRESSES, "10.0.0.0/8"]).map(lambda a: {"IPs": a}),
        }
    ),
)
flag_variants = st.lists(
    st.fixed_dictionaries(
        {
            "name": st.sampled_from(["x", "y", "z"]),
            "weight": st.just(1000),
            "weightType": st.just("variable"),
            "stickiness": weights,
            "payload": st.just({"type": "string", "value": "v"}),
        }
    ),
    max_size=3,
    unique_by=lambda v: v["name"],
)
flags = st.lists(
    st.fixed_dictionaries(
        {
            "on": st.booleans(),
            "strategies": st.lists(one_strategy, max_size=3),
            "disabled": st.lists(st.booleans(), min_size=3, max_size=3),
            "variants": flag_variants,
        }
    ),
    min_size=1,
    max_size=3,
)
contexts = st.lists(
    st.fixed_dictionaries(
        {
            # every stickiness field given: without one, SDK and playground draw at random
            "sessionId": st.text("abcdef0123", min_size=1, max_size=8),
            "remoteAddress": st.sampled_from(ADDRESSES),
            "userId": st.sampled_from(USERS),
        },
        optional={
            "properties": st.fixed_dictionaries(
                {},
                optional={
                    "region": st.sampled_from(REGIONS),
                    "tier": st.sampled_from(["1", "5", "10"]),
                },
            ),
        },
    ),
    min_size=1,
    max_size=4,
)
_made = itertools.count()


def sdk_for(features: Any, directory: Path) -> UnleashClient:
    """The official Python SDK with these client features, offline (nothing fetched)."""
    cache = FileCache(f"playground-{next(_made)}", directory=str(directory))
    cache.bootstrap_from_dict(features)
    unleash = UnleashClient(
        url="http://127.0.0.1:9",
        app_name=APP,
        environment=ENVIRONMENT,
        disable_metrics=True,
        disable_registration=True,
        cache=cache,
    )
    unleash.initialize_client(fetch_toggles=False)
    return unleash


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(configured=flags, asked=contexts)
async def test_the_answers_are_the_python_sdks(
    client: Client, tmp_path: Path, configured: list[dict[str, Any]], asked: list[dict[str, Any]]
) -> None:
    names = []
    for spec in configured:
        name = f"random-{next(_made)}"
        names.append(name)
        await flag(client, name)
        for s, off in zip(spec["strategies"], spec["disabled"], strict=False):
            await strategy(client, name, {**s, "disabled": off})
        if spec["variants"]:
            path = f"/api/admin/projects/default/features/{name}/environments/{ENVIRONMENT}"
            await ok(await client.put(f"{path}/variants", json=spec["variants"], headers=ADMIN))
        if spec["on"]:
            await switch(client, name)
    made = await api_token(client, "client", name=f"sdk-{next(_made)}", environment=ENVIRONMENT)
    secret = made["secret"]
    features = await ok(await client.get("/api/client/features", headers=auth(secret, **SPEC)))
    unleash = sdk_for(features, tmp_path)
    try:
        for context in asked:
            body = by_name(
                await play(client, {"appName": APP, "environment": ENVIRONMENT, **context})
            )
            for name in names:
                got = body[name]
                enabled = unleash.is_enabled(name, context)
                variant = unleash.get_variant(name, context)
                assert got["isEnabled"] is enabled, (name, context)
                shown = got["variant"]
                assert shown["name"] == variant["name"], (name, context)
                assert shown["enabled"] is variant["enabled"]
                assert shown.get("payload") == variant.get("payload")
                assert shown["feature_enabled"] is enabled
    finally:
        unleash.destroy()


async def test_a_kept_answer_goes_when_the_flags_change(client: Client) -> None:
    """The answers to a repeatable context are kept until the flags change."""
    await rich_flags(client)
    context = {"appName": APP, "userId": "vip-1", "sessionId": "s-1"}
    assert by_name(await play(client, context))["checkout"]["isEnabled"] is True
    assert by_name(await play(client, context))["checkout"]["isEnabled"] is True
    await switch(client, "checkout", on=False)
    assert by_name(await play(client, context))["checkout"]["isEnabled"] is False
