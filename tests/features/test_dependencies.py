"""Parent dependencies between flags, through HTTP."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from projections.verify import verify
from service.appkeys import POOL
from tests.factories import ADMIN, FEATURES, create, error, event_count

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]


def deps(child: str) -> str:
    return f"{FEATURES}/{child}/dependencies"


@pytest.fixture
async def flags(client: Client) -> None:
    for name in ("parent", "child", "other", "grandchild"):
        assert (await create(client, {"name": name})).status == 200


@pytest.mark.usefixtures("flags")
async def test_add_and_remove_dependencies(client: Client, app: web.Application) -> None:
    body = {"feature": "parent", "enabled": True, "variants": ["blue"]}
    assert (await client.post(deps("child"), json=body, headers=ADMIN)).status == 200
    assert (
        await client.post(deps("other"), json={"feature": "parent"}, headers=ADMIN)
    ).status == 200
    child = await (await client.get(f"{FEATURES}/child", headers=ADMIN)).json()
    assert child["dependencies"] == [{"feature": "parent", "enabled": True, "variants": ["blue"]}]
    assert child["children"] == []
    parent = await (await client.get(f"{FEATURES}/parent", headers=ADMIN)).json()
    assert parent["children"] == ["child", "other"]
    assert parent["dependencies"] == []
    # adding the same parent again with other settings replaces the dependency; unchanged, it
    # is a 409 (so that concurrent identical adds give one success and one event)
    same = {"feature": "parent", "enabled": True, "variants": ["blue", "blue"]}
    message = await error(
        await client.post(deps("child"), json=same, headers=ADMIN), 409, "ConflictError"
    )
    assert message == "child already depends on parent with these settings"
    again = {"feature": "parent", "enabled": False}
    assert (await client.post(deps("child"), json=again, headers=ADMIN)).status == 200
    child = await (await client.get(f"{FEATURES}/child", headers=ADMIN)).json()
    assert child["dependencies"] == [{"feature": "parent", "enabled": False, "variants": []}]

    assert (await client.delete(f"{deps('child')}/parent", headers=ADMIN)).status == 200
    await error(await client.delete(f"{deps('child')}/parent", headers=ADMIN), 404, "NotFoundError")
    assert (await client.delete(deps("other"), headers=ADMIN)).status == 200
    parent = await (await client.get(f"{FEATURES}/parent", headers=ADMIN)).json()
    assert parent["children"] == []
    assert [await event_count(app, t) for t in ("DependencyAdded", "DependencyRemoved")] == [3, 2]
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok


@pytest.mark.usefixtures("flags")
async def test_dependency_rules(client: Client, app: web.Application) -> None:
    await client.post("/api/admin/projects", json={"id": "p2", "name": "P2"}, headers=ADMIN)
    await create(client, {"name": "elsewhere"}, "p2")
    assert (
        await client.post(deps("child"), json={"feature": "parent"}, headers=ADMIN)
    ).status == 200
    before = await event_count(app)
    for child, body, message in [
        ("other", {"feature": "other"}, "A flag cannot depend on itself"),
        (
            "other",
            {"feature": "missing"},
            "The parent missing must be an active flag in project default",
        ),
        ("other", {"feature": "elsewhere"}, "The parent elsewhere must be an active flag"),
        (
            "grandchild",
            {"feature": "child"},
            "child depends on another flag itself; chains are not allowed",
        ),
        ("parent", {"feature": "other"}, "parent is a parent of other flags"),
        (
            "other",
            {"feature": "parent", "enabled": False, "variants": ["x"]},
            "variants apply only when enabled",
        ),
        ("other", {}, "Object missing required field `feature`"),
    ]:
        resp = await client.post(deps(child), json=body, headers=ADMIN)
        assert (await error(resp, 400, "ValidationError")).startswith(message)
    assert await event_count(app) == before
    resp = await client.post(deps("missing"), json={"feature": "parent"}, headers=ADMIN)
    await error(resp, 404, "NotFoundError")
