"""API tokens by name, their expiry, and a project's tokens (Unleash's project token routes)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from projections.verify import verify
from service.appkeys import POOL
from tests.factories import ADMIN, api_token, error, event_count, in_days, make_account, ok

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

TOKENS = "/api/admin/api-tokens"
PROJECT = "/api/admin/projects/default/api-tokens"


async def test_tokens_by_name(client: Client) -> None:
    first = await api_token(client, name="web")
    second = await api_token(client, "frontend", name="web")
    await api_token(client, name="other")
    found = (await ok(await client.get(f"{TOKENS}/web", headers=ADMIN)))["tokens"]
    assert [t["id"] for t in found] == [first["id"], second["id"]]
    assert all(t["tokenName"] == "web" and t["secret"].endswith("********") for t in found)
    assert (await ok(await client.get(f"{TOKENS}/nobody", headers=ADMIN))) == {"tokens": []}
    client_token = {"Authorization": first["secret"]}
    await error(await client.get(f"{TOKENS}/web", headers=client_token), 403, "NoAccessError")


async def test_an_editor_reads_the_client_and_frontend_tokens_only(
    client: Client, app: web.Application
) -> None:
    sdk = await api_token(client, name="sdk")
    browser = await api_token(client, "frontend", name="browser")
    await api_token(client, "admin", name="sdk")
    editor = await make_account(app, role=2)
    viewer = await make_account(app, role=3)
    for path, expected in (
        (TOKENS, [sdk["id"], browser["id"]]),
        (f"{TOKENS}/sdk", [sdk["id"]]),
        (PROJECT, []),  # a project's tokens leave out those of every project
    ):
        found = (await ok(await client.get(path, headers=editor.headers)))["tokens"]
        assert [t["id"] for t in found] == expected, path
        await error(await client.get(path, headers=viewer.headers), 403, "NoAccessError")
    # The admin sees the admin token too.
    found = (await ok(await client.get(f"{TOKENS}/sdk", headers=ADMIN)))["tokens"]
    assert sorted(t["type"] for t in found) == ["admin", "client"]


async def test_changing_the_expiry(client: Client, app: web.Application) -> None:
    token = await api_token(client)
    later = in_days(10)
    url = f"{TOKENS}/{token['secret']}"
    await ok(await client.put(url, json={"expiresAt": later}, headers=ADMIN), 200)
    assert await event_count(app, "ApiTokenExpiryChanged") == 1
    (listed,) = (await ok(await client.get(f"{TOKENS}/client", headers=ADMIN)))["tokens"]
    assert datetime.fromisoformat(listed["expiresAt"]) == datetime.fromisoformat(later)
    assert (
        await client.get("/api/client/features", headers={"Authorization": token["secret"]})
    ).status == 200
    # Expired now: it stops authenticating at once.
    now = (datetime.now(UTC) - timedelta(seconds=1)).isoformat()
    await ok(await client.put(url, json={"expiresAt": now}, headers=ADMIN), 200)
    resp = await client.get("/api/client/features", headers={"Authorization": token["secret"]})
    assert resp.status == 401
    await error(await client.put(url, json={}, headers=ADMIN), 400, "ValidationError")
    await error(
        await client.put(url, json={"expiresAt": in_days(365 * 200)}, headers=ADMIN),
        400,
        "ValidationError",
    )
    await error(
        await client.put(f"{TOKENS}/nope", json={"expiresAt": later}, headers=ADMIN),
        404,
        "NotFoundError",
    )
    assert await event_count(app, "ApiTokenExpiryChanged") == 2
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok


async def test_project_tokens(client: Client, app: web.Application) -> None:
    body = {"tokenName": "p", "type": "client", "environment": "development"}
    made = await ok(await client.post(PROJECT, json=body, headers=ADMIN), 201)
    assert made["projects"] == ["default"]
    assert made["secret"].startswith("default:development.")
    await api_token(client, name="everywhere")  # of every project: not the project's
    await api_token(client, "admin", name="root")
    listed = (await ok(await client.get(PROJECT, headers=ADMIN)))["tokens"]
    assert [t["tokenName"] for t in listed] == ["p"]
    # Only for the path's project, never an admin token, and only for a project that exists.
    other = {**body, "projects": ["other"]}
    await error(await client.post(PROJECT, json=other, headers=ADMIN), 400, "ValidationError")
    admin = {"tokenName": "a", "type": "admin"}
    await error(await client.post(PROJECT, json=admin, headers=ADMIN), 400, "ValidationError")
    missing = "/api/admin/projects/nope/api-tokens"
    await error(await client.post(missing, json=body, headers=ADMIN), 404, "NotFoundError")
    await error(await client.get(missing, headers=ADMIN), 404, "NotFoundError")
    # Deleted through the project, by its secret.
    await error(await client.delete(f"{PROJECT}/nope", headers=ADMIN), 404, "NotFoundError")
    assert (await client.delete(f"{PROJECT}/{made['secret']}", headers=ADMIN)).status == 200
    assert (await ok(await client.get(PROJECT, headers=ADMIN)))["tokens"] == []
    assert await event_count(app, "ApiTokenDeleted") == 1
    resp = await client.get("/api/client/features", headers={"Authorization": made["secret"]})
    assert resp.status == 401


async def test_a_token_of_several_projects_is_not_deleted_through_one(
    client: Client, app: web.Application
) -> None:
    resp = await client.post(
        "/api/admin/projects", json={"id": "second", "name": "Second"}, headers=ADMIN
    )
    assert resp.status in (200, 201), await resp.text()
    token = await api_token(client, name="both", projects=["default", "second"])
    listed = (await ok(await client.get(PROJECT, headers=ADMIN)))["tokens"]
    assert [t["tokenName"] for t in listed] == ["both"]
    resp = await client.delete(f"{PROJECT}/{token['secret']}", headers=ADMIN)
    await error(resp, 400, "ValidationError")
    assert await event_count(app, "ApiTokenDeleted") == 0


async def test_deleted_by_the_masked_secret_the_list_shows(
    client: Client, app: web.Application
) -> None:
    """Unleash's web UI deletes a token by the `secret` the list gave: here its masked hint,
    taken when it names one token alone."""
    token = await api_token(client, name="shown")
    (listed,) = (await ok(await client.get(f"{TOKENS}/shown", headers=ADMIN)))["tokens"]
    assert listed["secret"].endswith("********")
    assert (await client.delete(f"{TOKENS}/{listed['secret']}", headers=ADMIN)).status == 200
    assert await event_count(app, "ApiTokenDeleted") == 1
    resp = await client.get("/api/client/features", headers={"Authorization": token["secret"]})
    assert resp.status == 401
    resp = await client.delete(f"{TOKENS}/{listed['secret']}", headers=ADMIN)
    await error(resp, 404, "NotFoundError")
    # An admin secret a person chose shows no characters: several share one hint.
    async with app[POOL].acquire() as conn:
        await conn.execute("UPDATE api_tokens SET secret_hint = 'same********'")
    await api_token(client, name="a")
    await api_token(client, name="b")
    async with app[POOL].acquire() as conn:
        await conn.execute("UPDATE api_tokens SET secret_hint = 'same********'")
    await error(await client.delete(f"{TOKENS}/same********", headers=ADMIN), 409, "ConflictError")
