"""POST /api/admin/projects/:projectId/stale: marking flags stale or not, as Unleash does."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from projections.verify import verify
from service.appkeys import POOL
from tests.conftest import as_principal
from tests.factories import ADMIN, FEATURES, create, error, event_count

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

STALE = "/api/admin/projects/default/stale"


async def stale(client: Client, names: list[str], value: bool, path: str = STALE) -> Any:
    return await client.post(path, json={"features": names, "stale": value}, headers=ADMIN)


async def is_stale(client: Client, name: str, project: str = "default") -> bool:
    path = f"/api/admin/projects/{project}/features/{name}"
    body = await (await client.get(path, headers=ADMIN)).json()
    return bool(body["stale"])


async def test_mark_stale_and_back_one_event_per_flag_that_changes(
    client: Client, app: web.Application
) -> None:
    for name in ("a", "b"):
        assert (await create(client, {"name": name})).status == 200
    resp = await stale(client, ["a", "b", "a"], value=True)
    assert resp.status == 202
    assert await resp.read() == b""
    assert [await is_stale(client, n) for n in ("a", "b")] == [True, True]
    assert await event_count(app, "FeatureStaleSet") == 2
    # Already stale: nothing changes, nothing is recorded.
    assert (await stale(client, ["a"], value=True)).status == 202
    assert await event_count(app, "FeatureStaleSet") == 2
    assert (await stale(client, ["a"], value=False)).status == 202
    assert [await is_stale(client, n) for n in ("a", "b")] == [False, True]
    assert await event_count(app, "FeatureStaleSet") == 3
    listed = await (await client.get(FEATURES, headers=ADMIN)).json()
    assert {f["name"]: f["stale"] for f in listed["features"]} == {"a": False, "b": True}
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok
        assert await conn.fetchval("SELECT stale FROM reporting.features WHERE name = 'b'")


async def test_unknown_names_are_ignored_and_archived_flags_are_marked(
    client: Client, app: web.Application
) -> None:
    await create(client, {"name": "old"})
    assert (await client.delete(f"{FEATURES}/old", headers=ADMIN)).status == 202
    assert (await stale(client, ["old", "no-such-flag"], value=True)).status == 202
    assert await is_stale(client, "old")
    assert (await stale(client, [], value=True)).status == 202
    assert await event_count(app, "FeatureStaleSet") == 1


async def test_a_flag_of_another_project_refuses_the_whole_request(
    client: Client, app: web.Application
) -> None:
    await client.post("/api/admin/projects", json={"id": "web", "name": "Web"}, headers=ADMIN)
    await create(client, {"name": "mine"})
    await create(client, {"name": "theirs"}, "web")
    message = await error(
        await stale(client, ["mine", "theirs"], value=True), 403, "InvalidOperationError"
    )
    assert message == (
        "The operation could not be completed. The features exist, but the provided project ids "
        '("web") does not match the project provided in request URL ("default").'
    )
    assert not await is_stale(client, "mine")
    assert await event_count(app, "FeatureStaleSet") == 0


async def test_bodies_and_permissions(client: Client) -> None:
    for body, message in [
        ({"features": ["a"]}, "Object missing required field `stale`"),
        ({"stale": True}, "Object missing required field `features`"),
        ({"features": "a", "stale": True}, "Expected `array`, got `str` - at `$.features`"),
        ({"features": ["a"], "stale": "yes"}, "Expected `bool`, got `str` - at `$.stale`"),
    ]:
        resp = await client.post(STALE, json=body, headers=ADMIN)
        assert await error(resp, 400, "ValidationError") == message
    resp = await client.post(
        STALE, json={"features": [], "stale": True}, headers=as_principal("READ")
    )
    await error(resp, 403, "NoAccessError")


async def test_concurrent_marks_of_one_flag_record_one_change(
    client: Client, app: web.Application
) -> None:
    await create(client, {"name": "contested"})
    responses = await asyncio.gather(*(stale(client, ["contested"], value=True) for _ in range(8)))
    assert {r.status for r in responses} == {202}
    assert await event_count(app, "FeatureStaleSet") == 1
