"""A flag's page in Unleash's UI: its authors (createdBy, collaborators), the create dialog's
name check and tags, and editing with JSON Patch (docs/behavior.md, "Editing a flag")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from projections.replay import replay
from projections.verify import verify
from service.appkeys import POOL
from tests.factories import (
    ADMIN,
    ADMIN_AUTHOR,
    FEATURES,
    collaborator,
    create,
    error,
    event_count,
    make_account,
    ok,
)

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

VALIDATE = "/api/admin/features/validate"
NOT_PATCHABLE = (
    "`/{member}` cannot be changed: a flag's PATCH changes /description, /type, /stale,"
    " /impressionData - at `$[0].{at}`"
)


async def patch(client: Client, name: str, body: Any, headers: dict[str, str] = ADMIN) -> Any:
    return await client.patch(f"{FEATURES}/{name}", json=body, headers=headers)


async def flag_of(client: Client, name: str, query: str = "") -> dict[str, Any]:
    body: dict[str, Any] = await ok(await client.get(f"{FEATURES}/{name}{query}", headers=ADMIN))
    return body


# --- the name check of the create dialog --------------------------------------------------------


async def test_validate_answers_200_for_a_free_name_and_409_for_a_taken_one(
    client: Client, app: web.Application
) -> None:
    resp = await client.post(VALIDATE, json={"name": "free", "projectId": "default"}, headers=ADMIN)
    assert resp.status == 200
    assert await resp.read() == b""
    await ok(await create(client, {"name": "taken"}))
    await ok(await create(client, {"name": "old"}))
    assert (await client.delete(f"{FEATURES}/old", headers=ADMIN)).status == 202
    before = await event_count(app)
    for name, message in [
        ("taken", "A flag with that name already exists"),
        ("old", "An archived flag with that name already exists"),
    ]:
        resp = await client.post(VALIDATE, json={"name": name}, headers=ADMIN)
        assert await error(resp, 409, "NameExistsError") == message
    assert await event_count(app) == before  # a check records nothing


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"name": ""}, "Name must not be empty - at `$.name`"),
        ({"name": "with space"}, "Name may only contain letters, digits and - _ . ! ~ * ' ( )"),
        ({"name": ".."}, "Name may only contain letters"),
        ({"name": "x" * 101}, "Name must be at most 100 characters - at `$.name`"),
        ({"name": 123}, "Expected `str`, got `int` - at `$.name`"),
        ({}, "Object missing required field `name`"),
    ],
)
async def test_validate_refuses_what_create_refuses(
    client: Client, body: Any, message: str
) -> None:
    resp = await client.post(VALIDATE, json=body, headers=ADMIN)
    assert (await error(resp, 400, "ValidationError")).startswith(message)


# --- creating with tags -------------------------------------------------------------------------


async def test_a_flag_created_with_tags_has_them_at_once(
    client: Client, app: web.Application
) -> None:
    body = {
        "name": "tagged",
        "type": "experiment",
        "description": "recorded",
        "impressionData": False,
        "tags": [
            {"type": "simple", "value": " zed "},
            {"type": "simple", "value": "abc"},
            {"type": "simple", "value": "zed"},
        ],
    }
    created = await ok(await create(client, body), 200)
    shown = [{"value": "abc", "type": "simple"}, {"value": "zed", "type": "simple"}]
    assert created["tags"] == shown
    assert await flag_of(client, "tagged") == created
    listed = await ok(await client.get("/api/admin/features/tagged/tags", headers=ADMIN))
    # The flag's tags route shows each tag's type's colour too, as Unleash's.
    assert listed == {"version": 1, "tags": [t | {"color": "#FFFFFF"} for t in shown]}
    assert await event_count(app, "FeatureTagged") == 2


@pytest.mark.parametrize(
    ("tags", "message"),
    [
        (
            [{"type": "simple", "value": "a"}],
            "Tag value must be 2 to 50 characters - at `$.tags[0].value`",
        ),
        (
            [{"type": "simple", "value": "ok"}, {"type": "colour", "value": "red"}],
            "Tag type colour does not exist - at `$.tags[1].type`",
        ),
    ],
)
async def test_a_create_with_a_bad_tag_creates_nothing(
    client: Client, app: web.Application, tags: list[dict[str, str]], message: str
) -> None:
    before = await event_count(app)
    resp = await create(client, {"name": "nope", "tags": tags})
    assert await error(resp, 400, "ValidationError") == message
    assert await event_count(app) == before
    await error(await client.get(f"{FEATURES}/nope", headers=ADMIN), 404, "NotFoundError")


# --- who made and changed it ----------------------------------------------------------------------


async def test_the_flag_shows_its_creator_and_its_collaborators_latest_first(
    client: Client, app: web.Application
) -> None:
    created = await ok(await create(client, {"name": "f"}), 200)
    assert created["createdBy"] == ADMIN_AUTHOR
    assert created["collaborators"] == {"users": [ADMIN_AUTHOR]}
    assert created["links"] == []
    editor = await make_account(app, role=2, username="erin")
    await ok(
        await patch(
            client, "f", [{"op": "replace", "path": "/stale", "value": True}], editor.headers
        )
    )
    erin = collaborator(editor.id, "erin", username="erin")
    shown = await flag_of(client, "f")
    assert (shown["createdBy"], shown["collaborators"]) == (
        ADMIN_AUTHOR,
        {"users": [erin, ADMIN_AUTHOR]},
    )
    # The admin token changes it again: it comes first, once; its creator stays.
    await ok(await patch(client, "f", [{"op": "replace", "path": "/stale", "value": False}]))
    shown = await flag_of(client, "f")
    assert shown["collaborators"] == {"users": [ADMIN_AUTHOR, erin]}
    assert shown["createdBy"] == ADMIN_AUTHOR
    # The UI's query parameter is read as it is: every environment shows its variants anyway.
    assert await flag_of(client, "f", "?variantEnvironments=true") == shown
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok
        await replay(conn)
    assert await flag_of(client, "f") == shown


async def test_a_past_read_shows_the_collaborators_of_then(
    client: Client, app: web.Application
) -> None:
    await ok(await create(client, {"name": "f"}), 200)
    async with app[POOL].acquire() as conn:
        position = await conn.fetchval("SELECT max(position) FROM events")
    editor = await make_account(app, role=2, username="erin")
    await ok(
        await patch(
            client, "f", [{"op": "add", "path": "/description", "value": "x"}], editor.headers
        )
    )
    then = await flag_of(client, "f", f"?at={position}")
    assert then["collaborators"] == {"users": [ADMIN_AUTHOR]}
    assert then["description"] is None
    assert (await flag_of(client, "f"))["description"] == "x"


async def test_an_account_that_is_gone_shows_as_unknown(
    client: Client, app: web.Application
) -> None:
    await ok(await create(client, {"name": "f"}), 200)
    editor = await make_account(app, role=2, username="gone")
    await ok(
        await patch(
            client, "f", [{"op": "replace", "path": "/type", "value": "permission"}], editor.headers
        )
    )
    assert (await client.delete(f"/api/admin/user-admin/{editor.id}", headers=ADMIN)).status == 200
    shown = await flag_of(client, "f")
    assert shown["collaborators"]["users"][0] == collaborator(editor.id, "unknown")


# --- editing with JSON Patch ----------------------------------------------------------------------


async def test_the_edit_form_s_patch_changes_type_and_description_in_one_event(
    client: Client, app: web.Application
) -> None:
    created = await ok(await create(client, {"name": "f", "type": "experiment"}), 200)
    body = [
        {"op": "replace", "path": "/type", "value": "release"},
        {"op": "replace", "path": "/description", "value": "recorded, edited"},
        {"op": "replace", "path": "/impressionData", "value": True},
    ]
    answered = await ok(await patch(client, "f", body))
    assert answered == created | {
        "type": "release",
        "description": "recorded, edited",
        "impressionData": True,
    }
    assert await flag_of(client, "f") == answered
    assert await event_count(app, "FeatureUpdated") == 1
    assert await event_count(app, "FeatureStaleSet") == 0
    events = await ok(
        await client.get(
            "/api/admin/search/events?feature=IS:f&type=IS:feature-metadata-updated", headers=ADMIN
        )
    )
    (event,) = events["events"]
    assert (event["type"], event["storedType"]) == ("feature-metadata-updated", "FeatureUpdated")
    assert event["data"] == {
        "name": "f",
        "project": "default",
        "description": "recorded, edited",
        "type": "release",
        "impressionData": True,
    }
    assert event["preData"] == {
        "name": "f",
        "project": "default",
        "description": None,
        "type": "experiment",
        "impressionData": False,
    }


async def test_marking_stale_through_patch_records_what_the_stale_route_records(
    client: Client, app: web.Application
) -> None:
    await ok(await create(client, {"name": "f"}), 200)
    answered = await ok(
        await patch(client, "f", [{"op": "replace", "path": "/stale", "value": True}])
    )
    assert answered["stale"] is True
    assert (
        await event_count(app, "FeatureStaleSet"),
        await event_count(app, "FeatureUpdated"),
    ) == (1, 0)
    # Again: no change, nothing recorded (Unleash records a metadata update each time).
    assert (
        await ok(await patch(client, "f", [{"op": "replace", "path": "/stale", "value": True}]))
    )["stale"]
    assert await event_count(app, "FeatureStaleSet") == 1
    events = await ok(await client.get("/api/admin/search/events?feature=IS:f", headers=ADMIN))
    assert [e["type"] for e in events["events"]] == ["feature-stale-on", "feature-created"]


async def test_removed_members_take_their_defaults_and_an_empty_description_is_null(
    client: Client,
) -> None:
    await ok(
        await create(
            client,
            {"name": "f", "type": "kill-switch", "description": "d", "impressionData": True},
        ),
        200,
    )
    answered = await ok(
        await patch(
            client,
            "f",
            [
                {"op": "remove", "path": "/description"},
                {"op": "remove", "path": "/type"},
                {"op": "remove", "path": "/impressionData"},
            ],
        )
    )
    assert (answered["description"], answered["type"], answered["impressionData"]) == (
        None,
        "release",
        False,
    )
    answered = await ok(
        await patch(client, "f", [{"op": "add", "path": "/description", "value": ""}])
    )
    assert answered["description"] is None


async def test_test_copy_and_move_work_within_the_fields(client: Client) -> None:
    await ok(await create(client, {"name": "f", "description": "old"}), 200)
    answered = await ok(
        await patch(
            client,
            "f",
            [
                {"op": "test", "path": "/name", "value": "f"},
                {"op": "test", "path": "/project", "value": "default"},
                {"op": "copy", "from": "/name", "path": "/description"},
            ],
        )
    )
    assert answered["description"] == "f"
    resp = await patch(client, "f", [{"op": "test", "path": "/description", "value": "old"}])
    assert (
        await error(resp, 400, "ValidationError")
        == "The value at `/description` differs - at `$[0]`"
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            [{"op": "replace", "path": "/name", "value": "g"}],
            NOT_PATCHABLE.format(member="name", at="path"),
        ),
        (
            [{"op": "replace", "path": "/archived", "value": True}],
            NOT_PATCHABLE.format(member="archived", at="path"),
        ),
        (
            [{"op": "add", "path": "/variants", "value": []}],
            (
                "Variants are changed per environment: PATCH or PUT .../environments/"
                ":environment/variants - at `$[0].path`"
            ),
        ),
        (
            [{"op": "move", "from": "/name", "path": "/description"}],
            NOT_PATCHABLE.format(member="name", at="from"),
        ),
        (
            [{"op": "replace", "path": "/stale", "value": "yes"}],
            "The patched flag is not valid: Expected `bool`, got `str` - at `$.stale`",
        ),
        (
            [{"op": "replace", "path": "/type", "value": "nonsense"}],
            "The patched flag is not valid: Invalid enum value 'nonsense' - at `$.type`",
        ),
        (
            [{"op": "replace", "path": "/description", "value": "x" * 10_001}],
            "The patched flag is not valid: Expected `str` of length <= 10000 - at `$.description`",
        ),
        (
            [{"op": "bogus", "path": "/stale", "value": True}],
            "Invalid enum value 'bogus' - at `$[0].op`",
        ),
        ({"op": "replace", "path": "/stale", "value": True}, "Expected `array`, got `object`"),
        ([{"op": "replace", "path": "/stale"}], "replace needs a `value` - at `$[0]`"),
        ([{"op": "remove", "path": "/nothing/here"}], "`/nothing/here` cannot be changed"),
    ],
)
async def test_a_patch_outside_the_rules_is_a_400_and_changes_nothing(
    client: Client, app: web.Application, body: Any, message: str
) -> None:
    await ok(await create(client, {"name": "f"}), 200)
    before = await event_count(app)
    assert (await error(await patch(client, "f", body), 400, "ValidationError")).startswith(message)
    assert await event_count(app) == before


async def test_a_patch_needs_an_active_flag_of_the_project(client: Client) -> None:
    body = [{"op": "replace", "path": "/stale", "value": True}]
    await error(await patch(client, "nope", body), 404, "NotFoundError")
    await ok(await create(client, {"name": "f"}), 200)
    resp = await client.patch("/api/admin/projects/other/features/f", json=body, headers=ADMIN)
    await error(resp, 404, "NotFoundError")
    assert (await client.delete(f"{FEATURES}/f", headers=ADMIN)).status == 202
    message = await error(await patch(client, "f", body), 404, "NotFoundError")
    assert message == "There is no active flag named f in project default"
    # The path rule comes first: a patch no flag could take is a 400 whatever the flag.
    resp = await patch(client, "nope", [{"op": "add", "path": "/name", "value": "x"}])
    await error(resp, 400, "ValidationError")


async def test_a_viewer_cannot_patch(client: Client, app: web.Application) -> None:
    await ok(await create(client, {"name": "f"}), 200)
    viewer = await make_account(app, role=3)
    body = [{"op": "replace", "path": "/stale", "value": True}]
    await error(await patch(client, "f", body, viewer.headers), 403, "NoAccessError")
    assert (await flag_of(client, "f"))["stale"] is False


PATCH_VALUE = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=8)
    | st.sampled_from(["kill-switch", "experiment", "", "x" * 10_001])
)
PATCH_OPERATION = st.fixed_dictionaries(
    {
        "op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test", "nope"]),
        "path": st.sampled_from(
            ["/description", "/type", "/stale", "/impressionData", "/name", "", "/a/b", "x"]
        ),
    },
    optional={
        "value": PATCH_VALUE | st.lists(PATCH_VALUE, max_size=2),
        "from": st.text(max_size=8),
    },
)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    body=st.lists(PATCH_OPERATION, max_size=4) | st.dictionaries(st.text(max_size=3), PATCH_VALUE)
)
async def test_any_patch_body_is_answered_200_or_400(client: Client, body: Any) -> None:
    """Never a 500; a 200 answers the flag as GET then shows it."""
    await create(client, {"name": "h"})  # 409 after the first example: the flag stays
    resp = await patch(client, "h", body)
    assert resp.status in {200, 400}, await resp.text()
    if resp.status == 200:
        assert await resp.json() == await flag_of(client, "h")
