"""GET /api/client/features and /features/{name}: Unleash's client format for SDKs, ETags."""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING, Any

import pytest

from service.appkeys import CLIENT_FEED
from tests.clientapi import PROJECT, SPEC, auth, rich_flags, segment, strategy, switch, token
from tests.factories import ADMIN, flag, ok

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]


async def features(client: Client, secret: str, query: str = "", **headers: str) -> Any:
    resp = await client.get(f"/api/client/features{query}", headers=auth(secret, **SPEC, **headers))
    return await ok(resp, 200)


async def test_the_client_format_of_every_part(client: Client) -> None:
    made = await rich_flags(client)
    secret = await token(client)
    body = await features(client, secret)
    assert body["version"] == 2
    assert body["query"] == {"environment": "development"}
    assert body["meta"]["etag"].startswith('"')
    assert body["meta"]["revisionId"] > 0
    assert body["segments"] == [
        {
            "id": made["segment"],
            "name": "beta",
            "constraints": [
                {
                    "contextName": "region",
                    "operator": "IN",
                    "values": ["eu", "us"],
                    "inverted": False,
                    "caseInsensitive": False,
                }
            ],
        }
    ]
    by_name = {f["name"]: f for f in body["features"]}
    assert list(by_name) == ["banner", "checkout", "dormant", "parent", "tagged"]
    checkout = by_name["checkout"]
    assert checkout == {
        "name": "checkout",
        "type": "release",
        "description": "the new checkout",
        "enabled": True,
        "stale": False,
        "impressionData": True,
        "project": "default",
        "strategies": [
            {
                "name": "flexibleRollout",
                "constraints": [
                    {
                        "contextName": "appName",
                        "operator": "NOT_IN",
                        "values": ["legacy"],
                        "inverted": False,
                        "caseInsensitive": False,
                    }
                ],
                "parameters": {"rollout": "50", "stickiness": "userId", "groupId": "checkout"},
                "variants": [  # stored by name, as Unleash stores them
                    {
                        "name": "blue",
                        "weight": 500,
                        "weightType": "variable",
                        "stickiness": "userId",
                    },
                    {
                        "name": "red",
                        "weight": 500,
                        "weightType": "variable",
                        "stickiness": "userId",
                        "payload": {"type": "string", "value": "r"},
                    },
                ],
                "sortOrder": checkout["strategies"][0]["sortOrder"],
                "segments": [made["segment"]],
            },
            {
                "name": "userWithId",
                "constraints": [],
                "parameters": {"userIds": "vip-1,vip-2"},
                "variants": [],
                "sortOrder": checkout["strategies"][1]["sortOrder"],
                "segments": [],
            },
        ],
        "variants": [],
        "dependencies": [{"feature": "parent", "enabled": True, "variants": []}],
    }
    assert checkout["strategies"][0]["sortOrder"] <= checkout["strategies"][1]["sortOrder"]
    assert by_name["banner"]["variants"][1] == {  # after "narrow": stored by name
        "name": "wide",
        "weight": 500,
        "weightType": "variable",
        "stickiness": "default",
        "payload": {"type": "json", "value": '{"w": 1}'},
        "overrides": [],
    }
    assert by_name["dormant"]["enabled"] is False
    assert by_name["dormant"]["strategies"] == []


async def test_sdks_without_segment_support_get_them_inlined(client: Client) -> None:
    await rich_flags(client)
    secret = await token(client)
    resp = await client.get("/api/client/features", headers=auth(secret))
    body = await ok(resp, 200)
    assert "segments" not in body
    assert body["query"] == {"environment": "development", "inlineSegmentConstraints": True}
    rollout = next(f for f in body["features"] if f["name"] == "checkout")["strategies"][0]
    assert "segments" not in rollout
    assert [c["contextName"] for c in rollout["constraints"]] == ["appName", "region"]
    old = await ok(
        await client.get(
            "/api/client/features", headers=auth(secret, **{"Unleash-Client-Spec": "4.1.9"})
        ),
        200,
    )
    assert "segments" not in old


@pytest.mark.parametrize("spec", ["v5.0.0", "5.0", "latest", "5.0.0.1"])
async def test_a_spec_header_that_is_no_version_is_400(client: Client, spec: str) -> None:
    secret = await token(client)
    resp = await client.get(
        "/api/client/features", headers=auth(secret, **{"Unleash-Client-Spec": spec})
    )
    body = await ok(resp, 400)
    assert "Unleash-Client-Spec" in body["message"]


async def test_etag_and_304_until_something_changes(client: Client) -> None:
    await flag(client, "one")
    secret = await token(client)
    first = await client.get("/api/client/features", headers=auth(secret, **SPEC))
    etag = first.headers["ETag"]
    assert (await first.json())["meta"]["etag"] == etag
    same = await client.get(
        "/api/client/features", headers=auth(secret, **SPEC, **{"If-None-Match": etag})
    )
    assert same.status == 304
    assert same.headers["ETag"] == etag
    assert await same.read() == b""
    # a change nobody's SDK sees (a user) keeps the ETag; a flag's change moves it
    user = {"email": "someone@example.com", "rootRole": 3, "sendEmail": False}
    await ok(await client.post("/api/admin/user-admin", json=user, headers=ADMIN), 201)
    still = await client.get(
        "/api/client/features", headers=auth(secret, **SPEC, **{"If-None-Match": etag})
    )
    assert still.status == 304
    await strategy(client, "one", {"name": "default"})
    moved = await client.get(
        "/api/client/features", headers=auth(secret, **SPEC, **{"If-None-Match": etag})
    )
    assert moved.status == 200
    assert moved.headers["ETag"] != etag
    # another query, another ETag
    other = await client.get("/api/client/features?namePrefix=o", headers=auth(secret, **SPEC))
    assert other.headers["ETag"] != moved.headers["ETag"]


async def test_archived_flags_are_absent(client: Client) -> None:
    await flag(client, "kept")
    await flag(client, "gone")
    secret = await token(client)
    assert [f["name"] for f in (await features(client, secret))["features"]] == ["gone", "kept"]
    await ok(await client.delete(f"{PROJECT}/features/gone", headers=ADMIN), 202)
    assert [f["name"] for f in (await features(client, secret))["features"]] == ["kept"]


async def test_filters_and_the_tokens_projects(client: Client) -> None:
    await rich_flags(client)
    await ok(
        await client.post(
            "/api/admin/projects", json={"id": "other", "name": "Other"}, headers=ADMIN
        )
    )
    await flag(client, "elsewhere", project="other")
    secret = await token(client)
    assert names(await features(client, secret, "?namePrefix=ch")) == ["checkout"]
    assert names(await features(client, secret, "?project=other")) == ["elsewhere"]
    both = await features(client, secret, "?project=other&project=default&namePrefix=e")
    assert names(both) == ["elsewhere"]
    assert names(await features(client, secret, "?tag=simple:team-a")) == ["tagged"]
    assert names(await features(client, secret, "?tag=simple:nobody")) == []
    scoped = await token(client, projects=["other"])
    assert names(await features(client, scoped)) == ["elsewhere"]
    # a token for some projects sees only those, whatever the query names
    assert names(await features(client, scoped, "?project=default")) == ["elsewhere"]
    resp = await client.get("/api/client/features?tag=notag", headers=auth(secret))
    await ok(resp, 400)


def names(body: Any) -> list[str]:
    return [f["name"] for f in body["features"]]


async def test_the_environment_is_the_tokens(client: Client) -> None:
    await flag(client, "f")
    await strategy(client, "f", {"name": "default"}, environment="production")
    await switch(client, "f", environment="production")
    dev, prod = await token(client), await token(client, environment="production")
    assert (await features(client, dev))["features"][0]["enabled"] is False
    assert (await features(client, prod))["features"][0]["enabled"] is True
    # admin tokens read the default environment, or the one they name
    admin = await features(client, ADMIN["Authorization"])
    assert admin["query"]["environment"] == "default"
    named = await features(client, ADMIN["Authorization"], "?environment=production")
    assert named["features"][0]["enabled"] is True


async def test_one_flag(client: Client) -> None:
    await rich_flags(client)
    secret = await token(client)
    listed = {f["name"]: f for f in (await features(client, secret))["features"]}
    one = await ok(
        await client.get("/api/client/features/checkout", headers=auth(secret, **SPEC)), 200
    )
    assert one == listed["checkout"]
    missing = await client.get("/api/client/features/nope", headers=auth(secret, **SPEC))
    assert (await ok(missing, 404))["name"] == "NotFoundError"


async def test_who_may_read(client: Client) -> None:
    secret = await token(client)
    frontend = await token(client, kind="frontend")
    assert (await client.get("/api/client/features")).status == 401
    assert (await client.get("/api/client/features", headers=auth("nope"))).status == 401
    assert (await client.get("/api/client/features", headers=auth(frontend))).status == 403
    assert (await client.get("/api/client/features", headers=auth(secret))).status == 200
    # a client token reads no admin route
    assert (await client.get("/api/admin/projects", headers=auth(secret))).status == 403


async def test_a_change_is_read_at_once(client: Client) -> None:
    secret = await token(client)
    for i in range(5):
        await flag(client, f"f{i}")
        body = await features(client, secret)
        assert [f["name"] for f in body["features"]] == [f"f{j}" for j in range(i + 1)]


async def test_a_projects_dropped_environment_turns_its_flags_off(client: Client) -> None:
    await flag(client, "f")
    await strategy(client, "f", {"name": "default"})
    await switch(client, "f")
    secret = await token(client)
    assert (await features(client, secret))["features"][0]["enabled"] is True
    await ok(await client.delete(f"{PROJECT}/environments/development", headers=ADMIN))
    [off] = (await features(client, secret))["features"]
    assert off["enabled"] is False
    assert off["strategies"] == []


async def test_segments_are_those_the_tokens_flags_use(client: Client) -> None:
    made = await rich_flags(client)
    unused = await segment(
        client, "unused", [{"contextName": "x", "operator": "IN", "values": ["1"]}]
    )
    secret = await token(client)
    assert [s["id"] for s in (await features(client, secret))["segments"]] == [made["segment"]]
    await ok(
        await client.post(
            "/api/admin/projects", json={"id": "other", "name": "Other"}, headers=ADMIN
        )
    )
    scoped = await token(client, projects=["other"])
    assert (await features(client, scoped))["segments"] == []
    assert unused not in [s["id"] for s in (await features(client, secret))["segments"]]


async def test_one_flag_has_an_etag_too(client: Client) -> None:
    await flag(client, "f")
    secret = await token(client)
    first = await client.get("/api/client/features/f", headers=auth(secret, **SPEC))
    etag = first.headers["ETag"]
    again = await client.get(
        "/api/client/features/f", headers=auth(secret, **SPEC, **{"If-None-Match": etag})
    )
    assert again.status == 304
    await strategy(client, "f", {"name": "default"})
    moved = await client.get(
        "/api/client/features/f", headers=auth(secret, **SPEC, **{"If-None-Match": etag})
    )
    assert moved.status == 200


async def test_a_prerelease_of_the_segments_spec_gets_them_inlined(client: Client) -> None:
    secret = await token(client)
    resp = await client.get(
        "/api/client/features", headers=auth(secret, **{"Unleash-Client-Spec": "4.2.0-beta.1"})
    )
    assert "segments" not in await ok(resp, 200)
    resp = await client.get(
        "/api/client/features", headers=auth(secret, **{"Unleash-Client-Spec": "4.2.0+build.7"})
    )
    assert "segments" in await ok(resp, 200)


async def test_the_model_of_flags_stays_out_of_the_cyclic_collector(
    client: Client, app: web.Application
) -> None:
    """The model is kept for the process's life: its flags' parts are not tracked by the
    cyclic collector, whose full passes would walk them all (service/client/responses.py)."""
    await rich_flags(client)
    await features(client, await token(client))
    model = app[CLIENT_FEED].model
    parts: list[object] = []
    for known in model.flags.values():
        for environment in known.environments.values():
            for each in environment.strategies:
                parts.append(each)
                parts.extend(each.constraints)
            parts.extend(environment.variants)
        parts.extend(known.dependencies)
        parts.extend(known._seen.values())
    parts.extend(model.segments.values())
    assert {type(p).__name__ for p in parts} >= {"Strategy", "Constraint", "Feature", "Segment"}
    assert [p for p in parts if gc.is_tracked(p)] == []
