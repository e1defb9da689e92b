"""The environments' admin routes: one environment, switching one on and off, their order,
and the environments as a project's settings show them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from projections.verify import verify
from service import auth
from service.appkeys import POOL
from service.projects import domain
from tests.conftest import as_principal
from tests.factories import ADMIN, api_token, error, event_count, flag, ok

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

ENVIRONMENTS = "/api/admin/environments"
NOT_ADMIN = as_principal(auth.READ, auth.UPDATE_PROJECT, auth.UPDATE_FEATURE)


async def listed(client: Client) -> list[dict[str, Any]]:
    body = await ok(await client.get(ENVIRONMENTS, headers=ADMIN))
    return list(body["environments"])


async def test_one_environment(client: Client) -> None:
    body = await ok(await client.get(f"{ENVIRONMENTS}/development", headers=ADMIN))
    assert body == {
        "name": "development",
        "type": "development",
        "sortOrder": 2,
        "enabled": True,
        "protected": False,
        "requiredApprovals": None,
    }
    message = await error(
        await client.get(f"{ENVIRONMENTS}/nope", headers=ADMIN), 404, "NotFoundError"
    )
    assert message == "Could not find environment with name: nope"


async def test_switch_an_environment_off_and_on(client: Client, app: web.Application) -> None:
    off, on = f"{ENVIRONMENTS}/production/off", f"{ENVIRONMENTS}/production/on"
    assert (await client.post(off, headers=ADMIN)).status == 204
    assert (await client.post(off, headers=ADMIN)).status == 204  # already off: no event
    assert await event_count(app, "EnvironmentSwitched") == 1
    [production] = [e for e in await listed(client) if e["name"] == "production"]
    assert production["enabled"] is False
    one = await ok(await client.get(f"{ENVIRONMENTS}/production", headers=ADMIN))
    assert one["enabled"] is False
    project = await ok(await client.get(f"{ENVIRONMENTS}/project/default", headers=ADMIN))
    assert [e["enabled"] for e in project["environments"]] == [True, False]
    assert (await client.post(on, headers=ADMIN)).status == 204
    assert await event_count(app, "EnvironmentSwitched") == 2
    assert all(e["enabled"] for e in await listed(client))
    message = await error(
        await client.post(f"{ENVIRONMENTS}/nope/on", headers=ADMIN), 404, "NotFoundError"
    )
    assert message == "Could not find environment nope"
    await error(await client.post(off, headers=NOT_ADMIN), 403, "NoAccessError")
    assert await event_count(app, "EnvironmentSwitched") == 2
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok


async def test_sort_order(client: Client, app: web.Application) -> None:
    url = f"{ENVIRONMENTS}/sort-order"
    body = {"production": 1, "development": 7, "nowhere": 3}
    assert (await client.put(url, json=body, headers=ADMIN)).status == 200
    assert [(e["name"], e["sortOrder"]) for e in await listed(client)] == [
        ("production", 1),
        ("development", 7),
    ]
    assert await event_count(app, "EnvironmentSortOrderSet") == 2
    assert (await client.put(url, json={"production": 1}, headers=ADMIN)).status == 200
    assert (await client.put(url, json={}, headers=ADMIN)).status == 200
    assert await event_count(app, "EnvironmentSortOrderSet") == 2  # nothing changed
    bad: object
    for bad in ({"development": "x"}, [], {"development": 10**10}, {"x" * 101: 1}):
        await error(await client.put(url, json=bad, headers=ADMIN), 400, "ValidationError")
    await error(
        await client.put(url, json={"production": 5}, headers=NOT_ADMIN), 403, "NoAccessError"
    )
    assert await event_count(app, "EnvironmentSortOrderSet") == 2
    # Every list of environments follows the new order.
    detail = await ok(await client.get("/api/admin/projects/default", headers=ADMIN))
    assert [e["environment"] for e in detail["environments"]] == ["production", "development"]
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok


@given(
    orders=st.dictionaries(
        st.sampled_from(["development", "production", "nowhere"]), st.integers(-5, 5)
    ),
    current=st.dictionaries(st.sampled_from(["development", "production"]), st.integers(-5, 5)),
)
@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_sort_order_changes_only_what_differs(
    orders: dict[str, int], current: dict[str, int]
) -> None:
    events = domain.set_sort_order(orders, current)
    after = current | {e.name: e.sort_order for e in events}
    assert after == current | {k: v for k, v in orders.items() if k in current}
    assert all(current[e.name] != e.sort_order for e in events)
    assert [e.name for e in events] == sorted({e.name for e in events})


async def test_project_environments(client: Client) -> None:
    await flag(client, "on-here")
    switch = "/api/admin/projects/default/features/on-here/environments/development/on"
    await ok(await client.post(switch, headers=ADMIN))
    await api_token(client, environment="production", projects=["default"])
    await api_token(client, environment="development", projects=["*"])  # every project's
    body = await ok(await client.get(f"{ENVIRONMENTS}/project/default", headers=ADMIN))
    common = {"enabled": True, "protected": False, "requiredApprovals": None, "visible": True}
    assert body == {
        "version": 1,
        "environments": [
            {
                "name": "development",
                "type": "development",
                "sortOrder": 2,
                **common,
                "projectApiTokenCount": 1,
                "projectEnabledToggleCount": 1,
            },
            {
                "name": "production",
                "type": "production",
                "sortOrder": 3,
                **common,
                "projectApiTokenCount": 1,
                "projectEnabledToggleCount": 0,
            },
        ],
    }
    every = await ok(await client.get(ENVIRONMENTS, headers=ADMIN))
    assert [(e["apiTokenCount"], e["enabledToggleCount"]) for e in every["environments"]] == [
        (1, 1),
        (1, 0),
    ]
    # An archived flag keeps its switches, and Unleash counts them too.
    await flag(client, "archived-on")
    switch = "/api/admin/projects/default/features/archived-on/environments/production/on"
    await ok(await client.post(switch, headers=ADMIN))
    archive = await client.delete("/api/admin/projects/default/features/archived-on", headers=ADMIN)
    assert archive.status == 202
    every = await ok(await client.get(ENVIRONMENTS, headers=ADMIN))
    assert [e["enabledToggleCount"] for e in every["environments"]] == [1, 1]
    body = await ok(await client.get(f"{ENVIRONMENTS}/project/default", headers=ADMIN))
    assert [e["projectEnabledToggleCount"] for e in body["environments"]] == [1, 1]
    # A project that does not exist has every environment, none of them visible (as Unleash).
    nowhere = await ok(await client.get(f"{ENVIRONMENTS}/project/nope", headers=ADMIN))
    assert [(e["visible"], e["projectEnabledToggleCount"]) for e in nowhere["environments"]] == [
        (False, 0),
        (False, 0),
    ]


async def test_update_an_environment(client: Client, app: web.Application) -> None:
    url = f"{ENVIRONMENTS}/update/development"
    body = await ok(await client.put(url, json={"type": "test", "sortOrder": 9}, headers=ADMIN))
    assert (body["type"], body["sortOrder"], body["enabled"]) == ("test", 9, True)
    # The edit form sends requiredApprovals too; a sortOrder left out stays.
    body = await ok(
        await client.put(url, json={"type": "test", "requiredApprovals": None}, headers=ADMIN)
    )
    assert (body["type"], body["sortOrder"]) == ("test", 9)
    assert await event_count(app, "EnvironmentUpdated") == 1
    await error(
        await client.put(f"{ENVIRONMENTS}/update/nope", json={"type": "t"}, headers=ADMIN),
        404,
        "NotFoundError",
    )
    await error(await client.put(url, json={"type": ""}, headers=ADMIN), 400, "ValidationError")
    await error(await client.put(url, json={"type": "t"}, headers=NOT_ADMIN), 403, "NoAccessError")
    assert await event_count(app, "EnvironmentUpdated") == 1
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok


async def test_only_the_default_environment_is_protected_and_keeps_its_type(
    client: Client, app: web.Application
) -> None:
    """As in Unleash, whose own `default` environment (which an import from it brings) is its
    only protected one: its type never changes there; its order may."""
    body = {"name": "default", "type": "production"}
    made = await ok(await client.post(ENVIRONMENTS, json=body, headers=ADMIN), 201)
    assert made["protected"] is True
    assert {e["name"]: e["protected"] for e in await listed(client)} == {
        "default": True,
        "development": False,
        "production": False,
    }
    update = f"{ENVIRONMENTS}/update/default"
    refused = await client.put(update, json={"type": "test"}, headers=ADMIN)
    message = await error(refused, 403, "InvalidOperationError")
    assert message == "Environment default is protected: its type stays production"
    moved = await ok(
        await client.put(update, json={"type": "production", "sortOrder": 9}, headers=ADMIN)
    )
    assert (moved["sortOrder"], moved["protected"]) == (9, True)
    assert await event_count(app, "EnvironmentUpdated") == 1
