"""Users and root roles through HTTP: /api/admin/user-admin, /api/admin/roles, /api/admin/user."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.appkeys import POOL
from tests.factories import (
    ADMIN,
    ROOT_ROLES,
    STRONG,
    USERS,
    create_user,
    error,
    event_count,
    gravatar,
    make_account,
)

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]


async def test_roles_are_admin_editor_viewer_for_any_admin_api_principal(
    client: Client, app: web.Application
) -> None:
    viewer = await make_account(app, role=3)
    for headers in (ADMIN, viewer.headers):
        resp = await client.get("/api/admin/roles", headers=headers)
        assert resp.status == 200
        assert await resp.json() == {"version": 1, "roles": ROOT_ROLES}


async def test_create_user_answers_201_with_the_user_record(
    client: Client, app: web.Application
) -> None:
    resp = await client.post(
        USERS,
        json={"email": "Alice@Example.com", "name": " Alice ", "rootRole": 2, "sendEmail": True},
        headers=ADMIN,
    )
    assert resp.status == 201
    user = await resp.json()
    assert resp.headers["Location"] == str(user["id"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", user["createdAt"])
    assert user == {
        "id": user["id"],
        "name": "Alice",
        "email": "alice@example.com",
        "imageUrl": gravatar("alice@example.com"),
        "seenAt": None,
        "loginAttempts": 0,
        "createdAt": user["createdAt"],
        "isAPI": False,
        "rootRole": 2,
        "accountType": "User",
        "emailSent": False,
        "permissions": [],
        "scimId": None,
    }
    assert await (await client.get(f"{USERS}/{user['id']}", headers=ADMIN)).json() == user
    listed = await (await client.get(USERS, headers=ADMIN)).json()
    assert listed == {"users": [user], "rootRoles": ROOT_ROLES}
    assert await event_count(app, "UserCreated") == 1
    assert await event_count(app, "PasswordChanged") == 0


async def test_a_password_is_stored_as_an_argon2id_hash_only(
    client: Client, app: web.Application
) -> None:
    user = await create_user(client, {"username": "bob", "password": STRONG})
    assert "password" not in json.dumps(user)
    async with app[POOL].acquire() as conn:
        data = await conn.fetchval("SELECT data::text FROM events WHERE type = 'PasswordChanged'")
        stored = await conn.fetchval("SELECT password_hash FROM user_passwords")
        everything = await conn.fetchval("SELECT string_agg(data::text, ' ') FROM events")
    assert json.loads(data)["password_hash"] == stored
    assert stored.startswith("$argon2id$")
    assert STRONG not in everything


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"email": "a@example.com"}, (400, "ValidationError", "Object missing required field")),
        ({"rootRole": 1}, (400, "ValidationError", "You must specify username or email")),
        ({"rootRole": 1, "email": " "}, (400, "ValidationError", "You must specify username")),
        ({"rootRole": 1, "email": "not-an-email"}, (400, "ValidationError", '"not-an-email" is')),
        ({"rootRole": 99, "username": "x"}, (400, "ValidationError", "Could not find rootRole=99")),
        (
            {"rootRole": "Boss", "username": "x"},
            (400, "ValidationError", "Could not find rootRole"),
        ),
        ({"rootRole": 1, "username": 5}, (400, "ValidationError", "Expected `str | null`, got")),
        ({"rootRole": 1, "username": "a\nb"}, (400, "ValidationError", "Control characters")),
        (
            {"rootRole": 1, "username": "x", "password": "short"},
            (400, "OwaspValidationError", "The password must be at least 10 characters long."),
        ),
        (
            {"rootRole": 1, "username": "x", "password": "nouppercase1!"},
            (
                400,
                "OwaspValidationError",
                "The password must contain at least one uppercase letter.",
            ),
        ),
    ],
)
async def test_bad_user_bodies_are_400_and_write_nothing(
    client: Client, app: web.Application, body: dict[str, Any], expected: tuple[int, str, str]
) -> None:
    status, name, message = expected
    before = await event_count(app)
    resp = await client.post(USERS, json=body, headers=ADMIN)
    assert (await error(resp, status, name)).startswith(message)
    assert await event_count(app) == before


async def test_root_role_may_be_given_by_name(client: Client) -> None:
    assert (await create_user(client, {"username": "e", "rootRole": "editor"}))["rootRole"] == 2
    assert (await create_user(client, {"username": "a", "rootRole": "Admin"}))["rootRole"] == 1


async def test_email_is_unique_in_any_case_and_username_as_written(client: Client) -> None:
    await create_user(client, {"email": "a@example.com", "username": "bob"})
    for body in ({"email": "A@Example.COM"}, {"username": "bob"}):
        resp = await client.post(USERS, json={"rootRole": 3, **body}, headers=ADMIN)
        assert await error(resp, 409, "NameExistsError") == "User already exists"
    assert (await create_user(client, {"username": "BOB"}))["username"] == "BOB"


async def test_unknown_and_malformed_user_ids_are_404(client: Client) -> None:
    for user_id in ("999999", "abc", "1e3", "-1", "9" * 30):
        for method in ("GET", "DELETE"):
            resp = await client.request(method, f"{USERS}/{user_id}", headers=ADMIN)
            await error(resp, 404, "NotFoundError")
        resp = await client.put(f"{USERS}/{user_id}", json={"name": "x"}, headers=ADMIN)
        await error(resp, 404, "NotFoundError")


async def test_update_changes_only_the_fields_given(client: Client, app: web.Application) -> None:
    user = await create_user(client, {"email": "a@example.com", "name": "Alice", "rootRole": 2})
    url = f"{USERS}/{user['id']}"
    resp = await client.put(url, json={"name": "Alice B", "rootRole": 1}, headers=ADMIN)
    assert resp.status == 200
    assert await resp.json() == user | {"name": "Alice B", "rootRole": 1}
    resp = await client.put(url, json={"email": "Other@Example.com"}, headers=ADMIN)
    updated = await resp.json()
    assert updated == user | {
        "name": "Alice B",
        "rootRole": 1,
        "email": "other@example.com",
        "imageUrl": gravatar("other@example.com"),
    }
    before = await event_count(app, "UserUpdated")
    resp = await client.put(url, json={"name": "Alice B", "username": "ignored"}, headers=ADMIN)
    assert await resp.json() == updated  # nothing changed: no event
    assert await event_count(app, "UserUpdated") == before == 2


async def test_update_cannot_take_an_email_in_use_and_blanks_keep_values(
    client: Client, app: web.Application
) -> None:
    await create_user(client, {"email": "taken@example.com"})
    user = await create_user(client, {"email": "mine@example.com", "name": "Mine"})
    url = f"{USERS}/{user['id']}"
    resp = await client.put(url, json={"email": "TAKEN@example.com"}, headers=ADMIN)
    assert await error(resp, 409, "NameExistsError") == "User already exists"
    before = await event_count(app, "UserUpdated")
    for blank in ({"email": None, "name": None}, {"email": "", "name": " "}, {"rootRole": None}):
        resp = await client.put(url, json=blank, headers=ADMIN)  # as Unleash: values are kept
        assert await resp.json() == user
    assert await event_count(app, "UserUpdated") == before
    resp = await client.put(url, json={"rootRole": 7}, headers=ADMIN)
    await error(resp, 400, "ValidationError")
    assert await (await client.get(url, headers=ADMIN)).json() == user


async def test_delete_user_then_it_is_gone(client: Client, app: web.Application) -> None:
    user = await create_user(client, {"email": "d@example.com"})
    url = f"{USERS}/{user['id']}"
    resp = await client.delete(url, headers=ADMIN)
    assert (resp.status, await resp.read()) == (200, b"")
    await error(await client.get(url, headers=ADMIN), 404, "NotFoundError")
    await error(await client.delete(url, headers=ADMIN), 404, "NotFoundError")
    assert (await (await client.get(USERS, headers=ADMIN)).json())["users"] == []
    again = await create_user(client, {"email": "d@example.com"})  # the e-mail is free again
    assert again["id"] > user["id"]  # ids are never reused
    assert await event_count(app, "UserDeleted") == 1


async def test_change_password_checks_strength_and_the_user(
    client: Client, app: web.Application
) -> None:
    user = await create_user(client, {"username": "carol"})
    url = f"{USERS}/{user['id']}/change-password"
    resp = await client.post(url, json={"password": "weakpassword"}, headers=ADMIN)
    message = await error(resp, 400, "OwaspValidationError")
    assert message == "The password must contain at least one uppercase letter."
    resp = await client.post(
        f"{USERS}/999999/change-password", json={"password": STRONG}, headers=ADMIN
    )
    await error(resp, 404, "NotFoundError")
    resp = await client.post(url, json={}, headers=ADMIN)
    await error(resp, 400, "ValidationError")
    resp = await client.post(url, json={"password": STRONG}, headers=ADMIN)
    assert (resp.status, await resp.read()) == (200, b"")
    assert await event_count(app, "PasswordChanged") == 1


@pytest.mark.parametrize("role", [2, 3])
async def test_only_admins_manage_users(client: Client, app: web.Application, role: int) -> None:
    someone = await make_account(app, role=role)
    for method, path in (("GET", USERS), ("POST", USERS), ("GET", f"{USERS}/{someone.id}")):
        resp = await client.request(method, path, json={"rootRole": 3}, headers=someone.headers)
        assert await error(resp, 403, "NoAccessError") == (
            "You need the ADMIN permission for this operation"
        )


async def test_current_user_for_each_kind_of_principal(
    client: Client, app: web.Application
) -> None:
    viewer = await make_account(app, role=3, username="vera")
    resp = await client.get("/api/admin/user", headers=viewer.headers)
    assert resp.headers["Cache-Control"] == "no-store"
    body = await resp.json()
    assert body["permissions"] == []
    assert (body["user"]["id"], body["user"]["username"]) == (viewer.id, "vera")
    assert (body["feedback"], body["splash"]) == ([], {})
    admin_body = await (await client.get("/api/admin/user", headers=ADMIN)).json()
    assert admin_body == {
        "user": {"isAPI": True, "username": "admin", "permissions": ["ADMIN"]},
        "permissions": [{"permission": "ADMIN"}],
        "feedback": [],
        "splash": {},
    }
    editor = await make_account(app, role=2)
    permissions = (await (await client.get("/api/admin/user", headers=editor.headers)).json())[
        "permissions"
    ]
    assert {"permission": "CREATE_FEATURE"} in permissions
    assert {"permission": "ADMIN"} not in permissions


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.text(st.characters(codec="utf-8", exclude_categories=("Cc", "Cs")), max_size=60),
    local=st.from_regex(r"[a-z0-9._+-]{1,20}", fullmatch=True),
)
async def test_names_and_emails_round_trip(client: Client, name: str, local: str) -> None:
    email = f"{local}@{'x' * (len(name) % 5 + 1)}.example.org"
    resp = await client.post(
        USERS, json={"rootRole": 3, "email": email, "name": name}, headers=ADMIN
    )
    if resp.status == 409:  # hypothesis may repeat an e-mail within this test's database
        return
    assert resp.status == 201, await resp.text()
    user = await resp.json()
    assert user["email"] == email
    assert user.get("name") == (name.strip() or None)
