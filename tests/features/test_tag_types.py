"""Tag types and the tags of a type, through HTTP (docs/behavior.md, "Tag types and tags")."""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING, Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from projections.replay import replay
from projections.verify import verify
from service import auth
from service.appkeys import POOL
from tests.conftest import as_principal
from tests.factories import ADMIN, FEATURES, create, error, event_count, ok

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

TAG_TYPES = "/api/admin/tag-types"
TAGS = "/api/admin/tags"
SIMPLE = {
    "name": "simple",
    "description": "Used to simplify filtering of features",
    "icon": "#",
    "color": "#FFFFFF",
}
NAME_CHARACTERS = "ABCXYZabcxyz0189-_.!~*'()"


def tag_type(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "description": None, "icon": None, "color": None} | fields


async def test_a_new_install_has_the_simple_tag_type(client: Client) -> None:
    listed = await ok(await client.get(TAG_TYPES, headers=ADMIN))
    assert listed == {"version": 1, "tagTypes": [SIMPLE]}
    one = await ok(await client.get(f"{TAG_TYPES}/simple", headers=ADMIN))
    assert one == {"version": 1, "tagType": SIMPLE}


async def test_tag_type_lifecycle(client: Client, app: web.Application) -> None:
    body = {"name": "team", "description": "Owner", "icon": "people", "color": "#1a7f37"}
    created = await ok(await client.post(TAG_TYPES, json=body, headers=ADMIN), 201)
    assert created == body
    listed = await ok(await client.get(TAG_TYPES, headers=ADMIN))
    assert listed == {"version": 1, "tagTypes": [SIMPLE, body]}  # in the order of creation
    # PUT changes what it names; a field left out keeps its value, null clears it
    resp = await client.put(f"{TAG_TYPES}/team", json={"description": "Owners"}, headers=ADMIN)
    assert (resp.status, await resp.text()) == (200, "")
    resp = await client.put(f"{TAG_TYPES}/team", json={"icon": None}, headers=ADMIN)
    assert resp.status == 200
    one = await ok(await client.get(f"{TAG_TYPES}/team", headers=ADMIN))
    assert one == {
        "version": 1,
        "tagType": {"name": "team", "description": "Owners", "icon": None, "color": "#1a7f37"},
    }
    # the same values again record nothing
    before = await event_count(app, "TagTypeUpdated")
    await ok(await client.put(f"{TAG_TYPES}/team", json={"icon": None}, headers=ADMIN))
    assert (before, await event_count(app, "TagTypeUpdated")) == (2, 2)
    resp = await client.delete(f"{TAG_TYPES}/team", headers=ADMIN)
    assert (resp.status, await resp.text()) == (200, "")
    await error(await client.get(f"{TAG_TYPES}/team", headers=ADMIN), 404, "NotFoundError")
    await error(await client.delete(f"{TAG_TYPES}/team", headers=ADMIN), 404, "NotFoundError")
    # a deleted name can be taken again: a new tag type, nothing of the old one
    again = await ok(await client.post(TAG_TYPES, json={"name": "team"}, headers=ADMIN), 201)
    assert again == tag_type("team")
    assert [
        await event_count(app, t) for t in ("TagTypeCreated", "TagTypeUpdated", "TagTypeDeleted")
    ] == [3, 2, 1]  # simple's, at the first start, among them
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok


async def test_a_taken_name_is_a_409_and_validate_says_so(client: Client) -> None:
    await ok(await client.post(TAG_TYPES, json={"name": "team"}, headers=ADMIN), 201)
    message = await error(
        await client.post(TAG_TYPES, json={"name": "team"}, headers=ADMIN), 409, "NameExistsError"
    )
    assert message == "There already exists a tag type with the name team"
    resp = await client.post(f"{TAG_TYPES}/validate", json={"name": "team"}, headers=ADMIN)
    assert await error(resp, 409, "NameExistsError") == message
    body = {"name": "colour", "color": "#000000", "unknown": 1}
    valid = await ok(await client.post(f"{TAG_TYPES}/validate", json=body, headers=ADMIN))
    assert valid == {"valid": True, "tagType": tag_type("colour", color="#000000")}
    # validating creates nothing
    await error(await client.get(f"{TAG_TYPES}/colour", headers=ADMIN), 404, "NotFoundError")


async def test_concurrent_creates_of_one_name_make_one_tag_type(
    client: Client, app: web.Application
) -> None:
    answers = await asyncio.gather(
        *(client.post(TAG_TYPES, json={"name": "race"}, headers=ADMIN) for _ in range(8))
    )
    assert sorted(r.status for r in answers) == [201] + [409] * 7
    async with app[POOL].acquire() as conn:
        count = await conn.fetchval(
            "SELECT count(*) FROM events WHERE type = 'TagTypeCreated' AND data->>'name' = 'race'"
        )
    assert count == 1


async def test_tag_type_bodies_are_validated(client: Client, app: web.Application) -> None:
    before = await event_count(app)
    for body, message in [
        ({}, "Object missing required field `name`"),
        ({"name": "a"}, "Tag type name must be 2 to 50 characters - at `$.name`"),
        ({"name": "x" * 51}, "Tag type name must be 2 to 50 characters - at `$.name`"),
        ({"name": "a b"}, "Tag type name may only contain letters, digits"),
        ({"name": ".."}, "Tag type name may only contain letters, digits"),
        ({"name": "validate"}, "Tag type name validate is reserved - at `$.name`"),
        ({"name": "ok", "color": "red"}, "Expected `str` matching regex"),
        ({"name": "ok", "description": 5}, "Expected `str | null`, got `int` - at `$.description`"),
    ]:
        for path in (TAG_TYPES, f"{TAG_TYPES}/validate"):
            resp = await client.post(path, json=body, headers=ADMIN)
            assert (await error(resp, 400, "ValidationError")).startswith(message), (path, body)
    resp = await client.put(f"{TAG_TYPES}/simple", json={"color": "#12345"}, headers=ADMIN)
    await error(resp, 400, "ValidationError")
    # unlike Unleash, which answers 200 (and records an update of nothing)
    resp = await client.put(f"{TAG_TYPES}/nope", json={"description": "x"}, headers=ADMIN)
    assert await error(resp, 404, "NotFoundError") == "Could not find tag type nope"
    # /validate takes POST only (no tag type has that name)
    resp = await client.get(f"{TAG_TYPES}/validate", headers=ADMIN)
    await error(resp, 405, "MethodNotAllowedError")
    assert resp.headers["Allow"] == "POST"
    assert await event_count(app) == before


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.one_of(
        st.text(alphabet=NAME_CHARACTERS, min_size=2, max_size=50),
        st.text(min_size=0, max_size=60),
    )
)
async def test_a_name_is_accepted_exactly_when_the_rule_allows_it(
    client: Client, name: str
) -> None:
    allowed = (
        2 <= len(name) <= 50
        and re.fullmatch(r"[A-Za-z0-9\-_.!~*'()]+", name) is not None
        and name not in {"..", "validate"}
    )
    resp = await client.post(f"{TAG_TYPES}/validate", json={"name": name}, headers=ADMIN)
    if not allowed:
        await error(resp, 400, "ValidationError")
        return
    if name == "simple":
        await error(resp, 409, "NameExistsError")
        return
    assert await ok(resp) == {"valid": True, "tagType": tag_type(name)}


async def test_tagging_a_flag_needs_an_existing_tag_type(client: Client) -> None:
    await create(client, {"name": "f"})
    tags = "/api/admin/features/f/tags"
    resp = await client.post(tags, json={"type": "team", "value": "core"}, headers=ADMIN)
    assert await error(resp, 400, "ValidationError") == "Tag type team does not exist - at `$.type`"
    await ok(await client.post(TAG_TYPES, json={"name": "team"}, headers=ADMIN), 201)
    tagged = await ok(
        await client.post(tags, json={"type": "team", "value": "core"}, headers=ADMIN)
    )
    assert tagged == {"value": "core", "type": "team"}


async def test_deleting_a_tag_type_untags_every_flag(client: Client, app: web.Application) -> None:
    await ok(await client.post(TAG_TYPES, json={"name": "team"}, headers=ADMIN), 201)
    for name in ("a", "b"):
        await create(client, {"name": name})
        for tag in ({"type": "team", "value": "core"}, {"type": "simple", "value": "kept"}):
            await ok(await client.post(f"/api/admin/features/{name}/tags", json=tag, headers=ADMIN))
    await ok(await client.post(TAGS, json={"type": "team", "value": "unused"}, headers=ADMIN), 201)
    await ok(await client.delete(f"{FEATURES}/b", headers=ADMIN), 202)  # archived flags too
    await ok(await client.delete(f"{TAG_TYPES}/team", headers=ADMIN))
    for name in ("a", "b"):
        flag = await ok(await client.get(f"{FEATURES}/{name}", headers=ADMIN))
        assert flag["tags"] == [{"value": "kept", "type": "simple"}]
    assert await ok(await client.get(TAGS, headers=ADMIN)) == {
        "version": 1,
        "tags": [{"type": "simple", "value": "kept"}],
    }
    assert await ok(await client.get(f"{TAGS}/team", headers=ADMIN)) == {"version": 1, "tags": []}
    async with app[POOL].acquire() as conn:
        untagged = await conn.fetch(
            "SELECT stream_key, data->>'value' AS value FROM events"
            " WHERE type = 'FeatureUntagged' ORDER BY position"
        )
        assert [tuple(r) for r in untagged] == [("a", "core"), ("b", "core")]
        assert (await verify(conn)).ok
    # the flag's own event log shows the untagging, in Unleash's shape
    events = await ok(await client.get("/api/admin/events/a", headers=ADMIN))
    assert events["events"][0]["type"] == "feature-untagged"
    assert events["events"][0]["preData"] == {"type": "team", "value": "core"}


async def test_tags_of_a_type_exist_once_created_or_put_on_a_flag(
    client: Client, app: web.Application
) -> None:
    assert await ok(await client.get(TAGS, headers=ADMIN)) == {"version": 1, "tags": []}
    created = await ok(
        await client.post(TAGS, json={"type": "simple", "value": " beta "}, headers=ADMIN), 201
    )
    assert created == {"version": 1, "tag": {"type": "simple", "value": "beta"}}
    await create(client, {"name": "f"})
    tags = "/api/admin/features/f/tags"
    await ok(await client.post(tags, json={"value": "alpha"}, headers=ADMIN))
    await ok(await client.post(tags, json={"value": "beta"}, headers=ADMIN))
    await ok(await client.delete(f"{tags}/simple/alpha", headers=ADMIN))  # the tag stays
    expected = {
        "version": 1,
        "tags": [{"type": "simple", "value": "alpha"}, {"type": "simple", "value": "beta"}],
    }
    assert await ok(await client.get(TAGS, headers=ADMIN)) == expected
    assert await ok(await client.get(f"{TAGS}/simple", headers=ADMIN)) == expected
    assert await ok(await client.get(f"{TAGS}/nope", headers=ADMIN)) == {"version": 1, "tags": []}
    message = await error(
        await client.post(TAGS, json={"type": "simple", "value": "beta"}, headers=ADMIN),
        409,
        "NameExistsError",
    )
    assert message == "The tag simple:beta already exists"
    # unlike Unleash, whose answer to an unknown type is a 500
    resp = await client.post(TAGS, json={"type": "nope", "value": "beta"}, headers=ADMIN)
    assert await error(resp, 400, "ValidationError") == "Tag type nope does not exist - at `$.type`"
    resp = await client.post(TAGS, json={"type": "simple", "value": " a "}, headers=ADMIN)
    await error(resp, 400, "ValidationError")
    assert await event_count(app, "TagCreated") == 1
    async with app[POOL].acquire() as conn:
        await replay(conn)
        assert (await verify(conn)).ok
    assert await ok(await client.get(TAGS, headers=ADMIN)) == expected


async def test_permissions_as_unleash_gives_them(client: Client) -> None:
    """Editors hold the tag type permissions (as Unleash's Editor role); creating a tag takes
    what tagging a flag takes (unlike Unleash, where any token may)."""
    editor = auth.ROOT_ROLES[2].permissions
    assert {auth.CREATE_TAG_TYPE, auth.UPDATE_TAG_TYPE, auth.DELETE_TAG_TYPE} <= editor
    reader = as_principal(auth.READ)
    for method, path, body in [
        ("POST", TAG_TYPES, {"name": "team"}),
        ("PUT", f"{TAG_TYPES}/simple", {"description": "x"}),
        ("DELETE", f"{TAG_TYPES}/simple", None),
        ("POST", TAGS, {"type": "simple", "value": "beta"}),
    ]:
        resp = await client.request(method, path, json=body, headers=reader)
        await error(resp, 403, "NoAccessError")
    resp = await client.post(f"{TAG_TYPES}/validate", json={"name": "team"}, headers=reader)
    assert resp.status == 200
    may = as_principal(auth.READ, auth.CREATE_TAG_TYPE)
    await ok(await client.post(TAG_TYPES, json={"name": "team"}, headers=may), 201)


async def test_past_states_of_tag_types(client: Client, app: web.Application) -> None:
    async with app[POOL].acquire() as conn:
        position = await conn.fetchval("SELECT max(position) FROM events")
    await ok(await client.post(TAG_TYPES, json={"name": "team"}, headers=ADMIN), 201)
    await ok(await client.post(TAGS, json={"type": "team", "value": "core"}, headers=ADMIN), 201)
    then = await ok(await client.get(f"{TAG_TYPES}?at={position}", headers=ADMIN))
    assert then == {"version": 1, "tagTypes": [SIMPLE]}
    assert await ok(await client.get(f"{TAGS}/team?at={position}", headers=ADMIN)) == {
        "version": 1,
        "tags": [],
    }


async def test_the_event_log_shows_them_by_unleash_s_names(client: Client) -> None:
    await ok(await client.post(TAG_TYPES, json={"name": "team"}, headers=ADMIN), 201)
    await ok(await client.put(f"{TAG_TYPES}/team", json={"icon": "i"}, headers=ADMIN))
    await ok(await client.post(TAGS, json={"type": "team", "value": "core"}, headers=ADMIN), 201)
    await ok(await client.delete(f"{TAG_TYPES}/team", headers=ADMIN))
    await ok(
        await client.put(
            "/api/admin/feature-types/release/lifetime", json={"lifetimeDays": 9}, headers=ADMIN
        )
    )
    found = await ok(await client.get("/api/admin/search/events?limit=5", headers=ADMIN))
    shown = [(e["type"], e["storedType"], e["stream"], e["data"]) for e in found["events"]]
    created = shown[4][3]
    assert created.pop("createdAt")
    assert shown == [
        (
            "feature-type-updated",
            "FeatureTypeLifetimeChanged",
            "feature-type/release",
            {"id": "release", "lifetimeDays": 9},
        ),
        ("tag-type-deleted", "TagTypeDeleted", "tag-type/team", {"name": "team"}),
        ("tag-created", "TagCreated", "tag-type/team", {"type": "team", "value": "core"}),
        (
            "tag-type-updated",
            "TagTypeUpdated",
            "tag-type/team",
            {"name": "team", "description": None, "icon": "i", "color": None},
        ),
        (
            "tag-type-created",
            "TagTypeCreated",
            "tag-type/team",
            {"name": "team", "description": None, "icon": None, "color": None},
        ),
    ]
