"""Service accounts, and listing all tokens of a service account (docs/behavior.md, list all
tokens for a service account)."""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING, Any

import pytest

from projections.verify import verify
from service.appkeys import POOL
from tests.factories import (
    ADMIN,
    ROOT_ROLES,
    STRONG,
    USERS,
    api_token,
    create_user,
    error,
    event_count,
    gravatar,
    in_days,
    make_account,
    session,
    sign_in,
)

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

ACCOUNTS = "/api/admin/service-account"
HINT = re.compile(r"user:[0-9a-f]{4}\*{8}")


async def create_account(client: Client, **fields: Any) -> dict[str, Any]:
    body = {"username": "deploy-bot", "name": "Deploy bot", "rootRole": 1} | fields
    resp = await client.post(ACCOUNTS, json=body, headers=ADMIN)
    assert resp.status == 201, await resp.text()
    created: dict[str, Any] = await resp.json()
    return created


async def create_token(client: Client, account_id: int, description: str = "ci") -> dict[str, Any]:
    resp = await client.post(
        f"{ACCOUNTS}/{account_id}/token",
        json={"description": description, "expiresAt": in_days(30)},
        headers=ADMIN,
    )
    assert resp.status == 201, await resp.text()
    created: dict[str, Any] = await resp.json()
    return created


async def test_service_account_lifecycle(client: Client, app: web.Application) -> None:
    account = await create_account(client)
    assert account == {
        "id": account["id"],
        "name": "Deploy bot",
        "username": "deploy-bot",
        "imageUrl": gravatar("deploy-bot"),
        "seenAt": None,
        "loginAttempts": 0,
        "createdAt": account["createdAt"],
        "isAPI": False,
        "rootRole": 1,
        "accountType": "Service Account",
        "emailSent": False,
    }
    listed = await (await client.get(ACCOUNTS, headers=ADMIN)).json()
    assert listed == {"serviceAccounts": [account], "rootRoles": ROOT_ROLES}
    url = f"{ACCOUNTS}/{account['id']}"
    resp = await client.put(url, json={"name": "Renamed", "rootRole": "Viewer"}, headers=ADMIN)
    assert await resp.json() == account | {"name": "Renamed", "rootRole": 3}
    # Not a user: the user routes do not see it.
    assert (await (await client.get(USERS, headers=ADMIN)).json())["users"] == []
    await error(await client.get(f"{USERS}/{account['id']}", headers=ADMIN), 404, "NotFoundError")
    resp = await client.delete(url, headers=ADMIN)
    assert (resp.status, await resp.read()) == (200, b"")
    await error(await client.delete(url, headers=ADMIN), 404, "NotFoundError")
    await error(await client.put(url, json={}, headers=ADMIN), 404, "NotFoundError")
    assert (await (await client.get(ACCOUNTS, headers=ADMIN)).json())["serviceAccounts"] == []
    types = ("ServiceAccountCreated", "ServiceAccountUpdated", "ServiceAccountDeleted")
    assert [await event_count(app, t) for t in types] == [1, 1, 1]


async def test_usernames_are_shared_with_users_and_bodies_are_checked(client: Client) -> None:
    await create_user(client, {"username": "taken"})
    resp = await client.post(ACCOUNTS, json={"username": "taken", "rootRole": 1}, headers=ADMIN)
    await error(resp, 409, "NameExistsError")
    for body in ({"rootRole": 1}, {"username": "x"}, {"username": "x", "rootRole": 9}):
        resp = await client.post(ACCOUNTS, json=body, headers=ADMIN)
        await error(resp, 400, "ValidationError")


async def test_list_tokens_is_behavior_md_section_4(client: Client, app: web.Application) -> None:
    account = await create_account(client)
    url = f"{ACCOUNTS}/{account['id']}/token"
    assert await (await client.get(url, headers=ADMIN)).json() == {"pats": []}
    created = [await create_token(client, account["id"], f"token {i}") for i in range(3)]
    resp = await client.get(url, headers={**ADMIN, "Accept": "application/json"})
    assert resp.status == 200
    assert resp.content_type == "application/json"
    pats = (await resp.json())["pats"]
    assert [p["id"] for p in pats] == sorted(c["id"] for c in created)
    for pat, made in zip(pats, created, strict=True):
        assert set(pat) == {
            "id",
            "secret",
            "createdAt",
            "seenAt",
            "userId",
            "description",
            "expiresAt",
        }
        assert HINT.fullmatch(pat["secret"])
        assert pat["secret"] == made["secret"][:9] + "********"
        assert made["secret"] not in await resp.text()
        assert pat == {k: v for k, v in made.items() if k != "secret"} | {"secret": pat["secret"]}
        assert (pat["userId"], pat["seenAt"]) == (account["id"], None)
    # seenAt is set once the token is used (batched: within a few seconds).
    resp = await client.get(USERS, headers={"Authorization": created[1]["secret"]})
    assert resp.status == 200
    for _ in range(40):
        seen = [p["seenAt"] for p in (await (await client.get(url, headers=ADMIN)).json())["pats"]]
        if seen[1] is not None:
            break
        await asyncio.sleep(0.2)
    assert seen[0] is None
    assert seen[1] is not None
    assert seen[2] is None


async def test_list_tokens_is_404_for_anything_but_a_service_account(
    client: Client, app: web.Application
) -> None:
    user = await create_user(client, {"username": "person"})
    gone = await create_account(client, username="gone")
    assert (await client.delete(f"{ACCOUNTS}/{gone['id']}", headers=ADMIN)).status == 200
    for account_id in (user["id"], gone["id"], "abc", "999999", "-1", "1.0", "%20", "9" * 40):
        resp = await client.get(f"{ACCOUNTS}/{account_id}/token", headers=ADMIN)
        await error(resp, 404, "NotFoundError")


@pytest.mark.parametrize("who", ["editor", "viewer", "viewer session", "client", "frontend"])
async def test_list_tokens_is_403_for_non_admins(
    client: Client, app: web.Application, who: str
) -> None:
    account = await create_account(client)
    if who in ("editor", "viewer"):
        headers = (await make_account(app, role=2 if who == "editor" else 3)).headers
    elif who == "viewer session":
        await create_user(client, {"username": "v", "password": STRONG, "rootRole": 3})
        headers = session((await sign_in(client, "v"))[1])
    else:
        headers = {"Authorization": (await api_token(client, who))["secret"]}
    resp = await client.get(f"{ACCOUNTS}/{account['id']}/token", headers=headers)
    await error(resp, 403, "NoAccessError")
    resp = await client.get(f"{ACCOUNTS}/{account['id']}/token")
    await error(resp, 401, "AuthenticationRequired")


async def test_service_account_tokens_act_with_its_root_role(client: Client) -> None:
    admin = await create_account(client, username="admin-bot", rootRole=1)
    viewer = await create_account(client, username="viewer-bot", rootRole=3)
    admin_secret = (await create_token(client, admin["id"]))["secret"]
    viewer_secret = (await create_token(client, viewer["id"]))["secret"]
    assert (await client.get(USERS, headers={"Authorization": admin_secret})).status == 200
    resp = await client.get(USERS, headers={"Authorization": viewer_secret})
    await error(resp, 403, "NoAccessError")
    me = await (
        await client.get("/api/admin/user", headers={"Authorization": viewer_secret})
    ).json()
    assert (me["user"]["accountType"], me["user"]["id"]) == ("Service Account", viewer["id"])
    # A service account cannot sign in with a password.
    resp, _ = await sign_in(client, "viewer-bot", STRONG)
    await error(resp, 401, "PasswordMismatch")


async def test_deleting_tokens_and_accounts_revokes_at_once(
    client: Client, app: web.Application
) -> None:
    account = await create_account(client)
    first = await create_token(client, account["id"], "first")
    second = await create_token(client, account["id"], "second")
    url = f"{ACCOUNTS}/{account['id']}/token"
    resp = await client.delete(f"{url}/{first['id']}", headers=ADMIN)
    assert (resp.status, await resp.read()) == (200, b"")
    await error(
        await client.get(USERS, headers={"Authorization": first["secret"]}),
        401,
        "AuthenticationRequired",
    )
    await error(await client.delete(f"{url}/{first['id']}", headers=ADMIN), 404, "NotFoundError")
    other = await create_account(client, username="other")
    resp = await client.delete(f"{ACCOUNTS}/{other['id']}/token/{second['id']}", headers=ADMIN)
    await error(resp, 404, "NotFoundError")  # not that account's token
    assert (await client.get(USERS, headers={"Authorization": second["secret"]})).status == 200
    assert (await client.delete(f"{ACCOUNTS}/{account['id']}", headers=ADMIN)).status == 200
    await error(
        await client.get(USERS, headers={"Authorization": second["secret"]}),
        401,
        "AuthenticationRequired",
    )
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok


async def test_token_limits_hold_for_service_accounts(client: Client) -> None:
    account = await create_account(client)
    url = f"{ACCOUNTS}/{account['id']}/token"
    for i in range(12):  # past a person's limit of 10: machines may hold more
        await create_token(client, account["id"], f"deployment {i}")
    body = {"description": "same", "expiresAt": in_days(1)}
    responses = await asyncio.gather(
        *(client.post(url, json=body, headers=ADMIN) for _ in range(5))
    )
    assert sorted(r.status for r in responses) == [201, 409, 409, 409, 409]
    resp = await client.post(f"{ACCOUNTS}/999999/token", json=body, headers=ADMIN)
    await error(resp, 404, "NotFoundError")
    user = await create_user(client, {"username": "person"})
    resp = await client.post(f"{ACCOUNTS}/{user['id']}/token", json=body, headers=ADMIN)
    await error(resp, 404, "NotFoundError")
