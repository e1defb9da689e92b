"""A project's pages in Unleash's UI (docs/behavior.md, "Projects in the UI"): the projects
list, a project's overview, status and flag creators, and the personal dashboard."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from service.appkeys import POOL
from tests.factories import ADMIN, ISO, error, flag, gravatar, make_account, ok

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

PROJECTS = "/api/admin/projects"
DASHBOARD = "/api/admin/personal-dashboard"


async def caught_up(app: web.Application) -> None:
    """The async read model of the projects' activity has every event."""
    async with app[POOL].acquire() as conn:
        for _ in range(200):
            behind = await conn.fetchval(
                "SELECT (SELECT position FROM log_head) - position FROM projection_checkpoints "
                "WHERE name = 'project_activity'"
            )
            if behind == 0:
                return
            await asyncio.sleep(0.05)
    raise AssertionError("project_activity did not catch up")


async def shop(client: Client, app: web.Application) -> Any:
    """Project shop: flags a (stale), b (experiment), c (archived); a person who made b."""
    await ok(await client.post(PROJECTS, json={"id": "shop", "name": "Shop"}, headers=ADMIN))
    await flag(client, "a", "shop")
    person = await make_account(app, role=2, email="bo@example.com")
    resp = await client.post(
        f"{PROJECTS}/shop/features",
        json={"name": "b", "type": "experiment"},
        headers=person.headers,
    )
    await ok(resp)
    await flag(client, "c", "shop")
    await ok(await client.delete(f"{PROJECTS}/shop/features/c", headers=ADMIN), 202)
    resp = await client.post(
        f"{PROJECTS}/shop/stale", json={"features": ["a"], "stale": True}, headers=ADMIN
    )
    await ok(resp, 202)
    await caught_up(app)
    return person


async def test_the_projects_list_shows_each_card(client: Client, app: web.Application) -> None:
    person = await shop(client, app)
    await ok(await client.post(f"{PROJECTS}/shop/favorites", headers=person.headers))
    await caught_up(app)
    listed = await ok(await client.get(PROJECTS, headers=person.headers))
    default, project = listed["projects"]
    async with app[POOL].acquire() as conn:
        last = await conn.fetchval(
            "SELECT recorded_at FROM events WHERE project = 'shop' ORDER BY position DESC LIMIT 1"
        )
    assert ISO.match(project["createdAt"])
    assert datetime.fromisoformat(project["lastUpdatedAt"]) == last
    assert project == {
        "name": "Shop",
        "id": "shop",
        "description": None,
        "health": 50,  # one of two active flags is stale
        "featureCount": 2,
        "memberCount": 0,
        "createdAt": project["createdAt"],
        "archivedAt": None,
        "mode": "open",
        "lastReportedFlagUsage": None,
        "lastUpdatedAt": project["lastUpdatedAt"],
        "owners": [{"ownerType": "system"}],
        "favorite": True,
    }
    assert (default["id"], default["favorite"]) == ("default", False)
    assert ISO.match(default["lastUpdatedAt"])  # its creation, at the install


async def test_a_project_overview(client: Client, app: web.Application) -> None:
    await shop(client, app)
    body = await ok(await client.get(f"{PROJECTS}/shop/overview", headers=ADMIN))
    assert ISO.match(body["createdAt"])
    assert body == {
        "stats": {
            "avgTimeToProdCurrentWindow": 0,
            "createdCurrentWindow": 3,
            "createdPastWindow": 0,
            "archivedCurrentWindow": 1,
            "archivedPastWindow": 0,
            "projectActivityCurrentWindow": 6,  # created, 3 flags, 1 archived, 1 stale
            "projectActivityPastWindow": 0,
            "projectMembersAddedCurrentWindow": 0,
        },
        "name": "Shop",
        "description": None,
        "mode": "open",
        "featureLimit": None,
        "featureNaming": {"pattern": None, "example": None, "description": None},
        "defaultStickiness": "default",
        "health": 50,
        "favorite": False,
        "updatedAt": None,
        "archivedAt": None,
        "createdAt": body["createdAt"],
        "onboardingStatus": {"status": "first-flag-created", "feature": "a"},
        "environments": [{"environment": "development"}, {"environment": "production"}],
        "featureTypeCounts": [{"type": "experiment", "count": 1}, {"type": "release", "count": 1}],
        "members": 0,
        "version": 1,
    }
    empty = await ok(await client.get(f"{PROJECTS}/default/overview", headers=ADMIN))
    assert empty["onboardingStatus"] == {"status": "onboarding-started"}
    await error(await client.get(f"{PROJECTS}/ghost/overview", headers=ADMIN), 404, "NotFoundError")


async def test_a_project_status_and_flag_creators(client: Client, app: web.Application) -> None:
    person = await shop(client, app)
    resp = await client.post(
        "/api/admin/api-tokens",
        json={"tokenName": "shop-sdk", "type": "client", "projects": ["shop"]},
        headers=ADMIN,
    )
    await ok(resp, 201)
    await caught_up(app)
    today = datetime.now(UTC).date().isoformat()
    body = await ok(await client.get(f"{PROJECTS}/shop/status", headers=ADMIN))
    assert body == {
        "resources": {"members": 0, "apiTokens": 1, "segments": 0},
        "activityCountByDate": [{"date": today, "count": 6}],
        "health": {"current": 50},
        "lifecycleSummary": {
            "initial": {"averageDays": None, "currentFlags": 2},
            "preLive": {"averageDays": None, "currentFlags": 0},
            "live": {"averageDays": None, "currentFlags": 0},
            "completed": {"averageDays": None, "currentFlags": 0},
            "archived": {"currentFlags": 1, "last30Days": 1},
        },
        "staleFlags": {"total": 1},
    }
    creators = await ok(await client.get(f"{PROJECTS}/shop/flag-creators", headers=ADMIN))
    assert creators == [
        {"id": -42, "name": "Unleash Admin Token User"},
        {"id": person.id, "name": f"user-{person.id}"},
    ]
    for page in ("status", "flag-creators"):
        resp = await client.get(f"{PROJECTS}/ghost/{page}", headers=ADMIN)
        await error(resp, 404, "NotFoundError")


async def test_the_personal_dashboard(client: Client, app: web.Application) -> None:
    person = await shop(client, app)
    await flag(client, "liked")
    await ok(
        await client.post(f"{PROJECTS}/default/features/liked/favorites", headers=person.headers)
    )
    await ok(await client.post(f"{PROJECTS}/shop/favorites", headers=person.headers))
    admin = await make_account(app, role=1, username="root")
    body = await ok(await client.get(DASHBOARD, headers=person.headers))
    assert body == {
        "projects": [
            {
                "id": "default",
                "name": "Default",
                "health": 100,
                "memberCount": 0,
                "featureCount": 1,
            },
            {"id": "shop", "name": "Shop", "health": 50, "memberCount": 0, "featureCount": 2},
        ],
        "flags": [
            {"name": "liked", "type": "release", "project": "default"},
            {"name": "b", "type": "experiment", "project": "shop"},
        ],
        "projectOwners": [],
        "admins": [
            {"id": admin.id, "name": "root", "username": "root", "imageUrl": gravatar("root")}
        ],
    }
    details = await ok(await client.get(f"{DASHBOARD}/shop", headers=person.headers))
    latest = details.pop("latestEvents")
    assert details == {
        "onboardingStatus": {"status": "first-flag-created", "feature": "a"},
        "owners": [{"ownerType": "system"}],
        "roles": [],
        "insights": {
            "avgHealthCurrentWindow": None,
            "avgHealthPastWindow": None,
            "totalFlags": 2,
            "potentiallyStaleFlags": 0,
            "staleFlags": 1,
            "activeFlags": 1,
            "health": 50,
        },
    }
    assert ISO.match(latest[0]["createdAt"])
    where = "in project **[shop](/projects/shop)**"
    assert [e["summary"] for e in latest] == [
        f"**user-{person.id}** recorded ProjectFavorited {where}",
        f"**admin** marked as stale **[a](/projects/shop/features/a)** {where}",
        f"**admin** archived **[c](/projects/shop/features/c)** {where}",
        f"**admin** created **[c](/projects/shop/features/c)** {where}",
        f"**user-{person.id}** created **[b](/projects/shop/features/b)** {where}",
        f"**admin** created **[a](/projects/shop/features/a)** {where}",
        f"**admin** recorded project-created {where}",
    ]
    assert latest[-1]["createdByImageUrl"] == gravatar("admin")
    resp = await client.get(f"{DASHBOARD}/ghost", headers=person.headers)
    assert await error(resp, 404, "NotFoundError") == 'No project with id "ghost" exists.'
    await error(await client.get(DASHBOARD, headers=ADMIN), 403, "NoAccessError")
