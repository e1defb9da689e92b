"""Projects and environments through HTTP."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from projections.verify import verify
from service.appkeys import POOL
from tests.factories import ADMIN, ISO, create, error, ok

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

PROJECTS = "/api/admin/projects"


def env(name: str, env_type: str, sort_order: int, project_count: int) -> dict[str, Any]:
    return {
        "name": name,
        "type": env_type,
        "sortOrder": sort_order,
        "enabled": True,
        "protected": False,
        "requiredApprovals": None,
        "projectCount": project_count,
        "apiTokenCount": 0,
        "enabledToggleCount": 0,
    }


async def test_a_new_install_has_the_default_project(client: Client) -> None:
    body = await (await client.get(PROJECTS, headers=ADMIN)).json()
    created = body["projects"][0]["createdAt"]
    assert ISO.match(created)
    assert body == {
        "version": 1,
        "projects": [
            {
                "id": "default",
                "name": "Default",
                "description": "Default project",
                "health": 100,
                "featureCount": 0,
                "memberCount": 0,
                "createdAt": created,
                "archivedAt": None,
                "mode": "open",
                "lastReportedFlagUsage": None,
                "lastUpdatedAt": None,
                "owners": [{"ownerType": "system"}],
                "favorite": False,
            }
        ],
    }
    # Unleash's deprecated overview of one project: the overview's fields and its flags.
    await ok(await client.post(f"{PROJECTS}/default/features", json={"name": "f"}, headers=ADMIN))
    detail = await (await client.get(f"{PROJECTS}/default", headers=ADMIN)).json()
    assert detail["environments"] == [{"environment": "development"}, {"environment": "production"}]
    assert {
        k: detail[k] for k in ("name", "health", "defaultStickiness", "members", "version")
    } == {
        "name": "Default",
        "health": 100,
        "defaultStickiness": "default",
        "members": 0,
        "version": 1,
    }
    (flag,) = detail["features"]
    assert (flag["name"], flag["type"], flag["stale"]) == ("f", "release", False)
    assert "tags" not in flag  # only a flag with tags lists them, as Unleash
    tag = {"type": "simple", "value": "team"}
    await ok(await client.post("/api/admin/features/f/tags", json=tag, headers=ADMIN), 201)
    tagged = await ok(await client.get(f"{PROJECTS}/default", headers=ADMIN))
    assert tagged["features"][0]["tags"] == [tag]
    assert [(e["name"], e["enabled"], e["hasStrategies"]) for e in flag["environments"]] == [
        ("development", False, False),
        ("production", False, False),
    ]
    envs = await (await client.get("/api/admin/environments", headers=ADMIN)).json()
    assert envs == {
        "version": 1,
        "environments": [
            env("development", "development", 2, 1),
            env("production", "production", 3, 1),
        ],
    }


async def test_create_project(client: Client) -> None:
    resp = await client.post(
        PROJECTS, json={"id": "web", "name": "Web shop", "description": "", "x": 1}, headers=ADMIN
    )
    assert resp.status == 201
    body = await resp.json()
    assert body == {
        "id": "web",
        "name": "Web shop",
        "description": None,
        "createdAt": body["createdAt"],
        "archivedAt": None,
        "featureCount": 0,
        "mode": "open",
        "environments": [
            {"environment": "development", "type": "development", "sortOrder": 2},
            {"environment": "production", "type": "production", "sortOrder": 3},
        ],
    }
    shown = await ok(await client.get(f"{PROJECTS}/web", headers=ADMIN))
    assert (shown["name"], shown["createdAt"], shown["features"]) == (
        "Web shop",
        body["createdAt"],
        [],
    )
    message = await error(
        await client.post(PROJECTS, json={"id": "web", "name": "Again"}, headers=ADMIN),
        409,
        "NameExistsError",
    )
    assert message == "A project with id web already exists"


async def test_project_bodies_are_validated(client: Client) -> None:
    for body, message in [
        ({"name": "No id"}, "Object missing required field `id`"),
        ({"id": "a b", "name": "x"}, "Project id may only contain"),
        ({"id": "ok"}, "Object missing required field `name`"),
        ({"id": "ok", "name": ""}, "Expected `str` of length >= 1 - at `$.name`"),
    ]:
        resp = await client.post(PROJECTS, json=body, headers=ADMIN)
        assert (await error(resp, 400, "ValidationError")).startswith(message)


async def test_new_projects_get_every_environment(client: Client) -> None:
    await client.post("/api/admin/environments", json={"name": "qa", "type": "test"}, headers=ADMIN)
    await client.post(PROJECTS, json={"id": "later", "name": "Later"}, headers=ADMIN)
    detail = await (await client.get(f"{PROJECTS}/later", headers=ADMIN)).json()
    assert [e["environment"] for e in detail["environments"]] == ["development", "production", "qa"]
    default = await (await client.get(f"{PROJECTS}/default", headers=ADMIN)).json()
    assert [e["environment"] for e in default["environments"]] == ["development", "production"]


async def test_archive_an_empty_project_only(client: Client, app: web.Application) -> None:
    await client.post(PROJECTS, json={"id": "p1", "name": "P1"}, headers=ADMIN)
    await create(client, {"name": "busy"}, "p1")
    message = await error(
        await client.delete(f"{PROJECTS}/p1", headers=ADMIN), 409, "ConflictError"
    )
    assert "1 active flag" in message
    assert (
        await client.delete("/api/admin/projects/p1/features/busy", headers=ADMIN)
    ).status == 202
    assert (await client.delete(f"{PROJECTS}/p1", headers=ADMIN)).status == 200
    await error(await client.get(f"{PROJECTS}/p1", headers=ADMIN), 404, "NotFoundError")
    await error(await client.delete(f"{PROJECTS}/p1", headers=ADMIN), 404, "NotFoundError")
    listed = await (await client.get(PROJECTS, headers=ADMIN)).json()
    assert [p["id"] for p in listed["projects"]] == ["default"]
    await error(await client.delete(f"{PROJECTS}/default", headers=ADMIN), 409, "ConflictError")
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok


async def test_environments(client: Client) -> None:
    resp = await client.post(
        "/api/admin/environments", json={"name": "staging", "type": "test"}, headers=ADMIN
    )
    assert resp.status == 201
    assert await resp.json() == env("staging", "test", 4, 0)
    await error(
        await client.post(
            "/api/admin/environments", json={"name": "staging", "type": "test"}, headers=ADMIN
        ),
        409,
        "NameExistsError",
    )
    await error(
        await client.post(
            "/api/admin/environments", json={"name": "a b", "type": "test"}, headers=ADMIN
        ),
        400,
        "ValidationError",
    )
    enable = "/api/admin/projects/default/environments"
    assert (await client.post(enable, json={"environment": "staging"}, headers=ADMIN)).status == 200
    await error(
        await client.post(enable, json={"environment": "staging"}, headers=ADMIN),
        409,
        "NameExistsError",
    )
    await error(
        await client.post(enable, json={"environment": "nope"}, headers=ADMIN), 404, "NotFoundError"
    )
    await error(
        await client.post(
            "/api/admin/projects/nope/environments", json={"environment": "staging"}, headers=ADMIN
        ),
        404,
        "NotFoundError",
    )
    listed = await (await client.get("/api/admin/environments", headers=ADMIN)).json()
    assert listed["environments"][-1] == env("staging", "test", 4, 1)
    for name in ("staging", "development"):
        assert (await client.delete(f"{enable}/{name}", headers=ADMIN)).status == 200
    await error(await client.delete(f"{enable}/staging", headers=ADMIN), 404, "NotFoundError")
    message = await error(
        await client.delete(f"{enable}/production", headers=ADMIN), 400, "ValidationError"
    )
    assert message == "A project must always keep at least one enabled environment"


async def test_sort_order_is_bounded_and_defaults_safely(client: Client) -> None:
    url = "/api/admin/environments"
    resp = await client.post(
        url, json={"name": "big", "type": "t", "sortOrder": 1_000_000}, headers=ADMIN
    )
    assert resp.status == 201
    for bad in (2_147_483_647, 3_000_000_000, 1e23):
        resp = await client.post(
            url, json={"name": "huge", "type": "t", "sortOrder": bad}, headers=ADMIN
        )
        await error(resp, 400, "ValidationError")
    resp = await client.post(url, json={"name": "next", "type": "t"}, headers=ADMIN)
    assert (await resp.json())["sortOrder"] == 1_000_001
    await error(
        await client.post(url, json={"name": "next", "type": "t"}, headers=ADMIN),
        409,
        "NameExistsError",
    )
    await error(
        await client.post(url, json={"name": "bad env", "type": "t"}, headers=ADMIN),
        400,
        "ValidationError",
    )


async def test_concurrent_environment_toggles_queue(client: Client, app: web.Application) -> None:
    await client.post("/api/admin/environments", json={"name": "qa", "type": "test"}, headers=ADMIN)
    enable = "/api/admin/projects/default/environments"
    responses = await asyncio.gather(
        *(client.post(enable, json={"environment": "qa"}, headers=ADMIN) for _ in range(10))
    )
    assert sorted(r.status for r in responses) == [200] + [409] * 9
    disables = await asyncio.gather(
        *(
            client.delete(f"{enable}/{env}", headers=ADMIN)
            for env in ("qa", "development", "production") * 3
        )
    )
    assert sorted(r.status for r in disables).count(200) == 2  # one environment always stays
    detail = await (await client.get(f"{PROJECTS}/default", headers=ADMIN)).json()
    assert len(detail["environments"]) == 1
    async with app[POOL].acquire() as conn:
        enabled = await conn.fetchval(
            "SELECT count(*) FROM events WHERE type = 'ProjectEnvironmentEnabled'"
        )
    assert enabled == 1
