"""/api/frontend: the flags enabled for a context, evaluated by Unleash's engine, as Unleash's
frontend API answers them (GET with the context in the query, POST in the body); tokens,
ETags, CORS, the limits of a context, and what browser SDKs send besides."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import msgspec
import pytest
from yggdrasil_engine.engine import UnleashEngine

from eventlog.errors import ConfigError
from service.app import create_app
from service.client.responses import Constraint, Strategy
from service.frontend.context import Context
from service.frontend.engine import Reads
from service.settings import Settings, load_settings
from tests import conformance
from tests.clientapi import PROJECT, SPEC, auth, env_path, rich_flags, strategy, switch, token
from tests.conftest import AiohttpClient, ServiceTestServer
from tests.factories import ADMIN, ADMIN_TOKEN, flag, ok, seed_database, settings_for

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

FRONTEND = "/api/frontend"


async def get(client: Client, secret: str, query: dict[str, str] | str = "", **headers: str) -> Any:
    params = query if isinstance(query, str) else urlencode(query)
    resp = await client.get(f"{FRONTEND}?{params}", headers=auth(secret, **headers))
    return await ok(resp, 200)


async def post(client: Client, secret: str, context: dict[str, Any]) -> Any:
    resp = await client.post(FRONTEND, json={"context": context}, headers=auth(secret))
    return await ok(resp, 200)


def as_query(context: dict[str, Any]) -> dict[str, str]:
    """A context as the query carries it: root fields plain, properties as properties[x]."""
    query = {k: v for k, v in context.items() if k != "properties"}
    query |= {f"properties[{k}]": v for k, v in context.get("properties", {}).items()}
    return query


def names(body: Any) -> list[str]:
    return [t["name"] for t in body["toggles"]]


NO_VARIANT = {"name": "disabled", "enabled": False, "feature_enabled": True, "featureEnabled": True}


async def test_the_answer_is_unleashs_shape(client: Client) -> None:
    await rich_flags(client)
    secret = await token(client, "frontend")
    # vip-1 outside the segment's regions: the rollout (with its variants) does not apply,
    # userWithId does; the flag has no variants of its own; its parent is on
    body = await get(client, secret, {"userId": "vip-1", "sessionId": "s", "appName": "web"})
    banner = body["toggles"][0]
    assert banner["name"] == "banner"
    assert banner["variant"]["name"] in {"wide", "narrow"}
    assert body == {
        "toggles": [
            banner,
            {"name": "checkout", "enabled": True, "impressionData": True, "variant": NO_VARIANT},
            {"name": "parent", "enabled": True, "impressionData": False, "variant": NO_VARIANT},
        ]
    }


async def test_get_and_post_give_the_same_answers(client: Client) -> None:
    await rich_flags(client)
    secret = await token(client, "frontend")
    contexts: list[dict[str, Any]] = [
        {},
        {"sessionId": "s-1"},
        {"userId": "vip-2", "sessionId": "s-2", "appName": "legacy"},
        {"userId": "u-3", "sessionId": "s-3", "properties": {"region": "eu"}},
        {"userId": "u-4", "sessionId": "s-4", "region": "us", "tenant": "t"},  # plain: properties
        {"userId": "u-5", "sessionId": "s-5", "remoteAddress": "10.1.2.3", "environment": "x"},
    ]
    for context in contexts:
        by_post = await post(client, secret, context)
        if "sessionId" in context:  # else each answer draws its own session, as in Unleash
            assert await get(client, secret, as_query(context)) == by_post, context


async def test_the_answers_are_the_engines_for_50_contexts(client: Client) -> None:
    """The same flags, read by an SDK's way (the client API's body fed to the engine through
    its public interface) and asked about each flag, answer exactly as the frontend API."""
    await rich_flags(client)
    frontend = await token(client, "frontend")
    sdk = await token(client, "client")
    resp = await client.get("/api/client/features", headers=auth(sdk, **SPEC))
    features = await ok(resp, 200)
    engine = UnleashEngine()
    engine.take_state(json.dumps(features))
    seen_checkout = set()
    for i in range(50):
        context: dict[str, Any] = {
            "userId": f"user-{i}",
            "sessionId": f"session-{i}",
            "appName": ("web", "legacy", "ios")[i % 3],
            "properties": {"region": ("eu", "us", "asia")[i % 3 - 1], "noise": "x" * i},
        }
        if i % 10 == 0:
            context["userId"] = "vip-2"
        answer = await (get if i % 2 else post)(
            client, frontend, as_query(context) if i % 2 else context
        )
        expected = []
        for feature in features["features"]:
            asked = {**context, "remoteAddress": "127.0.0.1"}
            if not engine.check_enabled(feature["name"], asked).is_enabled:
                continue
            variant = engine.check_variant(feature["name"], asked).variant
            shown = {"name": variant.name, "enabled": variant.enabled}
            if variant.payload:
                shown["payload"] = variant.payload
            expected.append(
                {
                    "name": feature["name"],
                    "enabled": True,
                    "impressionData": feature["impressionData"],
                    "variant": shown | {"feature_enabled": True, "featureEnabled": True},
                }
            )
        assert answer == {"toggles": expected}, context
        if "checkout" in names(answer):
            seen_checkout.add(answer["toggles"][1]["variant"]["name"])
    # the rollout splits users: some have it, with either strategy variant, some do not
    assert seen_checkout >= {"red", "blue"}


async def test_the_rollout_answers_differently_for_different_users(client: Client) -> None:
    await rich_flags(client)
    secret = await token(client, "frontend")
    having = [
        "checkout"
        in names(
            await get(
                client, secret, {"userId": f"u{i}", "sessionId": "s", "properties[region]": "eu"}
            )
        )
        for i in range(40)
    ]
    assert 5 < sum(having) < 35


async def test_a_child_is_off_while_its_parent_is(client: Client) -> None:
    await rich_flags(client)
    secret = await token(client, "frontend")
    vip = {"userId": "vip-1", "sessionId": "s"}
    assert "checkout" in names(await get(client, secret, vip))
    await switch(client, "parent", on=False)
    assert names(await get(client, secret, vip)) == ["banner"]


async def test_variants_carry_their_payload(client: Client) -> None:
    await rich_flags(client)
    secret = await token(client, "frontend")
    variants = {}
    for i in range(30):
        body = await get(client, secret, {"userId": f"u{i}", "sessionId": "s"})
        variant = body["toggles"][0]["variant"]
        variants[variant["name"]] = variant
    assert variants == {
        "wide": {
            "name": "wide",
            "enabled": True,
            "payload": {"type": "json", "value": '{"w": 1}'},
            "feature_enabled": True,
            "featureEnabled": True,
        },
        "narrow": {
            "name": "narrow",
            "enabled": True,
            "feature_enabled": True,
            "featureEnabled": True,
        },
    }
    # strategy variants (with their payload) come before the flag's
    red = None
    for i in range(40):
        body = await get(client, secret, {"userId": f"u{i}", "sessionId": "s", "region": "us"})
        found = [t["variant"] for t in body["toggles"] if t["name"] == "checkout"]
        if found and found[0]["name"] == "red":
            red = found[0]
            break
    assert red == {
        "name": "red",
        "enabled": True,
        "payload": {"type": "string", "value": "r"},
        "feature_enabled": True,
        "featureEnabled": True,
    }


async def test_which_tokens_may_call(client: Client) -> None:
    """Frontend tokens, and admin tokens (which read the default environment), as Unleash."""
    default = {"name": "default", "type": "production"}
    await ok(await client.post("/api/admin/environments", json=default, headers=ADMIN))
    await ok(
        await client.post(f"{PROJECT}/environments", json={"environment": "default"}, headers=ADMIN)
    )
    await flag(client, "everywhere")
    for environment in ("development", "default"):
        await strategy(client, "everywhere", {"name": "default"}, environment)
        await switch(client, "everywhere", environment=environment)
    await flag(client, "development-only")
    await strategy(client, "development-only", {"name": "default"})
    await switch(client, "development-only")
    assert (await client.get(FRONTEND)).status == 401
    nobody = await ok(await client.get(FRONTEND, headers=auth("*:development.nope")), 401)
    assert nobody["name"] == "AuthenticationRequired"
    sdk = await ok(await client.get(FRONTEND, headers=auth(await token(client))), 403)
    assert sdk["name"] == "NoAccessError"
    frontend = await token(client, "frontend")
    assert names(await get(client, frontend)) == ["development-only", "everywhere"]
    assert names(await get(client, ADMIN_TOKEN)) == ["everywhere"]
    # the frontend token reads nothing else
    assert (await client.get("/api/client/features", headers=auth(frontend))).status == 403
    assert (await client.get("/api/admin/projects", headers=auth(frontend))).status == 403


async def test_a_token_sees_only_its_projects(client: Client) -> None:
    await ok(
        await client.post(
            "/api/admin/projects", json={"id": "other", "name": "Other"}, headers=ADMIN
        )
    )
    for name, project in (("mine", "default"), ("theirs", "other")):
        await flag(client, name, project=project)
        path = f"/api/admin/projects/{project}/features/{name}/environments/development"
        await ok(await client.post(f"{path}/strategies", json={"name": "default"}, headers=ADMIN))
        await ok(await client.post(f"{path}/on", headers=ADMIN))
    every = await token(client, "frontend")
    assert names(await get(client, every)) == ["mine", "theirs"]
    other = await token(client, "frontend", projects=["other"])
    assert names(await get(client, other)) == ["theirs"]
    default = await token(client, "frontend", projects=["default"])
    assert names(await get(client, default)) == ["mine"]


async def test_etag_and_304_until_the_answer_changes(client: Client) -> None:
    await rich_flags(client)
    secret = await token(client, "frontend")
    context = {"userId": "vip-1", "sessionId": "s"}
    query = f"{FRONTEND}?{urlencode(context)}"
    first = await client.get(query, headers=auth(secret))
    etag = first.headers["ETag"]
    assert etag.startswith('"')
    assert first.headers["Cache-Control"] == "no-cache"
    for sent in (etag, f"W/{etag}", f'"other", {etag}'):
        same = await client.get(query, headers=auth(secret, **{"If-None-Match": sent}))
        assert same.status == 304
        assert same.headers["ETag"] == etag
        assert await same.read() == b""
    by_post = await client.post(
        FRONTEND, json={"context": context}, headers=auth(secret, **{"If-None-Match": etag})
    )
    assert by_post.status == 304
    # another context with another answer: another ETag
    other = await client.get(f"{FRONTEND}?userId=nobody&sessionId=s", headers=auth(secret))
    assert other.headers["ETag"] != etag
    # a change that alters the answer: 200 with a new ETag
    await switch(client, "banner", on=False)
    moved = await client.get(query, headers=auth(secret, **{"If-None-Match": etag}))
    assert moved.status == 200
    assert moved.headers["ETag"] != etag
    assert "banner" not in names(await moved.json())


async def test_cors_by_default_lets_every_origin_call(client: Client) -> None:
    secret = await token(client, "frontend")
    origin = {"Origin": "https://app.example.com"}
    resp = await client.get(FRONTEND, headers=auth(secret, **origin))
    assert resp.status == 200
    assert resp.headers["Access-Control-Allow-Origin"] == "*"
    assert resp.headers["Access-Control-Expose-Headers"] == "ETag"
    assert "Origin" in resp.headers["Vary"]
    # a preflight carries no token: answered before authentication
    asked = "authorization, content-type, if-none-match, unleash-appname"
    preflight = await client.options(
        FRONTEND,
        headers={
            **origin,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": asked,
        },
    )
    assert preflight.status == 204
    assert await preflight.read() == b""
    assert preflight.headers["Access-Control-Allow-Origin"] == "*"
    assert preflight.headers["Access-Control-Allow-Headers"] == asked
    assert preflight.headers["Access-Control-Allow-Methods"] == "GET, POST"
    assert preflight.headers["Access-Control-Max-Age"] == "86400"
    for path in ("/api/frontend/client/metrics", "/api/frontend/client/register"):
        assert (await client.options(path, headers=origin)).status == 204
    # an error answer is readable by the page too
    refused = await client.get(FRONTEND, headers=origin)
    assert refused.status == 401
    assert refused.headers["Access-Control-Allow-Origin"] == "*"
    # other APIs have no CORS
    admin = await client.get("/api/admin/projects", headers={**ADMIN, **origin})
    assert "Access-Control-Allow-Origin" not in admin.headers
    admin = await client.options("/api/admin/projects", headers=origin)
    assert "Access-Control-Allow-Origin" not in admin.headers


@pytest.fixture
async def listed(dsn: str, aiohttp_client: AiohttpClient) -> AsyncIterator[Client]:
    """The service with FRONTEND_API_ORIGINS=https://example.com."""
    await seed_database(dsn)
    settings = settings_for(
        dsn,
        frontend_api_origins=("https://example.com", "http://localhost:3000"),
        access_control_max_age=600,
    )
    app = create_app(settings, dsn)
    conformance.install(app)
    yield await aiohttp_client(ServiceTestServer(app))
    assert not app[conformance.VIOLATIONS]


async def test_cors_with_listed_origins(listed: Client) -> None:
    """As Unleash's test 'should enforce frontend API CORS config'."""
    secret = await token(listed, "frontend")
    for origin in ("https://example.com", "http://localhost:3000"):
        resp = await listed.get(FRONTEND, headers=auth(secret, Origin=origin))
        assert resp.headers["Access-Control-Allow-Origin"] == origin
        preflight = await listed.options(FRONTEND, headers={"Origin": origin})
        assert preflight.headers["Access-Control-Allow-Origin"] == origin
        assert preflight.headers["Access-Control-Max-Age"] == "600"
    for origin in ("https://example.org", "https://example.com.evil.org", "null"):
        resp = await listed.get(FRONTEND, headers=auth(secret, Origin=origin))
        assert resp.status == 200
        assert "Access-Control-Allow-Origin" not in resp.headers
        preflight = await listed.options(FRONTEND, headers={"Origin": origin})
        assert preflight.status == 204
        assert "Access-Control-Allow-Origin" not in preflight.headers


def test_the_origins_setting() -> None:
    assert Settings().frontend_api_origins == ("*",)
    assert Settings().access_control_max_age == 86400
    found = load_settings(
        {"FRONTEND_API_ORIGINS": "https://a.example.com, http://localhost:8080,https://[::1]:8443"}
    )
    assert found.frontend_api_origins == (
        "https://a.example.com",
        "http://localhost:8080",
        "https://[::1]:8443",
    )
    assert load_settings({"FRONTEND_API_ORIGINS": "https://a.example.com,*"}).frontend_api_origins
    for bad in (
        "https://a.example.com/",
        "https://a.example.com/app",
        "https://A.example.com",
        "https://a.example.com:443",
        "a.example.com",
        "ftp://a.example.com",
        "https://*.example.com",
        "https://user@a.example.com",
        ",",
    ):
        with pytest.raises(ConfigError, match="FRONTEND_API_ORIGINS"):
            load_settings({"FRONTEND_API_ORIGINS": bad})
    with pytest.raises(ConfigError, match="ACCESS_CONTROL_MAX_AGE"):
        load_settings({"ACCESS_CONTROL_MAX_AGE": "-1"})


async def test_the_context_as_unleash_makes_it(client: Client) -> None:
    """The request's address when none is given; properties[x] over a plain x; a POST
    without a body is the empty context."""
    await flag(client, "office")
    await strategy(client, "office", {"name": "remoteAddress", "parameters": {"IPs": "127.0.0.1"}})
    await switch(client, "office")
    await flag(client, "eu")
    await strategy(
        client,
        "eu",
        {
            "name": "default",
            "constraints": [{"contextName": "region", "operator": "IN", "values": ["eu"]}],
        },
    )
    await switch(client, "eu")
    secret = await token(client, "frontend")
    assert names(await get(client, secret)) == ["office"]
    assert names(await get(client, secret, {"remoteAddress": "10.0.0.1"})) == []
    assert names(await get(client, secret, "region=eu")) == ["eu", "office"]
    assert names(await get(client, secret, "region=eu&properties[region]=us")) == ["office"]
    assert names(await get(client, secret, "region=us&properties[region]=eu")) == ["eu", "office"]
    assert names(await post(client, secret, {"region": "eu"})) == ["eu", "office"]
    assert names(await post(client, secret, {"properties": {"region": "eu"}})) == ["eu", "office"]
    empty = await client.post(
        FRONTEND, headers=auth(secret, **{"Content-Type": "application/json"})
    )
    assert names(await ok(empty, 200)) == ["office"]


async def test_current_time_is_the_contexts(client: Client) -> None:
    await flag(client, "launch")
    after = {
        "contextName": "currentTime",
        "operator": "DATE_AFTER",
        "value": "2030-01-01T00:00:00Z",
    }
    await strategy(client, "launch", {"name": "default", "constraints": [after]})
    await switch(client, "launch")
    secret = await token(client, "frontend")
    assert names(await get(client, secret)) == []
    assert names(await get(client, secret, {"currentTime": "2031-05-01T10:00:00Z"})) == ["launch"]
    assert names(await post(client, secret, {"currentTime": "2031-05-01T10:00:00Z"})) == ["launch"]
    assert names(await get(client, secret, {"currentTime": "not a time"})) == []


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ("userId=" + "x" * 1001, 400),
        ("x" * 101 + "=1", 400),
        ("properties=region", 400),
        ("properties[]=eu", 400),
        ("userId=a&userId=b", 400),
        ("properties[a]=1&properties[a]=2", 400),
        ("&".join(f"p{i}=v" for i in range(101)), 400),
        ("&".join(f"p{i}=v" for i in range(1000)), 400),
        ("userId=" + "x" * 20_000, 431),
    ],
)
async def test_a_hostile_query_is_refused(client: Client, query: str, status: int) -> None:
    secret = await token(client, "frontend")
    resp = await client.get(f"{FRONTEND}?{query}", headers=auth(secret))
    assert resp.status == status, await resp.text()


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"context": {"userId": "x" * 1001}}, 400),
        ({"context": {"properties": {"region": "x" * 100_000}}}, 400),
        ({"context": {"properties": {f"p{i}": "v" for i in range(1000)}}}, 400),
        ({"context": {f"p{i}": "v" for i in range(101)}}, 400),
        ({"context": {"a": "v", "properties": {f"p{i}": "v" for i in range(100)}}}, 400),
        ({"context": {"properties": "eu"}}, 400),
        ({"context": {"userId": {"a": "b"}}}, 400),
        ({"context": {"properties": {"n": 1}}}, 400),
        ({"context": {"userId": 17}}, 400),
        ({"context": "userId"}, 400),
        ({"context": {"x" * 101: "v"}}, 400),
        ({"context": {"userId": "x" * 2_000_000}}, 413),
    ],
)
async def test_a_hostile_body_is_refused(client: Client, body: Any, status: int) -> None:
    secret = await token(client, "frontend")
    sent = io.BytesIO(json.dumps(body).encode())  # a large body as aiohttp wants it sent
    headers = auth(secret, **{"Content-Type": "application/json"})
    resp = await client.post(FRONTEND, data=sent, headers=headers)
    assert resp.status == status, await resp.text()


async def test_a_context_with_every_property_it_may_have_is_answered(client: Client) -> None:
    await rich_flags(client)
    secret = await token(client, "frontend")
    context = {
        "userId": "x" * 1000,
        "sessionId": "s",
        "properties": {f"{i:03d}" + "p" * 97: "v" * 1000 for i in range(99)} | {"region": "eu"},
    }
    assert "banner" in names(await post(client, secret, context))


async def test_registration_is_accepted_and_metrics_are_counted(client: Client) -> None:
    """As Unleash: 200 "OK" for what its schemas admit (as a server SDK's), 400 otherwise;
    the metrics count as a server SDK's do, in the token's environment."""
    await flag(client, "banner")
    secret = await token(client, "frontend")
    registration = {
        "appName": "web",
        "instanceId": "i-1",
        "sdkVersion": "unleash-client-js:3.7.0",
        "environment": "default",
        "interval": 10000,
        "started": "2026-11-25T10:00:00.000Z",
        "strategies": ["default"],
    }
    resp = await client.post(
        "/api/frontend/client/register", json=registration, headers=auth(secret)
    )
    assert (resp.status, await resp.text()) == (200, "OK")
    refused = await client.post("/api/frontend/client/register", json={}, headers=auth(secret))
    assert refused.status == 400
    now = datetime.now(UTC)
    metrics: dict[str, Any] = {
        "appName": "web",
        "instanceId": "browser",
        "bucket": {
            "start": (now - timedelta(seconds=30)).isoformat(),
            "stop": int(now.timestamp() * 1000),
            "toggles": {"banner": {"yes": 2, "no": 20, "variants": {"wide": 2}}},
        },
    }
    resp = await client.post("/api/frontend/client/metrics", json=metrics, headers=auth(secret))
    assert (resp.status, await resp.text()) == (200, "OK")
    seen = await ok(await client.get(f"{PROJECT}/features/banner", headers=ADMIN))
    assert seen["lastSeenAt"] is not None
    environments = {e["name"]: e["lastSeenAt"] for e in seen["environments"]}
    assert environments == {"development": seen["lastSeenAt"], "production": None}
    for bad in ({}, {**metrics, "bucket": {"toggles": {}}}, {**metrics, "appName": 3}):
        resp = await client.post("/api/frontend/client/metrics", json=bad, headers=auth(secret))
        assert resp.status == 400
    negative = {**metrics, "bucket": {**metrics["bucket"], "toggles": {"b": {"no": -1}}}}
    resp = await client.post("/api/frontend/client/metrics", json=negative, headers=auth(secret))
    assert resp.status == 400
    sdk = await token(client)
    resp = await client.post("/api/frontend/client/metrics", json=metrics, headers=auth(sdk))
    assert resp.status == 403


async def test_the_engine_follows_every_change(client: Client) -> None:
    """Each change is evaluated at once (read your own writes), whatever the token asked
    before."""
    secret = await token(client, "frontend")
    assert names(await get(client, secret)) == []
    await flag(client, "one")
    await strategy(client, "one", {"name": "default"})
    assert names(await get(client, secret)) == []
    await switch(client, "one")
    assert names(await get(client, secret)) == ["one"]
    path = f"{env_path('one')}/strategies"
    strategies = await ok(await client.get(path, headers=ADMIN))
    only = strategies[0]["id"] if isinstance(strategies, list) else strategies["strategies"][0]
    rule = {"contextName": "userId", "operator": "IN", "values": ["ann"]}
    changed = {"name": "default", "constraints": [rule]}
    await ok(await client.put(f"{path}/{only}", json=changed, headers=ADMIN))
    assert names(await get(client, secret, {"userId": "bob"})) == []
    assert names(await get(client, secret, {"userId": "ann"})) == ["one"]
    await ok(await client.delete(f"{PROJECT}/features/one", headers=ADMIN), 202)
    assert names(await get(client, secret, {"userId": "ann"})) == []


async def test_a_random_answer_is_never_taken_for_a_repeated_one(client: Client) -> None:
    """Answers that may differ each time (random stickiness) are evaluated each time, even for
    a client that sends the ETag of an earlier one."""
    await flag(client, "coin")
    coin = {"rollout": "50", "stickiness": "random", "groupId": "coin"}
    await strategy(client, "coin", {"name": "flexibleRollout", "parameters": coin})
    await switch(client, "coin")
    secret = await token(client, "frontend")
    query = f"{FRONTEND}?userId=ann&sessionId=s"
    first = await client.get(query, headers=auth(secret))
    etag = first.headers["ETag"]
    statuses = set()
    for _ in range(30):
        again = await client.get(query, headers=auth(secret, **{"If-None-Match": etag}))
        statuses.add(again.status)
    assert statuses == {200, 304}


def test_what_makes_an_answer_repeatable() -> None:
    def context(**root: str) -> Context:
        return Context(root={"sessionId": "s", **root}, properties={"tenant": "t"})

    rule = Constraint(
        context_name="region", operator="IN", case_insensitive=False, inverted=False, values=[]
    )
    plain = Reads()
    plain.constraints([rule])
    assert plain.repeatable(context())
    assert not plain.repeatable(Context(root={}, properties={}, session_made=True))
    clock = Reads()
    clock.constraints([msgspec.structs.replace(rule, context_name="currentTime")])
    assert not clock.repeatable(context())
    assert clock.repeatable(context(currentTime="2030-01-01T00:00:00Z"))
    sticky = Reads()
    sticky.stickiness("tenant")
    sticky.stickiness("userId")
    assert not sticky.repeatable(context())
    assert sticky.repeatable(context(userId="u"))
    drawn = Reads()
    drawn.stickiness("random")
    assert not drawn.repeatable(context(userId="u"))
    legacy = Strategy(
        name="gradualRolloutRandom",
        constraints=[],
        parameters={"percentage": "50"},
        variants=[],
        sort_order=0,
    )
    drawn = Reads()
    drawn.strategies([legacy])
    assert not drawn.repeatable(context(userId="u"))
    assert plain.names == {"region"}
    assert sticky.names == {"tenant", "userId"}


async def test_a_flag_is_off_where_its_project_dropped_the_environment(client: Client) -> None:
    """As the client API shows it (Unleash deletes those rows)."""
    await flag(client, "one")
    await strategy(client, "one", {"name": "default"})
    await switch(client, "one")
    secret = await token(client, "frontend")
    assert names(await get(client, secret)) == ["one"]
    await ok(await client.delete(f"{PROJECT}/environments/development", headers=ADMIN))
    assert names(await get(client, secret)) == []
