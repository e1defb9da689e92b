"""The rest of a flag's routes (issue 43): PUT of the flag, one environment, flag-level
variants, links and the lifecycle (docs/behavior.md, "A flag's lifecycle")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from projections.replay import replay
from projections.verify import verify
from service.appkeys import POOL
from tests.factories import ADMIN, FEATURES, ISO, create, error, event_count, make_account, ok

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]


async def get(client: Client, path: str, headers: dict[str, str] = ADMIN) -> Any:
    return await ok(await client.get(path, headers=headers))


async def kinds(app: web.Application, name: str) -> list[str]:
    async with app[POOL].acquire() as conn:
        rows = await conn.fetch(
            "SELECT kind FROM events WHERE stream_type = 'feature' AND stream_key = $1"
            " ORDER BY stream_version",
            name,
        )
    return [r["kind"] for r in rows]


async def rebuilt_equal(app: web.Application, client: Client, path: str) -> None:
    """What `path` shows is what a replay of the log rebuilds, and verify agrees."""
    before = await get(client, path)
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok
        await replay(conn)
    assert await get(client, path) == before


# --- PUT of a flag -----------------------------------------------------------------------------


async def test_put_replaces_the_fields_and_records_what_changed(
    client: Client, app: web.Application
) -> None:
    await ok(await create(client, {"name": "f", "description": "old", "type": "experiment"}))
    body = {"description": "new", "type": "operational", "impressionData": True, "stale": True}
    shown = await ok(await client.put(f"{FEATURES}/f", json=body, headers=ADMIN))
    assert (shown["description"], shown["type"], shown["impressionData"], shown["stale"]) == (
        "new",
        "operational",
        True,
        True,
    )
    assert (await kinds(app, "f"))[-2:] == ["feature-metadata-updated", "feature-stale-on"]
    before = await event_count(app)
    await ok(await client.put(f"{FEATURES}/f", json=body, headers=ADMIN))
    assert await event_count(app) == before  # the same fields: nothing recorded
    # left out: the defaults, as in Unleash
    shown = await ok(await client.put(f"{FEATURES}/f", json={}, headers=ADMIN))
    assert (shown["description"], shown["type"], shown["stale"]) == (None, "release", False)


async def test_put_with_archived_archives(client: Client, app: web.Application) -> None:
    await ok(await create(client, {"name": "f"}))
    shown = await ok(await client.put(f"{FEATURES}/f", json={"archived": True}, headers=ADMIN))
    assert shown["archived"] is True
    assert (await kinds(app, "f"))[-1] == "feature-archived"


@pytest.mark.parametrize(
    ("body", "status", "name"),
    [
        ({"type": "bogus"}, 400, "ValidationError"),
        ({"description": 3}, 400, "ValidationError"),
        ({"name": "othername", "type": "release"}, 400, "ValidationError"),
        ({"name": 123}, 400, "ValidationError"),
    ],
)
async def test_put_refuses_bad_bodies(
    client: Client, app: web.Application, body: Any, status: int, name: str
) -> None:
    await ok(await create(client, {"name": "f"}))
    before = await event_count(app)
    await error(await client.put(f"{FEATURES}/f", json=body, headers=ADMIN), status, name)
    assert await event_count(app) == before


async def test_put_may_name_the_flag_itself(client: Client) -> None:
    await ok(await create(client, {"name": "f"}))
    await ok(await client.put(f"{FEATURES}/f", json={"name": "f", "stale": True}, headers=ADMIN))
    assert (await ok(await client.get(f"{FEATURES}/f", headers=ADMIN)))["stale"] is True
    resp = await client.put(f"{FEATURES}/f", json={"name": "g"}, headers=ADMIN)
    assert (await error(resp, 400, "ValidationError")).startswith("Cannot change name")


async def test_put_of_no_flag_is_404_and_a_viewer_gets_403(
    client: Client, app: web.Application
) -> None:
    resp = await client.put(f"{FEATURES}/none", json={}, headers=ADMIN)
    await error(resp, 404, "NotFoundError")
    await ok(await create(client, {"name": "f"}))
    viewer = await make_account(app, role=3)
    resp = await client.put(f"{FEATURES}/f", json={}, headers=viewer.headers)
    await error(resp, 403, "NoAccessError")


# --- one environment, flag-level variants ------------------------------------------------------


async def test_one_environment_of_a_flag(client: Client) -> None:
    await ok(await create(client, {"name": "f"}))
    await ok(await client.post(f"{FEATURES}/f/environments/development/on", headers=ADMIN))
    shown = await get(client, f"{FEATURES}/f/environments/development")
    assert (shown["name"], shown["environment"], shown["enabled"]) == ("f", "development", True)
    assert [s["name"] for s in shown["strategies"]] == ["flexibleRollout"]
    resp = await client.get(f"{FEATURES}/f/environments/nowhere", headers=ADMIN)
    await error(resp, 404, "NotFoundError")
    resp = await client.get(f"{FEATURES}/none/environments/development", headers=ADMIN)
    await error(resp, 404, "NotFoundError")


VARIANT = {"name": "blue", "weight": 0, "weightType": "variable", "stickiness": "default"}


async def test_flag_level_variants_go_to_every_environment(
    client: Client, app: web.Application
) -> None:
    await ok(await create(client, {"name": "f"}))
    assert await get(client, f"{FEATURES}/f/variants") == {"version": 1, "variants": []}
    shown = await ok(await client.put(f"{FEATURES}/f/variants", json=[VARIANT], headers=ADMIN))
    assert [(v["name"], v["weight"]) for v in shown["variants"]] == [("blue", 1000)]
    flag = await get(client, f"{FEATURES}/f")
    assert {e["name"]: len(e["variants"]) for e in flag["environments"]} == {
        "development": 1,
        "production": 1,
    }
    green = VARIANT | {"name": "green"}
    patch = [{"op": "add", "path": "/1", "value": green}]
    shown = await ok(await client.patch(f"{FEATURES}/f/variants", json=patch, headers=ADMIN))
    assert [(v["name"], v["weight"]) for v in shown["variants"]] == [
        ("blue", 500),
        ("green", 500),
    ]
    production = await get(client, f"{FEATURES}/f/environments/production/variants")
    assert production["variants"] == shown["variants"]
    assert (await kinds(app, "f")).count("feature-environment-variants-updated") == 4
    resp = await client.put(f"{FEATURES}/none/variants", json=[VARIANT], headers=ADMIN)
    await error(resp, 404, "NotFoundError")
    resp = await client.put(f"{FEATURES}/f/variants", json=[{"name": 1}], headers=ADMIN)
    await error(resp, 400, "ValidationError")
    viewer = await make_account(app, role=3)
    resp = await client.put(f"{FEATURES}/f/variants", json=[VARIANT], headers=viewer.headers)
    await error(resp, 403, "NoAccessError")


# --- links -------------------------------------------------------------------------------------


async def test_links_are_added_changed_and_removed_as_events(
    client: Client, app: web.Application
) -> None:
    await ok(await create(client, {"name": "f"}))
    link = {"url": "https://example.com/pr/1", "title": "PR"}
    resp = await client.post(f"{FEATURES}/f/link", json=link, headers=ADMIN)
    assert resp.status == 204
    await ok(
        await client.post(f"{FEATURES}/f/link", json={"url": "http://b.example"}, headers=ADMIN),
        204,
    )
    links = (await get(client, f"{FEATURES}/f"))["links"]
    assert [(x["url"], x["title"]) for x in links] == [
        ("https://example.com/pr/1", "PR"),
        ("http://b.example", None),
    ]
    first = links[0]["id"]
    changed = {"url": "https://example.com/pr/2", "title": "PR 2"}
    await ok(await client.put(f"{FEATURES}/f/link/{first}", json=changed, headers=ADMIN), 204)
    await ok(await client.delete(f"{FEATURES}/f/link/{links[1]['id']}", headers=ADMIN), 204)
    shown = (await get(client, f"{FEATURES}/f"))["links"]
    assert shown == [{"id": first, "url": "https://example.com/pr/2", "title": "PR 2"}]
    assert (await kinds(app, "f"))[-4:] == [
        "feature-link-added",
        "feature-link-added",
        "feature-link-updated",
        "feature-link-removed",
    ]
    await rebuilt_equal(app, client, f"{FEATURES}/f")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"url": "javascript:alert(1)"}, "is not an absolute http or https URL"),
        ({"url": "/relative"}, "is not an absolute http or https URL"),
        ({"url": ""}, "at `$.url`"),
        ({"title": "x"}, "Object missing required field `url`"),
        ({"url": "https://a.example", "title": 5}, "at `$.title`"),
    ],
)
async def test_bad_links_are_refused(
    client: Client, app: web.Application, body: Any, message: str
) -> None:
    await ok(await create(client, {"name": "f"}))
    before = await event_count(app)
    resp = await client.post(f"{FEATURES}/f/link", json=body, headers=ADMIN)
    assert message in await error(resp, 400, "ValidationError")
    assert await event_count(app) == before


async def test_links_of_no_flag_or_another_flag_are_404_and_a_viewer_gets_403(
    client: Client, app: web.Application
) -> None:
    link = {"url": "https://a.example"}
    await error(
        await client.post(f"{FEATURES}/none/link", json=link, headers=ADMIN), 404, "NotFoundError"
    )
    await ok(await create(client, {"name": "f"}))
    await ok(await create(client, {"name": "g"}))
    await ok(await client.post(f"{FEATURES}/g/link", json=link, headers=ADMIN), 204)
    other = (await get(client, f"{FEATURES}/g"))["links"][0]["id"]
    resp = await client.put(f"{FEATURES}/f/link/{other}", json=link, headers=ADMIN)
    await error(resp, 404, "NotFoundError")
    await error(
        await client.delete(f"{FEATURES}/f/link/{other}", headers=ADMIN), 404, "NotFoundError"
    )
    viewer = await make_account(app, role=3)
    resp = await client.post(f"{FEATURES}/f/link", json=link, headers=viewer.headers)
    await error(resp, 403, "NoAccessError")


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    # Any text but NUL, which no string of the API may hold (docs/behavior.md), and lone
    # surrogates, which no JSON body carries as text (UTF-8 has none).
    title=st.one_of(
        st.none(), st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=50)
    ),
    path=st.text(alphabet="abc/-_.", max_size=20),
)
async def test_any_http_link_is_kept_as_given(client: Client, title: str | None, path: str) -> None:
    name = "h"
    if (await client.get(f"{FEATURES}/{name}", headers=ADMIN)).status == 404:
        await ok(await create(client, {"name": name}))
    url = f"https://example.com/{path}"
    await ok(
        await client.post(
            f"{FEATURES}/{name}/link", json={"url": url, "title": title}, headers=ADMIN
        ),
        204,
    )
    last = (await get(client, f"{FEATURES}/{name}"))["links"][-1]
    assert (last["url"], last["title"]) == (url, title or None)
    await ok(await client.delete(f"{FEATURES}/{name}/link/{last['id']}", headers=ADMIN), 204)


# --- the lifecycle -----------------------------------------------------------------------------


async def test_the_stages_follow_the_log(client: Client, app: web.Application) -> None:
    await ok(await create(client, {"name": "f"}))
    path = f"{FEATURES}/f/lifecycle"
    stages = await get(client, path)
    assert [s["stage"] for s in stages] == ["initial"]
    assert ISO.match(stages[0]["enteredStageAt"])
    await ok(await client.post(f"{FEATURES}/f/environments/development/on", headers=ADMIN))
    await ok(await client.post(f"{FEATURES}/f/environments/development/off", headers=ADMIN))
    await ok(await client.post(f"{FEATURES}/f/environments/development/on", headers=ADMIN))
    stages = await get(client, path)
    assert [s["stage"] for s in stages] == ["initial", "pre-live"]
    async with app[POOL].acquire() as conn:
        first_on = await conn.fetchval(
            "SELECT min(recorded_at) FROM events WHERE stream_key = 'f'"
            " AND type = 'FeatureEnvironmentEnabled'"
        )
    assert stages[1]["enteredStageAt"] == first_on.isoformat().replace("+00:00", "Z")
    assert (await get(client, f"{FEATURES}/f"))["lifecycle"]["stage"] == "pre-live"
    await ok(await client.post(f"{FEATURES}/f/environments/production/on", headers=ADMIN))
    assert [s["stage"] for s in await get(client, path)] == ["initial", "pre-live", "live"]
    body = {"status": "kept", "statusValue": "blue"}
    await ok(await client.post(f"{FEATURES}/f/lifecycle/complete", json=body, headers=ADMIN))
    stages = await get(client, path)
    assert stages[-1]["stage"] == "completed"
    assert stages[-1]["status"] == "kept"
    assert (await get(client, f"{FEATURES}/f"))["lifecycle"]["stage"] == "completed"
    before = await event_count(app)
    await ok(await client.post(f"{FEATURES}/f/lifecycle/complete", json=body, headers=ADMIN))
    assert await event_count(app) == before  # completed so already
    await rebuilt_equal(app, client, path)
    await ok(await client.post(f"{FEATURES}/f/lifecycle/uncomplete", headers=ADMIN))
    assert [s["stage"] for s in await get(client, path)] == ["initial", "pre-live", "live"]
    await ok(await client.post(f"{FEATURES}/f/lifecycle/uncomplete", headers=ADMIN))
    assert (await kinds(app, "f"))[-2:] == ["feature-completed", "feature-uncompleted"]
    assert (await client.delete(f"{FEATURES}/f", headers=ADMIN)).status == 202
    assert [s["stage"] for s in await get(client, path)][-1] == "archived"
    # revived: at `initial` again, as new
    resp = await client.post(
        "/api/admin/projects/default/revive", json={"features": ["f"]}, headers=ADMIN
    )
    await ok(resp, 200)
    assert [s["stage"] for s in await get(client, path)] == ["initial"]
    await rebuilt_equal(app, client, path)


async def test_the_counts_per_stage(client: Client) -> None:
    zero = {"initial": 0, "preLive": 0, "live": 0, "completed": 0, "archived": 0}
    assert await get(client, "/api/admin/lifecycle/count") == zero
    for name in ("a", "b", "c", "d"):
        await ok(await create(client, {"name": name}))
    await ok(await client.post(f"{FEATURES}/b/environments/development/on", headers=ADMIN))
    await ok(await client.post(f"{FEATURES}/c/environments/production/on", headers=ADMIN))
    done = {"status": "discarded"}
    await ok(await client.post(f"{FEATURES}/d/lifecycle/complete", json=done, headers=ADMIN))
    assert await get(client, "/api/admin/lifecycle/count") == {
        "initial": 1,
        "preLive": 1,
        "live": 1,
        "completed": 1,
        "archived": 0,
    }


@pytest.mark.parametrize(
    ("body", "message"),
    [({"status": "bogus"}, "at `$.status`"), ({}, "Object missing required field `status`")],
)
async def test_a_bad_completion_is_refused(
    client: Client, app: web.Application, body: Any, message: str
) -> None:
    await ok(await create(client, {"name": "f"}))
    before = await event_count(app)
    resp = await client.post(f"{FEATURES}/f/lifecycle/complete", json=body, headers=ADMIN)
    assert message in await error(resp, 400, "ValidationError")
    assert await event_count(app) == before


async def test_lifecycle_of_no_flag_is_404_and_a_viewer_cannot_complete(
    client: Client, app: web.Application
) -> None:
    await error(await client.get(f"{FEATURES}/none/lifecycle", headers=ADMIN), 404, "NotFoundError")
    resp = await client.post(
        f"{FEATURES}/none/lifecycle/complete", json={"status": "kept"}, headers=ADMIN
    )
    await error(resp, 404, "NotFoundError")
    await ok(await create(client, {"name": "f"}))
    viewer = await make_account(app, role=3)
    resp = await client.post(
        f"{FEATURES}/f/lifecycle/complete", json={"status": "kept"}, headers=viewer.headers
    )
    await error(resp, 403, "NoAccessError")
    await error(
        await client.post(f"{FEATURES}/f/lifecycle/uncomplete", headers=viewer.headers),
        403,
        "NoAccessError",
    )
