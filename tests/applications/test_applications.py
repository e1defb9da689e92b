"""Applications (docs/behavior.md, "Applications"): the list, one application, its overview
and instances, outdated SDKs and a project's applications, from what SDKs report (schema
telemetry), beside what people say of one (events ApplicationCreated, ApplicationUpdated,
ApplicationDeleted: the read model `applications`)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service import auth
from service.appkeys import POOL
from service.applications.domain import is_outdated
from tests.conftest import as_principal
from tests.factories import ADMIN, ISO, api_token, error, event_count, flag, ok

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

APPS = "/api/admin/metrics/applications"


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


async def register(
    client: Client, token: str, app: str, instance: str, sdk: str, **extra: Any
) -> None:
    body = {
        "appName": app,
        "instanceId": instance,
        "sdkVersion": sdk,
        "strategies": ["default", "flexibleRollout"],
        "started": _now(),
        "interval": 15000,
        **extra,
    }
    resp = await client.post("/api/client/register", json=body, headers={"Authorization": token})
    assert resp.status == 202, await resp.text()


async def report(client: Client, token: str, app: str, instance: str, *flags: str) -> None:
    body = {
        "appName": app,
        "instanceId": instance,
        "bucket": {
            "start": _now(),
            "stop": _now(),
            "toggles": {f: {"yes": 2, "no": 1, "variants": {}} for f in flags},
        },
    }
    resp = await client.post("/api/client/metrics", json=body, headers={"Authorization": token})
    assert resp.status == 202, await resp.text()


async def checkout(client: Client) -> str:
    """checkout-service: two instances in production (one outdated Node SDK), reporting flag
    new-checkout of the default project; a production client token."""
    await flag(client, "new-checkout")
    token = (await api_token(client, environment="production"))["secret"]
    await register(client, token, "checkout-service", "i-1", "unleash-client-python:5.11.0")
    await register(client, token, "checkout-service", "i-2", "unleash-client-node:3.2.0")
    await report(client, token, "checkout-service", "i-1", "new-checkout")
    return str(token)


async def test_a_registered_application_is_listed_with_its_usage(client: Client) -> None:
    await checkout(client)
    body = await ok(await client.get(APPS, headers=ADMIN))
    assert body["total"] == 1
    [app] = body["applications"]
    assert ISO.match(app.pop("createdAt"))
    assert ISO.match(app.pop("updatedAt"))
    assert app == {
        "appName": "checkout-service",
        "description": None,
        "strategies": ["default", "flexibleRollout"],
        "createdBy": "unleash_system_user",
        "url": None,
        "color": None,
        "icon": None,
        "usage": [{"project": "*", "environments": ["production"]}],
    }


async def test_the_list_pages_searches_and_sorts_as_unleash(client: Client) -> None:
    for name in ("b-app", "a-app", "c-other"):
        await ok(await client.post(f"{APPS}/{name}", json={}, headers=ADMIN), 202)

    async def names(query: str) -> tuple[int, list[str]]:
        body = await ok(await client.get(f"{APPS}?{query}", headers=ADMIN))
        return body["total"], [a["appName"] for a in body["applications"]]

    assert await names("") == (3, ["a-app", "b-app", "c-other"])
    assert await names("sortOrder=desc") == (3, ["c-other", "b-app", "a-app"])
    assert await names("sortBy=createdAt") == (3, ["a-app", "b-app", "c-other"])
    assert await names("query=APP") == (2, ["a-app", "b-app"])
    assert await names("query=%25") == (0, [])  # `%` is a character, not a wildcard
    assert await names("limit=1&offset=1") == (3, ["b-app"])
    assert await names("offset=5") == (3, [])  # past the end: the total all the same
    assert await names("limit=0&offset=-2") == (3, ["a-app", "b-app", "c-other"])
    assert await names("limit=abc") == (3, ["a-app", "b-app", "c-other"])
    assert await names("limit=--2&offset=1.5") == (3, ["a-app", "b-app", "c-other"])
    assert await names("query=a%00") == (0, [])


async def test_one_application_with_instances_strategies_and_flags(client: Client) -> None:
    token = await checkout(client)
    await register(
        client, token, "checkout-service", "i-2", "unleash-client-node:3.2.0", strategies=["gone"]
    )
    body = await ok(await client.get(f"{APPS}/checkout-service", headers=ADMIN))
    assert [s["name"] for s in body["strategies"]] == ["gone"]
    assert body["strategies"] == [{"name": "gone", "notFound": True}]
    assert [(i["instanceId"], i["sdkVersion"], i["environment"]) for i in body["instances"]] == [
        ("i-1", "unleash-client-python:5.11.0", "production"),
        ("i-2", "unleash-client-node:3.2.0", "production"),
    ]
    [seen] = body["seenToggles"]
    assert (seen["name"], seen["project"], seen["type"], seen["archived"]) == (
        "new-checkout",
        "default",
        "release",
        False,
    )
    assert body["links"] == {"self": "/api/applications/checkout-service"}
    await register(client, token, "checkout-service", "i-2", "unleash-client-node:3.2.0")
    body = await ok(await client.get(f"{APPS}/checkout-service", headers=ADMIN))
    assert body["strategies"][0]["name"] == "default"
    assert body["strategies"][0]["editable"] is False
    message = await error(await client.get(f"{APPS}/nope", headers=ADMIN), 404, "NotFoundError")
    assert message == "Could not find appName=nope"


async def test_the_overview_and_an_environment_s_instances(client: Client) -> None:
    token = await checkout(client)
    await register(
        client, token, "checkout-service", "i-3", "unleash-client-go:4.0.0", strategies=["mine"]
    )
    body = await ok(await client.get(f"{APPS}/checkout-service/overview", headers=ADMIN))
    [env] = body["environments"]
    assert ISO.match(env.pop("lastSeen"))
    assert body == {
        "projects": ["default"],
        "featureCount": 1,
        "environments": [
            {
                "name": "production",
                "instanceCount": 3,
                "sdks": [
                    "unleash-client-go:4.0.0",
                    "unleash-client-node:3.2.0",
                    "unleash-client-python:5.11.0",
                ],
                "frontendSdks": [],
                "backendSdks": [
                    "unleash-client-go:4.0.0",
                    "unleash-client-node:3.2.0",
                    "unleash-client-python:5.11.0",
                ],
                "issues": {
                    "missingFeatures": [],
                    "outdatedSdks": ["unleash-client-go:4.0.0", "unleash-client-node:3.2.0"],
                },
            }
        ],
        "issues": {"missingStrategies": ["mine"]},
    }
    empty = await ok(await client.get(f"{APPS}/nope/overview", headers=ADMIN))
    assert empty == {
        "projects": [],
        "featureCount": 0,
        "environments": [],
        "issues": {"missingStrategies": []},
    }
    url = "/api/admin/metrics/instances/checkout-service/environment/production"
    instances = (await ok(await client.get(url, headers=ADMIN)))["instances"]
    assert sorted(i["instanceId"] for i in instances) == ["i-1", "i-2", "i-3"]
    assert set(instances[0]) == {"instanceId", "clientIp", "sdkVersion", "lastSeen"}
    url = "/api/admin/metrics/instances/checkout-service/environment/development"
    assert await ok(await client.get(url, headers=ADMIN)) == {"instances": []}


async def test_outdated_sdks_everywhere_and_in_a_project(client: Client) -> None:
    await checkout(client)
    expected = {
        "sdks": [{"sdkVersion": "unleash-client-node:3.2.0", "applications": ["checkout-service"]}]
    }
    assert await ok(await client.get("/api/admin/metrics/sdks/outdated", headers=ADMIN)) == expected
    url = "/api/admin/projects/default/sdks/outdated"
    assert await ok(await client.get(url, headers=ADMIN)) == expected
    url = "/api/admin/projects/other/sdks/outdated"
    assert await ok(await client.get(url, headers=ADMIN)) == {"sdks": []}


async def test_a_project_s_applications(client: Client) -> None:
    token = await checkout(client)
    await register(client, token, "idle-app", "x", "unleash-client-java:9.2.0")  # no flag of it
    body = await ok(await client.get("/api/admin/projects/default/applications", headers=ADMIN))
    assert body == {
        "applications": [
            {
                "name": "checkout-service",
                "environments": ["production"],
                "instances": ["i-1", "i-2"],
                "sdks": [
                    {"name": "unleash-client-node", "versions": ["3.2.0"]},
                    {"name": "unleash-client-python", "versions": ["5.11.0"]},
                ],
            }
        ],
        "total": 1,
    }
    url = "/api/admin/projects/default/applications?offset=1"
    assert await ok(await client.get(url, headers=ADMIN)) == {"applications": [], "total": 1}
    url = "/api/admin/projects/default/applications?query=idle"
    assert await ok(await client.get(url, headers=ADMIN)) == {"applications": [], "total": 0}


async def test_describing_an_application_records_events(
    client: Client, app: web.Application
) -> None:
    url = f"{APPS}/shop"
    body = {"description": "The shop", "url": "https://shop.example", "appName": "ignored"}
    await ok(await client.post(url, json=body, headers=ADMIN), 202)
    assert await event_count(app, "ApplicationCreated") == 1
    await ok(await client.post(url, json={"color": "red"}, headers=ADMIN), 202)
    await ok(await client.post(url, json={"color": "red"}, headers=ADMIN), 202)  # no change
    assert await event_count(app, "ApplicationUpdated") == 1
    await ok(await client.post(url, json={"url": None, "icon": "cart"}, headers=ADMIN), 202)
    got = await ok(await client.get(url, headers=ADMIN))
    assert (got["description"], got["url"], got["color"], got["icon"]) == (
        "The shop",
        None,
        "red",
        "cart",
    )
    assert got["instances"] == []
    assert got["strategies"] == []
    async with app[POOL].acquire() as conn:
        kind = await conn.fetchval(
            "SELECT event_kind(type, data) FROM events WHERE type = 'ApplicationCreated'"
        )
        data = await conn.fetchval(
            "SELECT data::text FROM events WHERE type = 'ApplicationUpdated'"
        )
    assert kind == "application-created"
    assert '"color": "red"' in data


async def test_deleting_an_application_takes_its_instances(
    client: Client, app: web.Application
) -> None:
    await checkout(client)
    await ok(
        await client.post(f"{APPS}/checkout-service", json={"description": "d"}, headers=ADMIN), 202
    )
    await ok(await client.delete(f"{APPS}/checkout-service", headers=ADMIN), 200)
    assert await event_count(app, "ApplicationDeleted") == 1
    await error(await client.get(f"{APPS}/checkout-service", headers=ADMIN), 404, "NotFoundError")
    assert (await ok(await client.get(APPS, headers=ADMIN)))["total"] == 0
    await ok(await client.delete(f"{APPS}/checkout-service", headers=ADMIN), 200)  # not there
    assert await event_count(app, "ApplicationDeleted") == 1
    # An application only SDKs know is deleted the same way, with its event.
    token = (await api_token(client, name="another", environment="development"))["secret"]
    await register(client, token, "reported-only", "r-1", "unleash-client-ruby:5.0.0")
    await ok(await client.delete(f"{APPS}/reported-only", headers=ADMIN), 200)
    assert await event_count(app, "ApplicationDeleted") == 2
    assert (await ok(await client.get(APPS, headers=ADMIN)))["total"] == 0


@pytest.mark.parametrize(
    "body",
    [[1], {"description": 5}, {"url": "x" * 256}, {"color": True}, "text"],
)
async def test_bodies_that_are_refused(client: Client, app: web.Application, body: Any) -> None:
    await error(await client.post(f"{APPS}/a", json=body, headers=ADMIN), 400, "ValidationError")
    assert await event_count(app, "ApplicationCreated") == 0


async def test_a_name_too_long_is_refused(client: Client) -> None:
    await error(
        await client.post(f"{APPS}/{'a' * 256}", json={}, headers=ADMIN), 400, "ValidationError"
    )


async def test_permissions(client: Client) -> None:
    viewer = as_principal(auth.READ)
    await error(await client.post(f"{APPS}/a", json={}, headers=viewer), 403, "NoAccessError")
    await error(await client.delete(f"{APPS}/a", headers=viewer), 403, "NoAccessError")
    await ok(await client.get(APPS, headers=viewer))
    editor = as_principal(auth.READ, auth.UPDATE_APPLICATION, auth.DELETE_APPLICATION)
    await ok(await client.post(f"{APPS}/a", json={}, headers=editor), 202)
    await ok(await client.delete(f"{APPS}/a", headers=editor), 200)
    assert auth.UPDATE_APPLICATION in auth.ROOT_ROLES[2].permissions


_VERSION = st.tuples(*(st.integers(0, 30) for _ in range(3)))


@given(version=_VERSION, pre=st.booleans())
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_outdated_is_a_semantic_version_below_the_minimum(
    version: tuple[int, int, int], pre: bool
) -> None:
    text = ".".join(map(str, version)) + ("-rc.1" if pre else "")
    outdated = version < (5, 3, 2) or (version == (5, 3, 2) and pre)
    assert is_outdated(f"unleash-client-node:{text}") is outdated
    assert is_outdated(f"some-other-sdk:{text}") is False
    assert is_outdated(text) is False


def test_versions_that_are_not_semantic_are_not_outdated() -> None:
    assert not is_outdated(None)
    assert not is_outdated("unleash-client-node:latest")
    assert not is_outdated("unleash-client-node:1.2")
    assert not is_outdated("unleash-client-node:1:2.3.4")
