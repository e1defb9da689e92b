"""Favourites of flags and projects, per person (docs/behavior.md, "Favourites"): recorded as
events only when something changes, shown in the projects list and the flag table, gone with
the person, rebuilt by replay and checked by verify."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from projections.replay import replay
from projections.verify import verify
from service.appkeys import POOL
from tests.factories import ADMIN, USERS, error, event_count, flag, make_account, ok

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

PROJECTS = "/api/admin/projects"


def flag_favorites(name: str, project: str = "default") -> str:
    return f"{PROJECTS}/{project}/features/{name}/favorites"


async def favorite_names(client: Client, headers: dict[str, str]) -> list[str]:
    found = await ok(
        await client.get("/api/admin/search/features?favoritesFirst=true", headers=headers)
    )
    return [f["name"] for f in found["features"] if f["favorite"]]


async def test_a_flag_becomes_a_favourite_of_one_person_only(
    client: Client, app: web.Application
) -> None:
    await flag(client, "checkout")
    await flag(client, "search")
    alice, bob = await make_account(app, role=3), await make_account(app, role=2)
    assert await ok(await client.post(flag_favorites("checkout"), headers=alice.headers)) is None
    assert await favorite_names(client, alice.headers) == ["checkout"]
    assert await favorite_names(client, bob.headers) == []
    assert await event_count(app, "FeatureFavorited") == 1
    # Marking it again records nothing; unmarking what is not marked neither.
    await ok(await client.post(flag_favorites("checkout"), headers=alice.headers))
    await ok(await client.delete(flag_favorites("search"), headers=alice.headers))
    assert await event_count(app, "FeatureFavorited") == 1
    assert await event_count(app, "FeatureUnfavorited") == 0
    await ok(await client.delete(flag_favorites("checkout"), headers=alice.headers))
    assert await favorite_names(client, alice.headers) == []
    assert await event_count(app, "FeatureUnfavorited") == 1
    async with app[POOL].acquire() as conn:
        stored = await conn.fetch(
            "SELECT stream_type, stream_key, type, data::text AS data, project FROM events "
            "WHERE type IN ('FeatureFavorited', 'FeatureUnfavorited') ORDER BY position"
        )

    def data(kind: str) -> str:
        return (
            f'{{"name": "checkout", "type": "{kind}", "project": "default", "user_id": {alice.id}}}'
        )

    assert [tuple(r) for r in stored] == [
        ("feature", "checkout", "FeatureFavorited", data("FeatureFavorited"), "default"),
        ("feature", "checkout", "FeatureUnfavorited", data("FeatureUnfavorited"), "default"),
    ]


async def test_projects_become_favourites_and_the_list_says_so(
    client: Client, app: web.Application
) -> None:
    await ok(await client.post(PROJECTS, json={"id": "shop", "name": "Shop"}, headers=ADMIN))
    person = await make_account(app, role=3)
    await ok(await client.post(f"{PROJECTS}/shop/favorites", headers=person.headers))
    listed = await ok(await client.get(PROJECTS, headers=person.headers))
    assert {p["id"]: p["favorite"] for p in listed["projects"]} == {"default": False, "shop": True}
    by_token = await ok(await client.get(PROJECTS, headers=ADMIN))
    assert [p["favorite"] for p in by_token["projects"]] == [False, False]
    await ok(await client.delete(f"{PROJECTS}/shop/favorites", headers=person.headers))
    listed = await ok(await client.get(PROJECTS, headers=person.headers))
    assert [p["favorite"] for p in listed["projects"]] == [False, False]
    assert await event_count(app, "ProjectFavorited") == 1
    assert await event_count(app, "ProjectUnfavorited") == 1


async def test_what_does_not_exist_cannot_be_a_favourite(
    client: Client, app: web.Application
) -> None:
    await flag(client, "checkout")
    await ok(await client.post(PROJECTS, json={"id": "shop", "name": "Shop"}, headers=ADMIN))
    person = await make_account(app, role=1)
    missing = "Could not find feature flag with name {} in project {}"
    for method, path, message in [
        ("POST", flag_favorites("ghost"), missing.format("ghost", "default")),
        ("DELETE", flag_favorites("ghost"), missing.format("ghost", "default")),
        ("POST", flag_favorites("checkout", "shop"), missing.format("checkout", "shop")),
        ("POST", f"{PROJECTS}/ghost/favorites", "Project ghost does not exist"),
        ("DELETE", f"{PROJECTS}/ghost/favorites", "Project ghost does not exist"),
    ]:
        resp = await client.request(method, path, headers=person.headers)
        assert await error(resp, 404, "NotFoundError") == message
    # An archived project can leave one's favourites, not join them.
    await ok(await client.post(f"{PROJECTS}/shop/favorites", headers=person.headers))
    await ok(await client.delete(f"{PROJECTS}/shop", headers=ADMIN))
    resp = await client.post(f"{PROJECTS}/shop/favorites", headers=person.headers)
    await error(resp, 404, "NotFoundError")
    await ok(await client.delete(f"{PROJECTS}/shop/favorites", headers=person.headers))
    assert await event_count(app, "ProjectUnfavorited") == 1


async def test_api_tokens_and_service_accounts_have_no_favourites(
    client: Client, app: web.Application
) -> None:
    """Unleash answers an API token 500 (a favourite without a user id); ours 403."""
    await flag(client, "checkout")
    machine = await make_account(app, role=1, service=True)
    for headers in (ADMIN, machine.headers):
        for path in (flag_favorites("checkout"), f"{PROJECTS}/default/favorites"):
            await error(await client.post(path, headers=headers), 403, "NoAccessError")


async def test_a_deleted_person_leaves_no_favourites_and_replay_agrees(
    client: Client, app: web.Application
) -> None:
    await flag(client, "checkout")
    gone, stays = await make_account(app, role=3), await make_account(app, role=3)
    for person in (gone, stays):
        await ok(await client.post(flag_favorites("checkout"), headers=person.headers))
        await ok(await client.post(f"{PROJECTS}/default/favorites", headers=person.headers))
    await ok(await client.delete(f"{USERS}/{gone.id}", headers=ADMIN))
    query = (
        "SELECT 'flag', user_id, feature_name FROM favorite_features UNION ALL "
        "SELECT 'project', user_id, project_id FROM favorite_projects ORDER BY 1, 2"
    )
    async with app[POOL].acquire() as conn:
        rows = [tuple(r) for r in await conn.fetch(query)]
        assert rows == [("flag", stays.id, "checkout"), ("project", stays.id, "default")]
        await replay(conn)
        assert [tuple(r) for r in await conn.fetch(query)] == rows
        assert (await verify(conn)).ok


async def test_an_archived_flag_stays_a_favourite(client: Client, app: web.Application) -> None:
    await flag(client, "old")
    person = await make_account(app, role=3)
    await ok(await client.post(flag_favorites("old"), headers=person.headers))
    await ok(await client.delete(f"{PROJECTS}/default/features/old", headers=ADMIN), 202)
    found = await ok(
        await client.get("/api/admin/search/features?archived=IS:true", headers=person.headers)
    )
    assert [(f["name"], f["favorite"]) for f in found["features"]] == [("old", True)]
    await ok(await client.delete(flag_favorites("old"), headers=person.headers))
    found = await ok(
        await client.get("/api/admin/search/features?archived=IS:true", headers=person.headers)
    )
    assert [(f["name"], f["favorite"]) for f in found["features"]] == [("old", False)]


async def test_the_flag_itself_says_whose_favourite_it_is(
    client: Client, app: web.Application
) -> None:
    await flag(client, "checkout")
    person = await make_account(app, role=3)
    await ok(await client.post(flag_favorites("checkout"), headers=person.headers))
    path = f"{PROJECTS}/default/features/checkout"
    assert (await ok(await client.get(path, headers=person.headers)))["favorite"] is True
    assert (await ok(await client.get(path, headers=ADMIN)))["favorite"] is False
    other = await make_account(app, role=3)
    assert (await ok(await client.get(path, headers=other.headers)))["favorite"] is False
