"""Cloning a flag (docs/behavior.md, clone a flag), through HTTP."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import pytest

import eventlog
from eventlog.events.features import FeatureCloned
from projections import features as features_projection
from projections import writes
from projections.verify import verify
from service import auth
from service.appkeys import POOL
from tests.conftest import as_principal
from tests.factories import ADMIN, FEATURES, create, error, event_count

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

STRATEGY = {
    "name": "flexibleRollout",
    "title": "Half",
    "constraints": [{"contextName": "userId", "operator": "IN", "values": ["a"]}],
    "parameters": {"rollout": "50", "stickiness": "default", "groupId": "src"},
    "variants": [{"name": "v", "weight": 0, "weightType": "variable", "stickiness": "default"}],
}


def clone_url(source: str = "src", project: str = "default") -> str:
    return f"/api/admin/projects/{project}/features/{source}/clone"


@pytest.fixture
async def source(client: Client) -> dict[str, Any]:
    """A flag with something of everything: strategies, variants, tags, a parent, a child."""
    for name in ("parent", "src", "kid"):
        await create(client, {"name": name, "type": "experiment", "description": "d"})
    base = f"{FEATURES}/src/environments"
    for env in ("development", "production"):
        for _ in range(2):
            resp = await client.post(f"{base}/{env}/strategies", json=STRATEGY, headers=ADMIN)
            assert resp.status == 200
    await client.put(f"{base}/development/variants", json=[{"name": "x"}], headers=ADMIN)
    await client.post(f"{base}/development/on", headers=ADMIN)
    await client.post("/api/admin/features/src/tags", json={"value": "team"}, headers=ADMIN)
    await client.post(f"{FEATURES}/src/dependencies", json={"feature": "parent"}, headers=ADMIN)
    body: dict[str, Any] = await (await client.get(f"{FEATURES}/src", headers=ADMIN)).json()
    return body


async def test_clone_copies_what_behavior_md_lists(
    client: Client, app: web.Application, source: dict[str, Any]
) -> None:
    resp = await client.post(clone_url(), json={"name": "copy"}, headers=ADMIN)
    assert resp.status == 200
    copy = await resp.json()
    assert copy == await (await client.get(f"{FEATURES}/copy", headers=ADMIN)).json()
    assert (copy["name"], copy["type"], copy["description"], copy["project"]) == (
        "copy",
        "experiment",
        "d",
        "default",
    )
    assert copy["lifecycle"] == {"stage": "initial", "enteredStageAt": copy["createdAt"]}
    assert copy["createdAt"] > source["createdAt"]
    assert (copy["enabled"], copy["archived"], copy["stale"]) == (False, False, False)
    assert copy["tags"] == [{"value": "team", "type": "simple"}]
    assert copy["dependencies"] == [{"feature": "parent", "enabled": True, "variants": []}]
    assert copy["children"] == []
    for mine, theirs in zip(copy["environments"], source["environments"], strict=True):
        assert mine["enabled"] is False  # a copy never goes live by itself
        assert mine["variants"] == theirs["variants"]
        assert len(mine["strategies"]) == len(theirs["strategies"]) == 2
        for s, t in zip(mine["strategies"], theirs["strategies"], strict=True):
            assert s["id"] != t["id"]
            assert uuid.UUID(s["id"])
            assert s["parameters"] == t["parameters"] | {"groupId": "copy"}
            same = ("name", "title", "disabled", "sortOrder", "constraints", "variants", "segments")
            assert {k: s[k] for k in same} == {k: t[k] for k in same}
            assert s["featureName"] == "copy"
    assert await event_count(app, "FeatureCloned") == 1
    parent = await (await client.get(f"{FEATURES}/parent", headers=ADMIN)).json()
    assert parent["children"] == ["copy", "src"]
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok


@pytest.mark.usefixtures("source")
async def test_replace_group_id_false_keeps_it(client: Client) -> None:
    body = {"name": "keep", "replaceGroupId": False}
    copy = await (await client.post(clone_url(), json=body, headers=ADMIN)).json()
    groups = {s["parameters"]["groupId"] for e in copy["environments"] for s in e["strategies"]}
    assert groups == {"src"}


@pytest.mark.usefixtures("source")
async def test_clone_into_another_project(client: Client) -> None:
    await client.post("/api/admin/projects", json={"id": "web", "name": "Web"}, headers=ADMIN)
    await client.delete("/api/admin/projects/web/environments/production", headers=ADMIN)
    resp = await client.post(clone_url(project="web"), json={"name": "elsewhere"}, headers=ADMIN)
    assert resp.status == 200
    copy = await resp.json()
    assert copy["project"] == "web"
    assert [e["name"] for e in copy["environments"]] == ["development"]
    assert len(copy["environments"][0]["strategies"]) == 2
    assert copy["dependencies"] == []  # its parent lives in another project
    got = await client.get("/api/admin/projects/web/features/elsewhere", headers=ADMIN)
    assert await got.json() == copy  # the answer, built from the event, is what GET shows


@pytest.mark.usefixtures("source")
async def test_clone_errors_in_order(client: Client, app: web.Application) -> None:
    before = await event_count(app)
    resp = await client.post(clone_url("nope", "nope"), json={}, headers=ADMIN)
    await error(resp, 400, "ValidationError")
    resp = await client.post(clone_url("nope", "nope"), json={"name": "a b"}, headers=ADMIN)
    assert await error(resp, 404, "NotFoundError") == "Could not find feature flag with name nope"
    resp = await client.post(clone_url("src", "nope"), json={"name": "a b"}, headers=ADMIN)
    assert await error(resp, 404, "NotFoundError") == "Project nope does not exist"
    resp = await client.post(clone_url(), json={"name": "a b"}, headers=ADMIN)
    assert (await error(resp, 400, "ValidationError")).startswith("Name may only contain")
    resp = await client.post(clone_url(), json={"name": "kid"}, headers=ADMIN)
    assert await error(resp, 409, "NameExistsError") == "A flag with that name already exists"
    await client.delete(f"{FEATURES}/kid", headers=ADMIN)
    resp = await client.post(clone_url(), json={"name": "kid"}, headers=ADMIN)
    assert (
        await error(resp, 409, "NameExistsError")
        == "An archived flag with that name already exists"
    )
    resp = await client.post(clone_url("kid"), json={"name": "fresh"}, headers=ADMIN)
    await error(resp, 404, "NotFoundError")  # an archived source
    resp = await client.post(clone_url(), data="x", headers={**ADMIN, "Content-Type": "text/plain"})
    await error(resp, 415, "ContentTypeerror")
    resp = await client.post(clone_url(), json={"name": "z"}, headers=as_principal(auth.READ))
    await error(resp, 403, "NoAccessError")
    assert await event_count(app) == before + 1  # only the archive of kid


async def test_the_clone_event_alone_rebuilds_the_copy(
    client: Client, app: web.Application, source: dict[str, Any]
) -> None:
    await client.post(clone_url(), json={"name": "copy"}, headers=ADMIN)
    tables = [t.name for t in features_projection.PROJECTION.tables]
    async with app[POOL].acquire() as conn, conn.transaction():
        (cloned,) = await eventlog.read_stream(conn, ("feature", "copy"))
        assert isinstance(cloned.event, FeatureCloned)
        assert cloned.event.source == "src"
        assert cloned.event.source_position == await eventlog.last_position(
            conn, ("feature", "src")
        )
        await conn.execute("CREATE SCHEMA only_clone")
        for table in tables:
            await conn.execute(
                f"CREATE TABLE only_clone.{table} (LIKE readmodel.{table} INCLUDING ALL)"
            )
        await conn.execute("SET LOCAL search_path = only_clone, public")
        await writes.execute(conn, features_projection.writes(cloned))
        await conn.execute("SET LOCAL search_path = readmodel, public")
        for table, key in [
            ("features", "name"),
            ("feature_environments", "feature_name"),
            ("feature_strategies", "feature_name"),
            ("feature_tags", "feature_name"),
            ("feature_dependencies", "child"),
        ]:
            live = await conn.fetch(
                f"SELECT * FROM readmodel.{table} WHERE {key} = 'copy' ORDER BY 1, 2"
            )
            rebuilt = await conn.fetch(f"SELECT * FROM only_clone.{table} ORDER BY 1, 2")
            assert [tuple(r) for r in rebuilt] == [tuple(r) for r in live], table
        await conn.execute("DROP SCHEMA only_clone CASCADE")
    assert source["name"] == "src"


async def test_a_clone_keeps_the_order_of_strategies_that_share_a_sort_order(
    client: Client,
) -> None:
    await create(client, {"name": "ord"})
    url = f"{FEATURES}/ord/environments/development/strategies"
    for i in range(5):
        body = {"name": "default", "title": f"s{i}", "sortOrder": 0}
        assert (await client.post(url, json=body, headers=ADMIN)).status == 200
    copy = await (await client.post(clone_url("ord"), json={"name": "ord-c"}, headers=ADMIN)).json()
    titles = [s["title"] for s in copy["environments"][0]["strategies"]]
    assert titles == ["s0", "s1", "s2", "s3", "s4"]
