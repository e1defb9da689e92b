"""Tags on flags, through HTTP."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from projections.verify import verify
from service.appkeys import POOL
from tests.factories import ADMIN, FEATURES, create, error, event_count

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

TAGS = "/api/admin/features/f/tags"


async def test_tag_lifecycle(client: Client, app: web.Application) -> None:
    await create(client, {"name": "f"})
    resp = await client.post(TAGS, json={"type": "simple", "value": "  team-a "}, headers=ADMIN)
    assert resp.status == 201
    assert await resp.json() == {"value": "team-a", "type": "simple"}
    await client.post(TAGS, json={"value": "ab"}, headers=ADMIN)  # type defaults to simple
    listed = await (await client.get(TAGS, headers=ADMIN)).json()
    assert listed == {
        "version": 1,
        "tags": [
            {"value": "ab", "type": "simple", "color": "#FFFFFF"},  # the type's colour
            {"value": "team-a", "type": "simple", "color": "#FFFFFF"},
        ],
    }
    feature = await (await client.get(f"{FEATURES}/f", headers=ADMIN)).json()
    assert feature["tags"] == [
        {"value": "ab", "type": "simple"},
        {"value": "team-a", "type": "simple"},
    ]
    resp = await client.post(TAGS, json={"value": "team-a"}, headers=ADMIN)
    await error(resp, 409, "ConflictError")
    assert (await client.delete(f"{TAGS}/simple/team-a", headers=ADMIN)).status == 200
    await error(await client.delete(f"{TAGS}/simple/team-a", headers=ADMIN), 404, "NotFoundError")
    feature = await (await client.get(f"{FEATURES}/f", headers=ADMIN)).json()
    assert feature["tags"] == [{"value": "ab", "type": "simple"}]
    assert [await event_count(app, t) for t in ("FeatureTagged", "FeatureUntagged")] == [2, 1]
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok


async def test_tags_are_validated(client: Client, app: web.Application) -> None:
    await create(client, {"name": "f"})
    before = await event_count(app)
    for body, message in [
        ({"value": "a"}, "Tag value must be 2 to 50 characters - at `$.value`"),
        ({"value": "x" * 51}, "Tag value must be 2 to 50 characters"),
        ({"value": "   a  "}, "Tag value must be 2 to 50 characters"),
        ({"type": "colour", "value": "red"}, "Tag type colour does not exist - at `$.type`"),
        ({}, "Object missing required field `value`"),
    ]:
        resp = await client.post(TAGS, json=body, headers=ADMIN)
        assert (await error(resp, 400, "ValidationError")).startswith(message)
    assert await event_count(app) == before
    resp = await client.post("/api/admin/features/nope/tags", json={"value": "ok"}, headers=ADMIN)
    await error(resp, 404, "NotFoundError")
    await error(
        await client.get("/api/admin/features/nope/tags", headers=ADMIN), 404, "NotFoundError"
    )


async def test_a_projects_flags_are_tagged_in_bulk_all_or_nothing(
    client: Client, app: web.Application
) -> None:
    for name in ("a", "b"):
        await create(client, {"name": name})
    await client.post("/api/admin/features/b/tags", json={"value": "old"}, headers=ADMIN)
    bulk = "/api/admin/projects/default/tags"
    change = {
        "addedTags": [{"type": "simple", "value": "team-x"}],
        "removedTags": [{"value": "old"}],
    }
    resp = await client.put(
        bulk, json={"features": ["a", "b", "nope"], "tags": change}, headers=ADMIN
    )
    await error(resp, 404, "NotFoundError")
    assert await event_count(app, "FeatureTagged") == 1  # nothing of the refused request
    resp = await client.put(bulk, json={"features": ["b", "a", "a"], "tags": change}, headers=ADMIN)
    assert resp.status == 200
    for name in ("a", "b"):
        listed = await (await client.get(f"/api/admin/features/{name}/tags", headers=ADMIN)).json()
        team_x = {"value": "team-x", "type": "simple", "color": "#FFFFFF"}
        assert listed == {"version": 1, "tags": [team_x]}
    assert [await event_count(app, t) for t in ("FeatureTagged", "FeatureUntagged")] == [3, 1]
    elsewhere = await client.put(
        "/api/admin/projects/other/tags", json={"features": ["a"], "tags": change}, headers=ADMIN
    )
    await error(elsewhere, 404, "NotFoundError")  # a flag of another project is not one of its
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok
