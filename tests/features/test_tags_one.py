"""One tag: GET and DELETE /api/admin/tags/{type}/{value} (docs/behavior.md, "Tag types and
tags"). A deletion takes the tag off every flag, each by an event of the flag's stream."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from projections.replay import replay
from projections.verify import verify
from service import auth
from service.appkeys import POOL
from tests.conftest import as_principal
from tests.factories import ADMIN, FEATURES, error, event_count, ok

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

TAGS = "/api/admin/tags"


async def tag_flag(client: Client, flag: str, tag_type: str, value: str) -> None:
    await ok(
        await client.post(
            f"/api/admin/features/{flag}/tags",
            json={"type": tag_type, "value": value},
            headers=ADMIN,
        ),
        201,
    )


async def test_one_tag_is_read_and_deleted_off_every_flag(
    client: Client, app: web.Application
) -> None:
    for flag in ("a", "b", "c"):
        await ok(await client.post(FEATURES, json={"name": flag}, headers=ADMIN), 200)
    await tag_flag(client, "a", "simple", "beta")
    await tag_flag(client, "b", "simple", "beta")
    await tag_flag(client, "b", "simple", "keep")
    await tag_flag(client, "c", "simple", "beta")
    await ok(await client.delete(f"{FEATURES}/c", headers=ADMIN), 202)  # archived: untagged too
    await ok(
        await client.post(TAGS, json={"type": "simple", "value": "lonely"}, headers=ADMIN), 201
    )
    one = await ok(await client.get(f"{TAGS}/simple/beta", headers=ADMIN))
    assert one == {"version": 1, "tag": {"type": "simple", "value": "beta"}}
    assert await ok(await client.get(f"{TAGS}/simple/lonely", headers=ADMIN)) == {
        "version": 1,
        "tag": {"type": "simple", "value": "lonely"},
    }
    untagged_before = await event_count(app, "FeatureUntagged")
    resp = await client.delete(f"{TAGS}/simple/beta", headers=ADMIN)
    assert (resp.status, await resp.text()) == (200, "")
    assert await event_count(app, "TagDeleted") == 1
    assert await event_count(app, "FeatureUntagged") == untagged_before + 3  # a, b and c
    await error(await client.get(f"{TAGS}/simple/beta", headers=ADMIN), 404, "NotFoundError")
    listed = await ok(await client.get(TAGS, headers=ADMIN))
    assert {"type": "simple", "value": "beta"} not in listed["tags"]
    assert {"type": "simple", "value": "keep"} in listed["tags"]
    keep = {"type": "simple", "value": "keep", "color": "#FFFFFF"}  # the type's colour
    for flag, left in (("a", []), ("b", [keep]), ("c", [])):
        tags = await ok(await client.get(f"/api/admin/features/{flag}/tags", headers=ADMIN))
        assert tags["tags"] == left
    # In the event log: each flag's untagging, then the tag's deletion, as Unleash names it.
    found = await ok(await client.get("/api/admin/search/events?limit=4", headers=ADMIN))
    shown = [(e["type"], e["stream"], e["data"], e["preData"]) for e in found["events"]]
    assert shown == [
        ("tag-deleted", "tag-type/simple", {"type": "simple", "value": "beta"}, None),
        ("feature-untagged", "feature/c", None, {"type": "simple", "value": "beta"}),
        ("feature-untagged", "feature/b", None, {"type": "simple", "value": "beta"}),
        ("feature-untagged", "feature/a", None, {"type": "simple", "value": "beta"}),
    ]
    # The tag can be made again.
    await ok(await client.post(TAGS, json={"type": "simple", "value": "beta"}, headers=ADMIN), 201)
    async with app[POOL].acquire() as conn:
        await replay(conn)
        assert (await verify(conn)).ok


async def test_a_missing_tag_is_a_404_and_records_nothing(
    client: Client, app: web.Application
) -> None:
    before = await event_count(app)
    for path in (f"{TAGS}/simple/none", f"{TAGS}/no-type/none"):
        await error(await client.get(path, headers=ADMIN), 404, "NotFoundError")
        await error(await client.delete(path, headers=ADMIN), 404, "NotFoundError")
    assert await event_count(app) == before


async def test_deleting_a_tag_takes_updating_flags_reading_takes_read(client: Client) -> None:
    await ok(await client.post(TAGS, json={"type": "simple", "value": "x1"}, headers=ADMIN), 201)
    reader = as_principal(auth.READ)
    assert (await ok(await client.get(f"{TAGS}/simple/x1", headers=reader)))["tag"]["value"] == "x1"
    await error(await client.delete(f"{TAGS}/simple/x1", headers=reader), 403, "NoAccessError")
    await error(await client.get(f"{TAGS}/simple/x1"), 401, "AuthenticationRequired")
    may = as_principal(auth.READ, auth.UPDATE_FEATURE)
    await ok(await client.delete(f"{TAGS}/simple/x1", headers=may))


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    made=st.sets(st.sampled_from(["v1", "v2", "v3", "v4"])),
    deleted=st.sampled_from(["v1", "v2", "v3", "v4"]),
)
async def test_deleting_one_value_leaves_the_others(
    client: Client, made: set[str], deleted: str
) -> None:
    existing = {
        t["value"] for t in (await ok(await client.get(f"{TAGS}/simple", headers=ADMIN)))["tags"]
    }
    for value in made - existing:
        await ok(
            await client.post(TAGS, json={"type": "simple", "value": value}, headers=ADMIN), 201
        )
    everything = existing | made
    resp = await client.delete(f"{TAGS}/simple/{deleted}", headers=ADMIN)
    assert resp.status == (200 if deleted in everything else 404)
    left = {
        t["value"] for t in (await ok(await client.get(f"{TAGS}/simple", headers=ADMIN)))["tags"]
    }
    assert left == everything - {deleted}
