"""The rest of a flag's page in Unleash's UI: the tag dialog's bulk edit, what the dependency
dialog reads, and the event log tab's search."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from projections.verify import verify
from service.appkeys import POOL
from tests.factories import ADMIN, FEATURES, create, error, event_count, ok

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

TAGS = "/api/admin/features/f/tags"


def tag(value: str) -> dict[str, str]:
    return {"type": "simple", "value": value}


# --- the tag dialog -----------------------------------------------------------------------------


async def test_the_bulk_edit_adds_what_is_missing_and_removes_what_is_there(
    client: Client, app: web.Application
) -> None:
    await ok(await create(client, {"name": "f", "tags": [tag("abc"), tag("old")]}), 200)
    body = {
        "addedTags": [tag("abc"), tag(" new1 "), tag("new1")],
        "removedTags": [tag("old"), tag("nothere")],
    }
    answered = await ok(await client.put(TAGS, json=body, headers=ADMIN))
    expected = {
        "version": 1,
        "tags": [
            {"value": "abc", "type": "simple", "color": "#FFFFFF"},
            {"value": "new1", "type": "simple", "color": "#FFFFFF"},
        ],
    }
    assert answered == expected
    assert await ok(await client.get(TAGS, headers=ADMIN)) == expected
    # Only changes are recorded: one tag added, one taken off.
    assert (await event_count(app, "FeatureTagged"), await event_count(app, "FeatureUntagged")) == (
        3,
        1,
    )
    assert (
        await ok(await client.put(TAGS, json={"addedTags": [], "removedTags": []}, headers=ADMIN))
        == expected
    )
    assert (await event_count(app, "FeatureTagged"), await event_count(app, "FeatureUntagged")) == (
        3,
        1,
    )
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        (
            {"addedTags": [tag("x")], "removedTags": []},
            400,
            "Tag value must be 2 to 50 characters - at `$.addedTags[0].value`",
        ),
        (
            {"addedTags": [{"type": "colour", "value": "red"}], "removedTags": []},
            400,
            "Tag type colour does not exist - at `$.addedTags[0].type`",
        ),
        (
            {"addedTags": [], "removedTags": [tag("x" * 51)]},
            400,
            "Tag value must be 2 to 50 characters - at `$.removedTags[0].value`",
        ),
        (
            {"addedTags": [tag("both")], "removedTags": [tag(" both")]},
            400,
            "The tag simple:both is both added and removed - at `$.removedTags`",
        ),
        ({"addedTags": []}, 400, "Object missing required field `removedTags`"),
    ],
)
async def test_a_bulk_edit_outside_the_rules_changes_nothing(
    client: Client, app: web.Application, body: Any, status: int, message: str
) -> None:
    await ok(await create(client, {"name": "f"}), 200)
    before = await event_count(app)
    resp = await client.put(TAGS, json=body, headers=ADMIN)
    assert (await error(resp, status, "ValidationError")).startswith(message)
    assert await event_count(app) == before


async def test_a_bulk_edit_needs_an_active_flag(client: Client) -> None:
    body = {"addedTags": [tag("abc")], "removedTags": []}
    resp = await client.put("/api/admin/features/nope/tags", json=body, headers=ADMIN)
    assert await error(resp, 404, "NotFoundError") == "There is no active flag named nope"


# --- the dependency dialog ---------------------------------------------------------------------

PROJECT = "/api/admin/projects/default"


async def test_the_parents_a_flag_may_have_and_their_variants(client: Client) -> None:
    for name in ("child", "b-parent", "a-parent", "other-child", "archived"):
        await ok(await create(client, {"name": name}), 200)
    assert (await client.delete(f"{FEATURES}/archived", headers=ADMIN)).status == 202
    await ok(await create(client, {"name": "elsewhere"}, "default"), 200)
    body = {"feature": "a-parent", "enabled": True}
    await ok(await client.post(f"{FEATURES}/other-child/dependencies", json=body, headers=ADMIN))
    # Active flags of the project, not itself, not one that depends on another; by name.
    options = await ok(await client.get(f"{FEATURES}/child/parents", headers=ADMIN))
    assert options == ["a-parent", "b-parent", "elsewhere"]
    # The parent's variants: its strategies' and its environments', each once, in order.
    strategy = {
        "name": "flexibleRollout",
        "variants": [
            {"name": "v", "weight": 1000, "weightType": "variable", "stickiness": "default"}
        ],
    }
    path = f"{FEATURES}/a-parent/environments/development"
    await ok(await client.post(f"{path}/strategies", json=strategy, headers=ADMIN))
    batch = {
        "variants": [{"name": "b"}, {"name": "a"}, {"name": "v"}],
        "environments": ["development", "production"],
    }
    await ok(await client.put(f"{FEATURES}/a-parent/variants-batch", json=batch, headers=ADMIN))
    variants = await ok(await client.get(f"{FEATURES}/a-parent/parent-variants", headers=ADMIN))
    assert variants == ["a", "b", "v"]
    # Names that are no active flag of the project have neither: the UI asks for the
    # project's own id in the flag's place on the project page, and Unleash answers [].
    for name in ("default", "archived", "nope"):
        assert await ok(await client.get(f"{FEATURES}/{name}/parent-variants", headers=ADMIN)) == []
        assert await ok(await client.get(f"{FEATURES}/{name}/parents", headers=ADMIN)) == []


async def test_whether_a_project_has_dependencies(client: Client) -> None:
    assert await ok(await client.get(f"{PROJECT}/dependencies", headers=ADMIN)) is False
    for name in ("child", "parent"):
        await ok(await create(client, {"name": name}), 200)
    body = {"feature": "parent"}
    await ok(await client.post(f"{FEATURES}/child/dependencies", json=body, headers=ADMIN))
    assert await ok(await client.get(f"{PROJECT}/dependencies", headers=ADMIN)) is True
    # Per project (Unleash answers for every project whichever is asked).
    nowhere = "/api/admin/projects/nowhere/dependencies"
    assert await ok(await client.get(nowhere, headers=ADMIN)) is False
    await ok(await client.delete(f"{FEATURES}/child/dependencies", headers=ADMIN))
    assert await ok(await client.get(f"{PROJECT}/dependencies", headers=ADMIN)) is False


# --- the event log tab --------------------------------------------------------------------------


async def test_the_event_log_tab_s_search_and_its_text_box(client: Client) -> None:
    await ok(await create(client, {"name": "f", "description": "Checkout"}), 200)
    await ok(await create(client, {"name": "g", "description": "checkout too"}), 200)
    patch = [{"op": "replace", "path": "/description", "value": "Basket"}]
    await ok(await client.patch(f"{FEATURES}/f", json=patch, headers=ADMIN))
    today = datetime.now(UTC).date()
    search = (
        f"/api/admin/search/events?from=IS:{today - timedelta(days=365)}&to=IS:{today}&feature=IS:f"
    )
    found = await ok(await client.get(f"{search}&offset=0&limit=25", headers=ADMIN))
    assert [e["type"] for e in found["events"]] == ["feature-metadata-updated", "feature-created"]
    assert found["total"] == 2
    # The text box: any case, in data, preData or tags; within the flag's events only.
    found = await ok(await client.get(f"{search}&query=CHECKOUT", headers=ADMIN))
    assert [e["type"] for e in found["events"]] == ["feature-metadata-updated", "feature-created"]
    found = await ok(await client.get(f"{search}&query=basket&limit=1&offset=0", headers=ADMIN))
    assert ([e["type"] for e in found["events"]], found["total"]) == (
        ["feature-metadata-updated"],
        1,
    )
    found = await ok(await client.get(f"{search}&query=nothing-like-it", headers=ADMIN))
    assert found == {"events": [], "total": 0}
    # Without one flag, the text box searches the stored data of every flag's events (the
    # event log page sends it so): both creations say "checkout".
    found = await ok(await client.get("/api/admin/search/events?query=checkout", headers=ADMIN))
    assert sorted(e["featureName"] for e in found["events"]) == ["f", "g"]
