"""The frontend API's CORS origins set through the admin API (`POST /api/admin/ui-config/cors`,
and Unleash's older `POST /api/admin/ui-config`): one event, then they replace
FRONTEND_API_ORIGINS on every replica, in the CORS answers and in ui-config."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from projections.replay import replay
from projections.verify import verify
from service.app import create_app
from service.appkeys import POOL
from service.instance.state import ORIGINS_SECONDS
from tests.conftest import ServiceTestServer, resolve_with_test_principals
from tests.factories import ADMIN, api_token, error, event_count, make_account, ok

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    from service.settings import Settings
    from tests.conftest import AiohttpClient

    Client = TestClient[Any, Any]

CORS = "/api/admin/ui-config/cors"
APP = "https://app.example.com"


async def origins_shown(client: Client) -> list[str]:
    return list(
        (await ok(await client.get("/api/admin/ui-config", headers=ADMIN)))["frontendApiOrigins"]
    )


async def allowed(client: Client, origin: str) -> str | None:
    """What a preflight of the frontend API from `origin` is told."""
    resp = await client.options(
        "/api/frontend", headers={"Origin": origin, "Access-Control-Request-Method": "GET"}
    )
    assert resp.status == 204
    return resp.headers.get("Access-Control-Allow-Origin")


async def test_set_origins_replace_the_environment_s(client: Client, app: web.Application) -> None:
    assert await origins_shown(client) == ["*"]
    assert await allowed(client, "https://elsewhere.example.com") == "*"
    assert (
        await ok(await client.post(CORS, json={"frontendApiOrigins": [APP]}, headers=ADMIN), 204)
        is None
    )
    assert await origins_shown(client) == [APP]
    assert await allowed(client, APP) == APP
    assert await allowed(client, "https://elsewhere.example.com") is None
    # An answer of the frontend API itself says so too.
    frontend = (await api_token(client, "frontend"))["secret"]
    resp = await client.get("/api/frontend", headers={"Authorization": frontend, "Origin": APP})
    assert resp.status == 200
    assert resp.headers["Access-Control-Allow-Origin"] == APP
    # The same again records nothing; Unleash's older form sets them too.
    await ok(await client.post(CORS, json={"frontendApiOrigins": [APP]}, headers=ADMIN), 204)
    older = {"frontendSettings": {"frontendApiOrigins": ["*", "http://localhost:3000"]}}
    await ok(await client.post("/api/admin/ui-config", json=older, headers=ADMIN), 204)
    assert await origins_shown(client) == ["*", "http://localhost:3000"]
    async with app[POOL].acquire() as conn:
        rows = await conn.fetch(
            "SELECT stream_type, stream_key, data -> 'origins' AS origins, kind FROM events"
            " WHERE type = 'FrontendApiOriginsSet' ORDER BY position"
        )
    assert [tuple(r) for r in rows] == [
        ("setting", "unleash.frontend", f'["{APP}"]', "setting-updated"),
        ("setting", "unleash.frontend", '["*", "http://localhost:3000"]', "setting-updated"),
    ]


async def test_no_origin_at_all_may_be_set(client: Client) -> None:
    await ok(await client.post(CORS, json={"frontendApiOrigins": []}, headers=ADMIN), 204)
    assert await origins_shown(client) == []
    assert await allowed(client, APP) is None


@pytest.mark.parametrize(
    "origin",
    [
        "app.example.com",
        "https://app.example.com/",
        "https://app.example.com/path",
        "https://*.example.com",
        "ftp://example.com",
        "https://APP.example.com",
        "",
    ],
)
async def test_what_is_no_origin_is_refused(
    client: Client, app: web.Application, origin: str
) -> None:
    resp = await client.post(CORS, json={"frontendApiOrigins": [APP, origin]}, headers=ADMIN)
    assert await error(resp, 400, "ValidationError") == f"Invalid origin: {origin}"
    assert await event_count(app, "FrontendApiOriginsSet") == 0
    assert await origins_shown(client) == ["*"]


@pytest.mark.parametrize(
    ("path", "body", "status", "name"),
    [
        (CORS, {}, 404, "NotFoundError"),  # as Unleash: no origins named
        ("/api/admin/ui-config", {}, 404, "NotFoundError"),
        ("/api/admin/ui-config", {"frontendSettings": {}}, 400, "ValidationError"),
        (CORS, {"frontendApiOrigins": "*"}, 400, "ValidationError"),
        (CORS, {"frontendApiOrigins": ["*"] * 101}, 400, "ValidationError"),
        (CORS, {"frontendApiOrigins": ["https://" + "a" * 300]}, 400, "ValidationError"),
    ],
)
async def test_malformed_bodies_are_refused(  # noqa: PLR0917 - pytest's parameters
    client: Client,
    app: web.Application,
    path: str,
    body: Any,
    status: int,
    name: str,
) -> None:
    await error(await client.post(path, json=body, headers=ADMIN), status, name)
    assert await event_count(app, "FrontendApiOriginsSet") == 0


async def test_only_admins_set_them(client: Client, app: web.Application) -> None:
    editor = await make_account(app, role=2)
    for path, body in (
        (CORS, {"frontendApiOrigins": [APP]}),
        ("/api/admin/ui-config", {"frontendSettings": {"frontendApiOrigins": [APP]}}),
    ):
        await error(
            await client.post(path, json=body, headers=editor.headers), 403, "NoAccessError"
        )
    assert await event_count(app, "FrontendApiOriginsSet") == 0


async def test_another_replica_follows_within_milliseconds(
    client: Client, settings: Settings, dsn: str, aiohttp_client: AiohttpClient
) -> None:
    other = await aiohttp_client(
        ServiceTestServer(create_app(settings, dsn, resolver=resolve_with_test_principals))
    )
    assert await allowed(other, APP) == "*"  # read there, and kept
    await ok(await client.post(CORS, json={"frontendApiOrigins": [APP]}, headers=ADMIN), 204)
    changed = time.monotonic()
    # Told by the feed (the log's NOTIFY), well before the bound of ORIGINS_SECONDS.
    while await allowed(other, "https://elsewhere.example.com") is not None:
        assert time.monotonic() - changed < ORIGINS_SECONDS / 2, "the old origins still hold"
        await asyncio.sleep(0.005)
    assert await origins_shown(other) == [APP]


_HOST = st.from_regex(r"[a-z][a-z0-9-]{0,20}(\.[a-z][a-z0-9]{0,10}){0,2}", fullmatch=True)
_ORIGIN = st.builds(
    lambda scheme, host, port: f"{scheme}://{host}" + ("" if port is None else f":{port}"),
    st.sampled_from(["http", "https"]),
    _HOST,
    st.none() | st.integers(1, 65535).filter(lambda p: p not in (80, 443)),
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(origins=st.lists(_ORIGIN | st.just("*"), max_size=5))
async def test_every_origin_is_taken_and_shown_as_sent(client: Client, origins: list[str]) -> None:
    await ok(await client.post(CORS, json={"frontendApiOrigins": origins}, headers=ADMIN), 204)
    assert await origins_shown(client) == origins


async def test_the_settings_rebuild_from_the_log(client: Client, app: web.Application) -> None:
    await ok(await client.post(CORS, json={"frontendApiOrigins": [APP]}, headers=ADMIN), 204)
    await ok(
        await client.post("/api/admin/maintenance", json={"enabled": True}, headers=ADMIN), 204
    )
    tables = "SELECT * FROM maintenance_mode UNION ALL SELECT id, NULL FROM frontend_settings"
    async with app[POOL].acquire() as conn:
        before = sorted(tuple(r) for r in await conn.fetch(tables))
        origins = await conn.fetchval("SELECT frontend_api_origins FROM frontend_settings")
        await conn.execute("DELETE FROM maintenance_mode; DELETE FROM frontend_settings")
        await replay(conn)
        assert sorted(tuple(r) for r in await conn.fetch(tables)) == before
        assert await conn.fetchval("SELECT frontend_api_origins FROM frontend_settings") == origins
        assert (await verify(conn)).ok
    assert before == [("maintenance.mode", True), ("unleash.frontend", None)]
    assert origins == [APP]


async def test_a_diff_of_the_instance_shows_the_settings(client: Client) -> None:
    await ok(await client.post(CORS, json={"frontendApiOrigins": [APP]}, headers=ADMIN), 204)
    await ok(
        await client.post("/api/admin/maintenance", json={"enabled": True}, headers=ADMIN), 204
    )
    diff = await ok(await client.get("/api/admin/audit/diff?from=0", headers=ADMIN))
    settings = [c for c in diff["changes"] if c["entity"] == "setting"]
    assert [(c["id"], c["change"]) for c in settings] == [
        ("maintenance.mode", "created"),
        ("unleash.frontend", "created"),
    ]
