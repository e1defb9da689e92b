"""Maintenance mode: turned on and off through the admin API (one event each), and while it is
on every change of the admin API is refused with Unleash's 503, on every replica at once, while
reads, the SDKs' APIs, signing in and turning it off keep working."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.app import create_app
from service.appkeys import POOL
from service.instance.maintenance import MESSAGE, refusable
from tests.clientapi import token
from tests.conftest import ServiceTestServer, resolve_with_test_principals
from tests.factories import (
    ADMIN,
    STRONG,
    api_token,
    create_flag,
    create_user,
    error,
    event_count,
    make_account,
    ok,
    sign_in,
)

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    from service.settings import Settings
    from tests.conftest import AiohttpClient

    Client = TestClient[Any, Any]

MAINTENANCE = "/api/admin/maintenance"


async def turn(client: Client, enabled: bool) -> None:
    assert (
        await ok(await client.post(MAINTENANCE, json={"enabled": enabled}, headers=ADMIN), 204)
        is None
    )


async def test_off_until_turned_on_and_each_change_is_one_event(
    client: Client, app: web.Application
) -> None:
    assert await ok(await client.get(MAINTENANCE, headers=ADMIN)) == {"enabled": False}
    await turn(client, True)
    assert await ok(await client.get(MAINTENANCE, headers=ADMIN)) == {"enabled": True}
    config = await ok(await client.get("/api/admin/ui-config", headers=ADMIN))
    assert config["maintenanceMode"] is True
    await turn(client, True)  # already on: nothing recorded
    await turn(client, False)
    assert await ok(await client.get(MAINTENANCE, headers=ADMIN)) == {"enabled": False}
    async with app[POOL].acquire() as conn:
        rows = await conn.fetch(
            "SELECT stream_type, stream_key, data ->> 'enabled' AS enabled, kind FROM events"
            " WHERE type = 'MaintenanceModeSet' ORDER BY position"
        )
    assert [tuple(r) for r in rows] == [
        ("setting", "maintenance.mode", "true", "setting-updated"),
        ("setting", "maintenance.mode", "false", "setting-updated"),
    ]
    config = await ok(await client.get("/api/admin/ui-config", headers=ADMIN))
    assert config["maintenanceMode"] is False


@pytest.mark.parametrize("body", [{}, {"enabled": "yes"}, {"enabled": None}, []])
async def test_a_body_without_a_boolean_is_refused(
    client: Client, app: web.Application, body: Any
) -> None:
    resp = await client.post(MAINTENANCE, json=body, headers=ADMIN)
    await error(resp, 400, "ValidationError")
    assert await event_count(app, "MaintenanceModeSet") == 0


async def test_only_admins_read_or_change_it(client: Client, app: web.Application) -> None:
    editor = await make_account(app, role=2)
    for resp in (
        await client.get(MAINTENANCE, headers=editor.headers),
        await client.post(MAINTENANCE, json={"enabled": True}, headers=editor.headers),
    ):
        await error(resp, 403, "NoAccessError")
    await error(
        await client.post(MAINTENANCE, json={"enabled": True}), 401, "AuthenticationRequired"
    )
    assert await event_count(app, "MaintenanceModeSet") == 0


async def test_while_on_every_change_of_the_admin_api_is_refused(
    client: Client, app: web.Application
) -> None:
    await create_user(client, {"email": "maint@example.com", "rootRole": 1, "password": STRONG})
    assert await create_flag(client, "before") == 200
    assert await create_flag(client, "maintenance-window") == 200  # its name is no way around
    client_token = await token(client)
    frontend = (await api_token(client, "frontend"))["secret"]
    await turn(client, True)
    events = await event_count(app)
    flag = "/api/admin/projects/default/features/before"
    for method, path, body in (
        ("POST", "/api/admin/projects/default/features", {"name": "during"}),
        ("PUT", flag, {"description": "changed"}),
        ("PATCH", flag, [{"op": "replace", "path": "/description", "value": "x"}]),
        ("DELETE", flag, None),
        ("DELETE", "/api/admin/projects/default/features/maintenance-window", None),
        ("POST", "/api/admin/no-such-route", {}),  # before any route is looked for, as Unleash
    ):
        resp = await client.request(method, path, json=body, headers=ADMIN)
        assert await error(resp, 503, "MaintenanceModeError") == MESSAGE, (method, path)
    # Nothing changed; a caller without a token is still told so first.
    assert await event_count(app) == events
    await error(
        await client.post("/api/admin/projects/default/features", json={}),
        401,
        "AuthenticationRequired",
    )
    # Reads, the SDKs' APIs and signing in work.
    assert (await ok(await client.get(flag, headers=ADMIN)))["name"] == "before"
    features = await ok(
        await client.get("/api/client/features", headers={"Authorization": client_token})
    )
    assert sorted(f["name"] for f in features["features"]) == ["before", "maintenance-window"]
    register = {
        "appName": "app",
        "instanceId": "i",
        "interval": 10,
        "started": "2026-01-01T00:00:00Z",
        "strategies": [],
    }
    await ok(
        await client.post(
            "/api/client/register", json=register, headers={"Authorization": client_token}
        ),
        200,
        202,
    )
    await ok(await client.get("/api/frontend", headers={"Authorization": frontend}))
    resp, cookie = await sign_in(client, "maint@example.com")
    assert resp.status == 200
    assert cookie
    # Turning it off works, and changes work again.
    await turn(client, False)
    assert await create_flag(client, "after") == 200


async def test_another_replica_refuses_from_the_commit_on(
    client: Client, settings: Settings, dsn: str, aiohttp_client: AiohttpClient
) -> None:
    other = await aiohttp_client(
        ServiceTestServer(create_app(settings, dsn, resolver=resolve_with_test_principals))
    )
    assert await create_flag(other, "one") == 200
    await turn(client, True)
    resp = await other.post(
        "/api/admin/projects/default/features", json={"name": "two"}, headers=ADMIN
    )
    await error(resp, 503, "MaintenanceModeError")
    assert (await ok(await other.get("/api/admin/ui-config", headers=ADMIN)))["maintenanceMode"]
    await turn(other, False)  # from the other replica
    assert await create_flag(client, "two") == 200


_SEGMENT = st.text(st.sampled_from("abcdefghij-_/"), min_size=1, max_size=30) | st.sampled_from(
    ["maintenance", "maintenance/", "maintenance-window", "projects/default/features/maintenance"]
)


@given(method=st.sampled_from(["GET", "HEAD", "OPTIONS"]), rest=_SEGMENT)
def test_reads_are_never_refused(method: str, rest: str) -> None:
    assert not refusable(method, f"/api/admin/{rest}")


@given(method=st.sampled_from(["POST", "PUT", "PATCH", "DELETE"]), rest=_SEGMENT)
def test_changes_are_refused_under_the_admin_api_except_maintenance_s_own(
    method: str, rest: str
) -> None:
    assert refusable(method, f"/api/admin/{rest}") == (rest.rstrip("/") != "maintenance")
    assert refusable(method, f"/api/admin/{rest}/maintenance")  # a flag named so, say
    assert not refusable(method, "/api/admin/maintenance")
    for elsewhere in ("/api/client/", "/api/frontend/", "/auth/simple/", "/"):
        assert not refusable(method, elsewhere + rest)


async def test_the_event_log_shows_unleash_s_setting_events(client: Client) -> None:
    cors = {"frontendApiOrigins": ["*"]}
    await ok(await client.post("/api/admin/ui-config/cors", json=cors, headers=ADMIN), 204)
    await turn(client, True)
    # Setting the origins is a change too: refused while maintenance mode is on.
    resp = await client.post("/api/admin/ui-config/cors", json=cors, headers=ADMIN)
    await error(resp, 503, "MaintenanceModeError")
    await turn(client, False)
    events = (await ok(await client.get("/api/admin/events", headers=ADMIN)))["events"]
    shown = [(e["type"], e["data"]) for e in events if e["type"] == "setting-updated"]
    assert shown == [  # newest first
        ("setting-updated", {"id": "maintenance.mode", "enabled": False}),
        ("setting-updated", {"id": "maintenance.mode", "enabled": True}),
        ("setting-updated", {"id": "unleash.frontend", "frontendApiOrigins": ["*"]}),
    ]
