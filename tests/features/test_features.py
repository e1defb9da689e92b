"""Creating a flag (docs/behavior.md, create a flag) and the flag surface around it, through
HTTP."""

from __future__ import annotations

import asyncio
import re
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eventlog import connections
from eventlog.events.projects import ProjectEnvironmentEnabled
from projections.verify import verify
from service import auth
from service.appkeys import POOL
from tests.conftest import as_principal
from tests.factories import (
    ADMIN,
    ADMIN_AUTHOR,
    FEATURES,
    ISO,
    append,
    create,
    error,
    event_count,
)

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

VALID_NAME = st.text(alphabet="ABCXYZabcxyz0189-_.!~*'()", min_size=1, max_size=100).filter(
    lambda n: n not in {".", ".."}
)


def environment(name: str, env_type: str, sort_order: int, feature: str) -> dict[str, Any]:
    return {
        "name": name,
        "featureName": feature,
        "environment": name,
        "type": env_type,
        "enabled": False,
        "sortOrder": sort_order,
        "variantCount": 0,
        "strategies": [],
        "variants": [],
        "lastSeenAt": None,
        "yes": 0,
        "no": 0,
        "hasStrategies": False,
        "hasEnabledStrategies": False,
    }


def expected_feature(name: str, created_at: str, **overrides: Any) -> dict[str, Any]:
    """The whole featureSchema body of a new flag in the default project."""
    return {
        "name": name,
        "type": "release",
        "description": None,
        "project": "default",
        "enabled": False,
        "stale": False,
        "potentiallyStale": False,
        "favorite": False,
        "impressionData": False,
        "archived": False,
        "createdAt": created_at,
        "archivedAt": None,
        "lastSeenAt": None,
        "environments": [
            environment("development", "development", 2, name),
            environment("production", "production", 3, name),
        ],
        "variants": [],
        "strategies": [],
        "tags": [],
        "children": [],
        "dependencies": [],
        "lifecycle": {"stage": "initial", "enteredStageAt": created_at},
        "createdBy": ADMIN_AUTHOR,
        "collaborators": {"users": [ADMIN_AUTHOR]},
        "links": [],
    } | overrides


async def test_create_answers_200_with_the_full_feature(
    client: Client, app: web.Application
) -> None:
    resp = await create(client, {"name": "new-checkout"})
    assert resp.status == 200
    body = await resp.json()
    assert ISO.match(body["createdAt"])
    assert body == expected_feature("new-checkout", body["createdAt"])
    assert datetime.fromisoformat(body["createdAt"]).tzinfo is not None
    assert await event_count(app, "FeatureCreated") == 1


async def test_get_shows_the_same_feature(client: Client) -> None:
    created = await (await create(client, {"name": "same", "type": "kill-switch"})).json()
    resp = await client.get(f"{FEATURES}/same", headers=ADMIN)
    assert resp.status == 200
    assert await resp.json() == created
    assert created["type"] == "kill-switch"


@pytest.mark.parametrize(
    "flag_type", ["experiment", "kill-switch", "release", "operational", "permission"]
)
async def test_every_flag_type_is_accepted(client: Client, flag_type: str) -> None:
    body = await (await create(client, {"name": "t", "type": flag_type})).json()
    assert body["type"] == flag_type


async def test_description_and_impression_data(client: Client) -> None:
    empty = await (await create(client, {"name": "a", "description": ""})).json()
    assert empty["description"] is None
    null = await (await create(client, {"name": "b", "description": None})).json()
    assert null["description"] is None
    full = await (
        await create(client, {"name": "c", "description": "Checkout v2", "impressionData": True})
    ).json()
    assert (full["description"], full["impressionData"]) == ("Checkout v2", True)


async def test_unknown_fields_are_ignored_never_honoured(client: Client) -> None:
    resp = await create(
        client,
        {
            "name": "sneaky",
            "createdAt": "2001-01-01T00:00:00Z",
            "archived": True,
            "stale": True,
            "project": "elsewhere",
            "enabled": True,
            "lifecycle": {"stage": "live"},
            "whatever": [1, 2],
        },
    )
    assert resp.status == 200
    body = await resp.json()
    assert body == expected_feature("sneaky", body["createdAt"])
    assert not body["createdAt"].startswith("2001")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "Object missing required field `name`"),
        ({"name": 7}, "Expected `str`, got `int` - at `$.name`"),
        ({"name": ""}, "Name must not be empty - at `$.name`"),
        ({"name": "a b"}, "Name may only contain"),
        ({"name": "."}, "Name may only contain"),
        ({"name": ".."}, "Name may only contain"),
        ({"name": "x" * 101}, "Name must be at most 100 characters"),
        ({"name": "ok", "type": "toggle"}, "Invalid enum value 'toggle' - at `$.type`"),
        ({"name": "ok", "type": None}, "Expected `str`, got `null` - at `$.type`"),
        (
            {"name": "ok", "impressionData": "yes"},
            "Expected `bool`, got `str` - at `$.impressionData`",
        ),
        ({"name": "ok", "description": 5}, "Expected `str | null`, got `int` - at `$.description`"),
    ],
)
async def test_bad_bodies_are_400_and_write_nothing(
    client: Client, app: web.Application, body: dict[str, Any], message: str
) -> None:
    before = await event_count(app)
    assert (await error(await create(client, body), 400, "ValidationError")).startswith(message)
    assert await event_count(app) == before


async def test_malformed_json_is_400(client: Client) -> None:
    resp = await client.post(
        FEATURES, data=b'{"name": ', headers={**ADMIN, "Content-Type": "application/json"}
    )
    assert (await error(resp, 400, "ValidationError")).startswith("Malformed JSON")


async def test_the_order_401_403_415_400_404_409(client: Client) -> None:
    await create(client, {"name": "taken"})
    text = {"Content-Type": "text/plain"}
    no_create = as_principal(auth.READ)
    may_create = as_principal(auth.READ, auth.CREATE_FEATURE)
    # 401 beats everything
    resp = await client.post("/api/admin/projects/nope/features", data="x", headers=text)
    await error(resp, 401, "AuthenticationRequired")
    # 403 beats the content type and the body
    resp = await client.post(
        "/api/admin/projects/nope/features", data="x", headers={**text, **no_create}
    )
    await error(resp, 403, "NoAccessError")
    # 415 beats the body
    resp = await client.post(
        "/api/admin/projects/nope/features", data="x", headers={**text, **may_create}
    )
    await error(resp, 415, "ContentTypeerror")
    # 400 beats the missing project
    await error(
        await create(client, {"name": "a b"}, "nope", headers=may_create), 400, "ValidationError"
    )
    # 404 beats the taken name
    message = await error(
        await create(client, {"name": "taken"}, "nope", headers=may_create), 404, "NotFoundError"
    )
    assert message == "Project nope does not exist"
    # 409 last
    message = await error(
        await create(client, {"name": "taken"}, headers=may_create), 409, "NameExistsError"
    )
    assert message == "A flag with that name already exists"


async def test_names_are_unique_across_projects_and_the_archive(client: Client) -> None:
    resp = await client.post(
        "/api/admin/projects", json={"id": "other", "name": "Other"}, headers=ADMIN
    )
    assert resp.status == 201
    assert (await create(client, {"name": "shared"})).status == 200
    message = await error(await create(client, {"name": "shared"}, "other"), 409, "NameExistsError")
    assert message == "A flag with that name already exists"
    assert (await client.delete(f"{FEATURES}/shared", headers=ADMIN)).status == 202
    message = await error(await create(client, {"name": "shared"}, "other"), 409, "NameExistsError")
    assert message == "An archived flag with that name already exists"


async def test_names_are_case_sensitive(client: Client) -> None:
    assert (await create(client, {"name": "Flag"})).status == 200
    assert (await create(client, {"name": "flag"})).status == 200
    assert (await client.get(f"{FEATURES}/FLAG", headers=ADMIN)).status == 404


async def test_an_archived_project_takes_no_flags(client: Client) -> None:
    await client.post("/api/admin/projects", json={"id": "gone", "name": "Gone"}, headers=ADMIN)
    assert (await client.delete("/api/admin/projects/gone", headers=ADMIN)).status == 200
    message = await error(await create(client, {"name": "x"}, "gone"), 404, "NotFoundError")
    assert message == "Project gone does not exist"


async def test_get_is_404_outside_the_flags_project(client: Client) -> None:
    await client.post("/api/admin/projects", json={"id": "other", "name": "Other"}, headers=ADMIN)
    await create(client, {"name": "mine"})
    resp = await client.get("/api/admin/projects/other/features/mine", headers=ADMIN)
    await error(resp, 404, "NotFoundError")
    await error(await client.get(f"{FEATURES}/missing", headers=ADMIN), 404, "NotFoundError")


async def test_list_shows_active_flags_of_the_project(client: Client) -> None:
    a = await (await create(client, {"name": "b-flag"})).json()
    b = await (await create(client, {"name": "a-flag"})).json()
    await create(client, {"name": "c-flag"})
    await client.delete(f"{FEATURES}/c-flag", headers=ADMIN)
    resp = await client.get(FEATURES, headers=ADMIN)
    assert resp.status == 200
    assert await resp.json() == {"version": 1, "features": [b, a]}
    await error(
        await client.get("/api/admin/projects/nope/features", headers=ADMIN), 404, "NotFoundError"
    )


async def test_archive_and_revive(client: Client, app: web.Application) -> None:
    created = await (await create(client, {"name": "old"})).json()
    resp = await client.delete(f"{FEATURES}/old", headers=ADMIN)
    assert resp.status == 202
    archived = await (await client.get(f"{FEATURES}/old", headers=ADMIN)).json()
    assert ISO.match(archived["archivedAt"])
    assert archived == created | {
        "archived": True,
        "archivedAt": archived["archivedAt"],
        "lifecycle": {"stage": "archived", "enteredStageAt": archived["archivedAt"]},
    }
    await error(await client.delete(f"{FEATURES}/old", headers=ADMIN), 404, "NotFoundError")

    before = await event_count(app)
    resp = await client.post(
        "/api/admin/projects/default/revive", json={"features": ["old", "never"]}, headers=ADMIN
    )
    assert (await error(resp, 404, "NotFoundError")).startswith("No archived flag named never")
    assert await event_count(app) == before  # all or nothing

    resp = await client.post(
        "/api/admin/projects/default/revive", json={"features": ["old"]}, headers=ADMIN
    )
    assert resp.status == 200
    revived = await (await client.get(f"{FEATURES}/old", headers=ADMIN)).json()
    entered = revived["lifecycle"]["enteredStageAt"]
    assert revived == created | {"lifecycle": {"stage": "initial", "enteredStageAt": entered}}
    assert entered > created["createdAt"]
    types = ["FeatureCreated", "FeatureArchived", "FeatureRevived"]
    assert [await event_count(app, t) for t in types] == [1, 1, 1]


async def test_revive_body_is_validated(client: Client) -> None:
    bodies: list[dict[str, Any]] = [{}, {"features": []}, {"features": "old"}]
    for body in bodies:
        resp = await client.post("/api/admin/projects/default/revive", json=body, headers=ADMIN)
        await error(resp, 400, "ValidationError")


@pytest.mark.parametrize(
    ("method", "path", "body", "permission"),
    [
        ("POST", FEATURES, {"name": "p"}, auth.CREATE_FEATURE),
        ("DELETE", f"{FEATURES}/existing", None, auth.DELETE_FEATURE),
        (
            "POST",
            "/api/admin/projects/default/revive",
            {"features": ["existing"]},
            auth.UPDATE_FEATURE,
        ),
        ("POST", "/api/admin/projects", {"id": "p", "name": "P"}, auth.CREATE_PROJECT),
    ],
)
async def test_each_write_needs_its_permission(
    client: Client, method: str, path: str, body: Any, permission: str
) -> None:
    await create(client, {"name": "existing"})
    others = [
        p
        for p in (
            auth.READ,
            auth.CREATE_FEATURE,
            auth.UPDATE_FEATURE,
            auth.DELETE_FEATURE,
            auth.CREATE_PROJECT,
        )
        if p != permission
    ]
    resp = await client.request(method, path, json=body, headers=as_principal(*others))
    message = await error(resp, 403, "NoAccessError")
    assert permission in message
    resp = await client.request(method, path, json=body, headers=as_principal(permission))
    assert resp.status in {200, 201, 202, 404}


async def test_reads_need_any_admin_principal(client: Client) -> None:
    await create(client, {"name": "r"})
    reader = as_principal(auth.READ)
    for path in (
        FEATURES,
        f"{FEATURES}/r",
        "/api/admin/projects",
        "/api/admin/projects/default",
        "/api/admin/environments",
    ):
        assert (await client.get(path, headers=reader)).status == 200
        await error(await client.get(path, headers=as_principal()), 403, "NoAccessError")


async def test_fifty_concurrent_creates_of_one_name(client: Client, app: web.Application) -> None:
    responses = await asyncio.gather(*(create(client, {"name": "contested"}) for _ in range(50)))
    statuses = sorted(r.status for r in responses)
    assert statuses == [200] + [409] * 49
    for resp in responses:
        if resp.status == 409:
            assert (
                await error(resp, 409, "NameExistsError") == "A flag with that name already exists"
            )
    assert await event_count(app, "FeatureCreated") == 1
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(name=VALID_NAME)
async def test_every_valid_name_is_accepted_and_round_trips(client: Client, name: str) -> None:
    resp = await create(client, {"name": name})
    if resp.status == 409:  # hypothesis may draw a name twice in one database
        return
    assert resp.status == 200
    assert (await resp.json())["name"] == name
    got = await client.get(f"{FEATURES}/{name}", headers=ADMIN)
    assert got.status == 200
    assert (await got.json())["name"] == name


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.one_of(
        st.text(min_size=1, max_size=20).filter(
            lambda n: not re.fullmatch(r"[A-Za-z0-9\-_.!~*'()]+", n)
        ),
        st.text(alphabet="abc", min_size=101, max_size=150),
        st.sampled_from(["", ".", ".."]),
    )
)
async def test_every_invalid_name_is_400_and_writes_nothing(
    client: Client, app: web.Application, name: str
) -> None:
    before = await event_count(app)
    await error(await create(client, {"name": name}), 400, "ValidationError")
    assert await event_count(app) == before


async def test_flags_show_the_environments_their_project_enables(client: Client) -> None:
    await create(client, {"name": "envs"})
    resp = await client.post(
        "/api/admin/environments",
        json={"name": "staging", "type": "test", "sortOrder": 1},
        headers=ADMIN,
    )
    assert resp.status == 201

    def names(body: dict[str, Any]) -> list[str]:
        return [e["name"] for e in body["environments"]]

    body = await (await client.get(f"{FEATURES}/envs", headers=ADMIN)).json()
    assert names(body) == ["development", "production"]
    resp = await client.post(
        "/api/admin/projects/default/environments", json={"environment": "staging"}, headers=ADMIN
    )
    assert resp.status == 200
    body = await (await client.get(f"{FEATURES}/envs", headers=ADMIN)).json()
    assert body["environments"][0] == environment("staging", "test", 1, "envs")
    assert names(body) == ["staging", "development", "production"]
    resp = await client.delete(
        "/api/admin/projects/default/environments/development", headers=ADMIN
    )
    assert resp.status == 200
    body = await (await client.get(f"{FEATURES}/envs", headers=ADMIN)).json()
    assert names(body) == ["staging", "production"]


async def test_reporting_views_follow_the_flags(client: Client, app: web.Application) -> None:
    await create(client, {"name": "r1", "type": "experiment"})
    await create(client, {"name": "r2"})
    await client.delete(f"{FEATURES}/r2", headers=ADMIN)
    async with app[POOL].acquire() as conn:
        rows = await conn.fetch(
            "SELECT name, project, type, archived, lifecycle_stage FROM reporting.features "
            "ORDER BY name"
        )
        assert [tuple(r) for r in rows] == [
            ("r1", "default", "experiment", False, "initial"),
            ("r2", "default", "release", True, "archived"),
        ]
        row = await conn.fetchrow(
            "SELECT * FROM reporting.features_per_project WHERE project = 'default'"
        )
        assert row is not None
        assert dict(row) == {
            "project": "default",
            "project_name": "Default",
            "project_archived": False,
            "active_features": 1,
            "archived_features": 1,
        }


async def test_concurrent_archives_and_revives_of_one_flag(
    client: Client, app: web.Application
) -> None:
    await create(client, {"name": "contended"})
    deletes = await asyncio.gather(
        *(client.delete(f"{FEATURES}/contended", headers=ADMIN) for _ in range(20))
    )
    assert sorted(r.status for r in deletes) == [202] + [404] * 19
    body = {"features": ["contended"]}
    revives = await asyncio.gather(
        *(
            client.post("/api/admin/projects/default/revive", json=body, headers=ADMIN)
            for _ in range(20)
        )
    )
    assert sorted(r.status for r in revives) == [200] + [404] * 19
    assert [await event_count(app, t) for t in ("FeatureArchived", "FeatureRevived")] == [1, 1]


async def test_no_revive_into_an_archived_project(client: Client) -> None:
    await client.post("/api/admin/projects", json={"id": "p4", "name": "P4"}, headers=ADMIN)
    await create(client, {"name": "p4flag"}, "p4")
    await client.delete("/api/admin/projects/p4/features/p4flag", headers=ADMIN)
    assert (await client.delete("/api/admin/projects/p4", headers=ADMIN)).status == 200
    resp = await client.post(
        "/api/admin/projects/p4/revive", json={"features": ["p4flag"]}, headers=ADMIN
    )
    assert await error(resp, 404, "NotFoundError") == "Project p4 does not exist"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/admin/projects/%00"),
        ("GET", "/api/admin/projects/%00/features"),
        ("GET", f"{FEATURES}/x%00"),
        ("DELETE", f"{FEATURES}/%00"),
        ("DELETE", "/api/admin/projects/%00/environments/development"),
    ],
)
async def test_nul_in_a_path_names_nothing(client: Client, method: str, path: str) -> None:
    resp = await client.request(method, path, headers=ADMIN)
    await error(resp, 404, "NotFoundError")


async def test_messages_do_not_echo_huge_names(client: Client) -> None:
    name = "n" * 5_000
    resp = await client.get(f"{FEATURES}/{name}", headers=ADMIN)
    assert len(await error(resp, 404, "NotFoundError")) <= 500


async def test_a_create_answers_with_what_was_committed_while_it_waited(
    client: Client, app: web.Application, dsn: str
) -> None:
    """An environment enabled while a create waits for the project's row shows in the create's
    answer, as in a GET after it (the state is read after the lock, never with it)."""
    await client.post("/api/admin/projects", json={"id": "p", "name": "P"}, headers=ADMIN)
    await client.delete("/api/admin/projects/p/environments/production", headers=ADMIN)
    blocker = await connections.connect(dsn)
    try:
        tx = blocker.transaction()
        await tx.start()
        await blocker.execute("SELECT 1 FROM projects WHERE id = 'p' FOR UPDATE")
        enabled = ProjectEnvironmentEnabled(project_id="p", environment="production")
        await append(blocker, [enabled], stream=("project", "p"))
        creating = asyncio.create_task(create(client, {"name": "waited"}, "p"))
        await asyncio.sleep(0.3)
        await tx.commit()
        body = await (await creating).json()
    finally:
        await blocker.close()
    assert [e["name"] for e in body["environments"]] == ["development", "production"]
    got = await client.get("/api/admin/projects/p/features/waited", headers=ADMIN)
    assert await got.json() == body
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok
