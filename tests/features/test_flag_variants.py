"""A flag's environment variants as its Variants tab reads and writes them: one environment's
(GET, and PATCH with the JSON Patch the UI's dialog makes), and the same variants pushed to
several environments (variants-batch)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from projections.verify import verify
from service.appkeys import POOL
from tests.factories import ADMIN, FEATURES, create, error, event_count, ok

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

DEV = f"{FEATURES}/f/environments/development/variants"
PROD = f"{FEATURES}/f/environments/production/variants"
BATCH = f"{FEATURES}/f/variants-batch"
GREEN = {
    "name": "green",
    "weightType": "variable",
    "weight": 1000,
    "overrides": [],
    "stickiness": "default",
    "payload": {"type": "string", "value": "g"},
}


def shown(name: str, weight: int, **fields: Any) -> dict[str, Any]:
    """A variant as the answers show one: every field."""
    return {
        "name": name,
        "weight": weight,
        "weightType": "variable",
        "stickiness": "default",
        "payload": None,
        "overrides": [],
    } | fields


@pytest.fixture
async def flag(client: Client) -> None:
    await ok(await create(client, {"name": "f"}), 200)


async def variants_of(client: Client, path: str) -> Any:
    return await ok(await client.get(path, headers=ADMIN))


async def test_the_dialog_s_patches_add_and_edit_variants(
    client: Client, app: web.Application, flag: None
) -> None:
    """Unlike Unleash 6.10.1, which refuses environment variants on a flag that has none yet
    (403, "deprecated"): here the Variants tab works from the first variant on."""
    assert await variants_of(client, DEV) == {"version": 1, "variants": []}
    body: list[dict[str, Any]] = [{"op": "add", "path": "/0", "value": GREEN}]
    answered = await ok(await client.patch(DEV, json=body, headers=ADMIN))
    green = shown("green", 1000, payload={"type": "string", "value": "g"})
    assert answered == {"version": 1, "variants": [green]}
    body = [
        {"op": "replace", "path": "/0/weight", "value": 500},
        {"op": "add", "path": "/0/overrides", "value": []},
        {
            "op": "add",
            "path": "/1",
            "value": {
                "name": "yellow",
                "weightType": "variable",
                "weight": 500,
                "overrides": [],
                "stickiness": "default",
            },
        },
    ]
    answered = await ok(await client.patch(DEV, json=body, headers=ADMIN))
    both = [green | {"weight": 500}, shown("yellow", 500)]
    assert answered == {"version": 1, "variants": both}
    assert await variants_of(client, DEV) == answered
    flag_shown = await ok(await client.get(f"{FEATURES}/f?variantEnvironments=true", headers=ADMIN))
    assert [e["variants"] for e in flag_shown["environments"]] == [both, []]
    assert [e["variantCount"] for e in flag_shown["environments"]] == [2, 0]
    # Copying from development to production, as the page's menu does it: add operations.
    body = [{"op": "add", "path": f"/{i}", "value": v} for i, v in enumerate(both)]
    assert (await ok(await client.patch(PROD, json=body, headers=ADMIN)))["variants"] == both
    assert await event_count(app, "EnvironmentVariantsSet") == 3
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            [{"op": "add", "path": "/1", "value": GREEN}],
            "The path does not exist in the document - at `$[0].path`",
        ),
        (
            [{"op": "add", "path": "/-", "value": {"name": "x", "weight": "heavy"}}],
            "The patched variants are not valid: Expected `int`, got `str` - at `$[0].weight`",
        ),
        (
            [
                {
                    "op": "add",
                    "path": "/-",
                    "value": {"name": "x", "weightType": "fix", "weight": 1200},
                }
            ],
            "The patched variants are not valid: Expected `int` <= 1000 - at `$[0].weight`",
        ),
        (
            [
                {"op": "add", "path": "/-", "value": GREEN},
                {"op": "add", "path": "/-", "value": GREEN},
            ],
            "Variant names must be unique - at `$`",
        ),
        (
            [{"op": "replace", "path": "", "value": {"name": "x"}}],
            "The patched variants are not valid: Expected `array`, got `object`",
        ),
        (
            [
                {
                    "op": "add",
                    "path": "/-",
                    "value": {"name": "x", "weightType": "fix", "weight": 900},
                }
            ],
            "Variant weights must total 1000 (got 900) or include a variable variant - at `$`",
        ),
    ],
)
async def test_a_variants_patch_outside_the_rules_is_a_400(
    client: Client, app: web.Application, flag: None, body: Any, message: str
) -> None:
    before = await event_count(app)
    resp = await client.patch(DEV, json=body, headers=ADMIN)
    assert (await error(resp, 400, "ValidationError")).startswith(message)
    assert await event_count(app) == before


async def test_variants_need_the_flag_in_an_environment_of_its_project(
    client: Client, flag: None
) -> None:
    for path in (
        f"{FEATURES}/nope/environments/development/variants",
        f"{FEATURES}/f/environments/nowhere/variants",
        "/api/admin/projects/other/features/f/environments/development/variants",
    ):
        await error(await client.get(path, headers=ADMIN), 404, "NotFoundError")
        resp = await client.patch(path, json=[], headers=ADMIN)
        await error(resp, 404, "NotFoundError")


async def test_variants_batch_sets_the_same_variants_in_each_environment(
    client: Client, app: web.Application, flag: None
) -> None:
    body = {
        "variants": [
            {"name": "a", "weight": 500, "weightType": "variable", "stickiness": "default"},
            {
                "name": "b",
                "weightType": "fix",
                "weight": 300,
                "stickiness": "default",
                "payload": {"type": "string", "value": "x"},
                "overrides": [{"contextName": "userId", "values": ["1"]}],
            },
        ],
        "environments": ["production", "development", "production"],
    }
    answered = await ok(await client.put(BATCH, json=body, headers=ADMIN))
    expected = [
        shown("a", 700),
        shown(
            "b",
            300,
            weightType="fix",
            payload={"type": "string", "value": "x"},
            overrides=[{"contextName": "userId", "values": ["1"]}],
        ),
    ]
    assert answered == {"version": 1, "variants": expected}
    assert await variants_of(client, DEV) == answered
    assert await variants_of(client, PROD) == answered
    assert await event_count(app, "EnvironmentVariantsSet") == 2
    events = await ok(
        await client.get(
            "/api/admin/search/events?type=IS:feature-environment-variants-updated", headers=ADMIN
        )
    )
    assert sorted(e["environment"] for e in events["events"]) == ["development", "production"]
    # Nothing to push: every listed environment loses its variants.
    body = {"variants": [], "environments": ["development"]}
    assert await ok(await client.put(BATCH, json=body, headers=ADMIN)) == {
        "version": 1,
        "variants": [],
    }
    assert (await variants_of(client, PROD))["variants"] == expected
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        (
            {"variants": [], "environments": []},
            400,
            "No environments provided - at `$.environments`",
        ),
        ({"variants": []}, 400, "Object missing required field `environments`"),
        (
            {"variants": [{"name": "a"}], "environments": ["development", "nowhere"]},
            404,
            "Environment nowhere is not enabled in project default",
        ),
        (
            {"variants": [{"name": "a"}, {"name": "a"}], "environments": ["development"]},
            400,
            "Variant names must be unique - at `$`",
        ),
        (
            {"variants": [{"name": "a", "weight": 1001}], "environments": ["development"]},
            400,
            "Expected `int` <= 1000 - at `$.variants[0].weight`",
        ),
    ],
)
async def test_variants_batch_is_all_or_nothing(
    client: Client, app: web.Application, flag: None, *, body: Any, status: int, message: str
) -> None:
    before = await event_count(app)
    resp = await client.put(BATCH, json=body, headers=ADMIN)
    name = "ValidationError" if status == 400 else "NotFoundError"
    assert (await error(resp, status, name)).startswith(message)
    assert await event_count(app) == before
    resp = await client.put(
        f"{FEATURES}/nope/variants-batch",
        json={"variants": [], "environments": ["development"]},
        headers=ADMIN,
    )
    await error(resp, 404, "NotFoundError")


async def test_variants_are_stored_by_name_and_the_flag_shows_them_merged(
    client: Client, flag: None
) -> None:
    """As Unleash 6.10.1: an environment's variants are stored (and weighed by SDKs) by name,
    the remainder of the weights going to the first ones sent; the flag's GET shows the
    deprecated flag-level `variants` beside them, each name once, in its first place, with the
    last environment's variant; the project's list shows none."""
    sent = [{"name": n, "weightType": "variable", "weight": 0} for n in ("yellow", "blue", "red")]
    answered = await ok(await client.put(PROD, json=sent, headers=ADMIN))
    assert [(v["name"], v["weight"]) for v in answered["variants"]] == [
        ("blue", 333),
        ("red", 333),
        ("yellow", 334),
    ]
    await ok(await client.put(DEV, json=[GREEN | {"name": "red"}, GREEN], headers=ADMIN))
    found = await ok(await client.get(f"{FEATURES}/f", headers=ADMIN))
    assert [(v["name"], v["weight"]) for v in found["variants"]] == [
        ("green", 500),
        ("red", 333),
        ("blue", 333),
        ("yellow", 334),
    ]
    listed = await ok(await client.get(FEATURES, headers=ADMIN))
    assert [f.get("variants") for f in listed["features"]] == [[]]
