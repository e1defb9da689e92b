"""A person's own roles and password, the admin's password checks and reset links, the admin
count, the access overview, a user's permissions, and the reset-password page's public routes."""

from __future__ import annotations

import urllib.parse
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service import auth
from service.appkeys import POOL
from service.errors import WeakPassword
from service.users import passwords
from tests.factories import (
    ADMIN,
    STRONG,
    USERS,
    create_user,
    error,
    event_count,
    make_account,
    ok,
    session,
    sign_in,
)

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

NEW = "N3w!Passw0rd#2027"
OWN = "/api/admin/user/change-password"
RESET = f"{USERS}/reset-password"


async def person_with_password(client: Client, email: str, role: int = 3) -> dict[str, Any]:
    return await create_user(client, {"email": email, "password": STRONG, "rootRole": role})


async def reset_link(client: Client, who: object) -> str:
    body = await ok(await client.post(RESET, json={"id": who}, headers=ADMIN), 200)
    url = urllib.parse.urlsplit(body["resetPasswordUrl"])
    assert url.path == "/reset-password"
    (token,) = urllib.parse.parse_qs(url.query)["token"]
    return str(token)


# --- user/roles -------------------------------------------------------------------------------


async def test_own_roles_are_the_root_role_in_the_project(
    client: Client, app: web.Application
) -> None:
    editor = await make_account(app, role=2)
    resp = await client.get("/api/admin/user/roles?projectId=default", headers=editor.headers)
    body = await ok(resp, 200)
    assert body["version"] == 1
    assert [(r["id"], r["name"], r["type"], r["project"]) for r in body["roles"]] == [
        (2, "Editor", "root", "default")
    ]


async def test_own_roles_need_a_project_and_a_person(client: Client, app: web.Application) -> None:
    viewer = await make_account(app, role=3)
    await error(
        await client.get("/api/admin/user/roles", headers=viewer.headers), 400, "ValidationError"
    )
    machine = await make_account(app, role=1, service=True)
    resp = await client.get("/api/admin/user/roles?projectId=default", headers=machine.headers)
    await error(resp, 403, "NoAccessError")
    await error(
        await client.get("/api/admin/user/roles?projectId=default", headers=ADMIN),
        403,
        "NoAccessError",
    )


# --- change one's own password ----------------------------------------------------------------


async def test_changing_one_s_own_password_keeps_this_session_and_ends_the_others(
    client: Client, app: web.Application
) -> None:
    user = await person_with_password(client, "own@example.com")
    _, mine = await sign_in(client, "own@example.com")
    _, other = await sign_in(client, "own@example.com")
    body = {"password": NEW, "confirmPassword": NEW, "oldPassword": STRONG}
    resp = await client.post(OWN, json=body, headers=session(mine))
    assert resp.status == 200, await resp.text()
    renewed = resp.cookies[auth.SESSION_COOKIE].value
    assert renewed not in {mine, other}
    client.session.cookie_jar.clear()
    assert (await client.get("/api/admin/user", headers=session(renewed))).status == 200
    for ended in (mine, other):
        assert (await client.get("/api/admin/user", headers=session(ended))).status == 401
    assert (await sign_in(client, "own@example.com", NEW))[0].status == 200
    assert (await sign_in(client, "own@example.com", STRONG))[0].status == 401
    async with app[POOL].acquire() as conn:
        types = await conn.fetch(
            "SELECT type FROM events WHERE stream_type = 'user' AND stream_key = $1"
            " ORDER BY position",
            str(user["id"]),
        )
    assert [r["type"] for r in types][-4:] == [
        "PasswordChanged",
        "UserSignedIn",
        "UserSignedIn",
        "UserSignInFailed",
    ]


async def test_one_s_own_password_needs_the_old_one_and_the_rules(
    client: Client, app: web.Application
) -> None:
    await person_with_password(client, "rules@example.com")
    _, cookie = await sign_in(client, "rules@example.com")
    before = await event_count(app, "PasswordChanged")
    cases = [
        ({"password": NEW, "oldPassword": "Wr0ng!Passw0rd#1"}, 401, "PasswordMismatch"),
        ({"password": NEW}, 400, "ValidationError"),
        (
            {"password": NEW, "confirmPassword": NEW + "x", "oldPassword": STRONG},
            400,
            "ValidationError",
        ),
        ({"password": "short", "oldPassword": STRONG}, 400, "OwaspValidationError"),
        ({"oldPassword": STRONG}, 400, "ValidationError"),
    ]
    for body, status, name in cases:
        await error(await client.post(OWN, json=body, headers=session(cookie)), status, name)
    assert await event_count(app, "PasswordChanged") == before
    # Without a session (a personal access token) the change is made and no session is opened.
    token = await make_account(app, role=3)
    resp = await client.post(
        OWN, json={"password": NEW, "oldPassword": STRONG}, headers=token.headers
    )
    await error(resp, 401, "PasswordMismatch")  # an account without a password has no old one


async def test_one_s_own_password_is_a_person_s(client: Client, app: web.Application) -> None:
    body = {"password": NEW, "oldPassword": STRONG}
    await error(await client.post(OWN, json=body, headers=ADMIN), 403, "NoAccessError")
    await error(await client.post(OWN, json=body), 401, "AuthenticationRequired")


# --- validate-password ------------------------------------------------------------------------


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
# NUL is refused in every JSON string before any route reads it (a 400 ValidationError), and a
# lone surrogate is no text a JSON body can carry (a 400 "Malformed JSON"): UTF-8 text without NUL.
@given(password=st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=40))
async def test_validate_password_answers_as_the_strength_rules(
    client: Client, password: str
) -> None:
    try:
        passwords.check_strength(password)
        expected: str | None = None
    except WeakPassword as exc:
        expected = exc.message
    for path, headers in (
        (f"{USERS}/validate-password", ADMIN),
        ("/auth/reset/validate-password", {}),
    ):
        resp = await client.post(path, json={"password": password}, headers=headers)
        if expected is None:
            assert resp.status == 200, await resp.text()
        else:
            assert await error(resp, 400, "OwaspValidationError") == expected


async def test_validate_password_answers_anyone_signed_in(
    client: Client, app: web.Application
) -> None:
    viewer = await make_account(app, role=3)
    path = f"{USERS}/validate-password"
    resp = await client.post(path, json={"password": STRONG}, headers=viewer.headers)
    assert resp.status == 200, await resp.text()
    resp = await client.post(path, json={"password": "abc"}, headers=viewer.headers)
    await error(resp, 400, "OwaspValidationError")
    # Every rule broken, as Unleash lists them for the UI's strength meter.
    assert (await resp.json())["details"][0]["validationErrors"] == [
        "The password must be at least 10 characters long.",
        "The password must contain at least one uppercase letter.",
        "The password must contain at least one number.",
        "The password must contain at least one special character.",
    ]
    resp = await client.post(path, json={"password": STRONG})
    await error(resp, 401, "AuthenticationRequired")
    resp = await client.post(path, json={}, headers=ADMIN)
    await error(resp, 400, "ValidationError")


# --- reset links ------------------------------------------------------------------------------


async def test_a_reset_link_sets_a_new_password_once(client: Client, app: web.Application) -> None:
    user = await person_with_password(client, "Reset.Me@example.com", role=2)
    token = await reset_link(client, "reset.me@EXAMPLE.com")
    async with app[POOL].acquire() as conn:
        stored = await conn.fetch("SELECT * FROM readmodel.password_reset_tokens")
        data = await conn.fetchval(
            "SELECT data::text FROM events WHERE type = 'PasswordResetRequested'"
        )
    assert [r["token_hash"] for r in stored] == [auth.hash_secret(token)]  # never the token
    assert token not in data
    assert stored[0]["expires_at"] - datetime.now(UTC) > timedelta(hours=23)

    resp = await client.get(f"/auth/reset/validate?token={token}")
    body = await ok(resp, 200)
    assert body == {
        "id": user["id"],
        "name": "reset.me@example.com",
        "email": "reset.me@example.com",
        "token": token,
        "createdBy": None,
        "role": {
            "id": 2,
            "type": "root",
            "name": "Editor",
            "description": body["role"]["description"],
        },
    }
    weak = {"token": token, "password": "short"}
    await error(await client.post("/auth/reset/password", json=weak), 400, "OwaspValidationError")
    resp = await client.post("/auth/reset/password", json={"token": token, "password": NEW})
    assert resp.status == 200, await resp.text()
    assert (await sign_in(client, "reset.me@example.com", NEW))[0].status == 200
    # Used: every route refuses it the same way.
    again = await client.post("/auth/reset/password", json={"token": token, "password": STRONG})
    assert await error(again, 401, "InvalidTokenError") == "Token was not valid"
    await error(await client.get(f"/auth/reset/validate?token={token}"), 401, "InvalidTokenError")
    assert await event_count(app, "PasswordResetRequested") == 1


async def test_a_newer_link_replaces_the_older_and_a_password_change_ends_it(
    client: Client, app: web.Application
) -> None:
    user = await person_with_password(client, "twice@example.com")
    first = await reset_link(client, user["id"])  # by id too
    second = await reset_link(client, "twice@example.com")
    await error(await client.get(f"/auth/reset/validate?token={first}"), 401, "InvalidTokenError")
    assert (await client.get(f"/auth/reset/validate?token={second}")).status == 200
    resp = await client.post(
        f"{USERS}/{user['id']}/change-password", json={"password": NEW}, headers=ADMIN
    )
    assert resp.status == 200
    await error(await client.get(f"/auth/reset/validate?token={second}"), 401, "InvalidTokenError")


async def test_an_expired_link_is_refused(client: Client, app: web.Application) -> None:
    await person_with_password(client, "late@example.com")
    token = await reset_link(client, "late@example.com")
    async with app[POOL].acquire() as conn:
        await conn.execute(
            "UPDATE readmodel.password_reset_tokens SET expires_at = now() - interval '1 second'"
        )
    await error(await client.get(f"/auth/reset/validate?token={token}"), 401, "InvalidTokenError")
    resp = await client.post("/auth/reset/password", json={"token": token, "password": NEW})
    await error(resp, 401, "InvalidTokenError")
    assert (await sign_in(client, "late@example.com", STRONG))[0].status == 200


async def test_a_deleted_person_s_link_goes_with_them(client: Client, app: web.Application) -> None:
    user = await person_with_password(client, "gone@example.com")
    token = await reset_link(client, "gone@example.com")
    assert (await client.delete(f"{USERS}/{user['id']}", headers=ADMIN)).status == 200
    await error(await client.get(f"/auth/reset/validate?token={token}"), 401, "InvalidTokenError")


async def test_reset_links_are_for_people_that_exist(client: Client, app: web.Application) -> None:
    machine = await make_account(app, role=1, service=True)
    for who in ("nobody@example.com", 99999, machine.id):
        resp = await client.post(RESET, json={"id": who}, headers=ADMIN)
        assert await error(resp, 404, "NotFoundError") == "No user found"
    await error(await client.post(RESET, json={}, headers=ADMIN), 400, "ValidationError")
    viewer = await make_account(app, role=3)
    await error(
        await client.post(RESET, json={"id": "x"}, headers=viewer.headers), 403, "NoAccessError"
    )
    assert await event_count(app, "PasswordResetRequested") == 0


@pytest.mark.parametrize("token", ["", "unknown", "a" * 64, "x" * 300])
async def test_unknown_tokens_are_refused(client: Client, token: str) -> None:
    await error(await client.get(f"/auth/reset/validate?token={token}"), 401, "InvalidTokenError")
    resp = await client.post("/auth/reset/password", json={"token": token, "password": NEW})
    assert resp.status in {400, 401}  # longer than a token may be: 400


async def test_the_reset_e_mail_route_tells_no_one_who_has_an_account(
    client: Client, app: web.Application
) -> None:
    await person_with_password(client, "mail@example.com")
    before = await event_count(app)
    for email in ("mail@example.com", "nobody@example.com"):
        resp = await client.post("/auth/reset/password-email", json={"email": email})
        assert resp.status == 200
    assert await event_count(app) == before
    await error(await client.post("/auth/reset/password-email", json={}), 400, "ValidationError")


# --- admin-count, access, permissions ----------------------------------------------------------


async def test_admin_count_counts_admins_by_kind(client: Client, app: web.Application) -> None:
    await person_with_password(client, "admin1@example.com", role=1)
    await create_user(client, {"email": "admin2@example.com", "rootRole": 1})
    await person_with_password(client, "editor@example.com", role=2)
    await make_account(app, role=1, service=True)
    await make_account(app, role=3, service=True)
    body = await ok(await client.get(f"{USERS}/admin-count", headers=ADMIN), 200)
    assert body == {"password": 1, "noPassword": 1, "service": 1}
    viewer = await make_account(app, role=3)
    resp = await client.get(f"{USERS}/admin-count", headers=viewer.headers)
    await error(resp, 403, "NoAccessError")


async def test_access_lists_every_account(client: Client, app: web.Application) -> None:
    user = await create_user(client, {"email": "a@example.com", "name": "A", "rootRole": 2})
    machine = await make_account(app, role=1, service=True)
    body = await ok(await client.get(f"{USERS}/access", headers=ADMIN), 200)
    assert body["groups"] == []
    assert {"id": user["id"], "name": "A", "email": "a@example.com", "accountType": "User"} in body[
        "users"
    ]
    sa = next(u for u in body["users"] if u["id"] == machine.id)
    assert sa["accountType"] == "Service Account"
    assert "email" not in sa


async def test_permissions_are_what_the_root_role_holds(
    client: Client, app: web.Application
) -> None:
    editor = await create_user(client, {"email": "ed@example.com", "rootRole": 2})
    admin = await create_user(client, {"email": "ad@example.com", "rootRole": 1})
    path = f"{USERS}/{editor['id']}/permissions?project=default&environment=development"
    body = await ok(await client.get(path, headers=ADMIN), 200)
    assert body["rootRole"]["name"] == "Editor"
    assert body["user"]["id"] == editor["id"]
    assert body["projectRoles"] == []
    held = {p["name"]: p["hasPermission"] for scope in body["overview"].values() for p in scope}
    assert held["ADMIN"] is False
    assert held["CREATE_FEATURE"] is True
    assert held["UPDATE_FEATURE_ENVIRONMENT"] is True
    assert held["READ_LOGS"] is False
    assert [len(body["overview"][s]) for s in ("root", "project", "environment")] == [35, 20, 8]
    assert {p["environment"] for p in body["overview"]["environment"]} == {"development"}
    everything = await ok(
        await client.get(f"{USERS}/{admin['id']}/permissions", headers=ADMIN), 200
    )
    assert all(p["hasPermission"] for s in everything["overview"].values() for p in s)
    assert everything["overview"]["environment"] == []  # no environment asked for
    unknown_env = f"{USERS}/{admin['id']}/permissions?environment=nope"
    assert (await ok(await client.get(unknown_env, headers=ADMIN), 200))["overview"][
        "environment"
    ] == []
    resp = await client.get(f"{USERS}/99999/permissions", headers=ADMIN)
    await error(resp, 404, "NotFoundError")


# --- the users page's list --------------------------------------------------------------------


async def test_the_list_is_current_after_every_change(client: Client, app: web.Application) -> None:
    """Answered from remembered records: a change to any person shows at once."""
    first = await create_user(client, {"email": "one@example.com", "rootRole": 3})
    listed = await ok(await client.get(USERS, headers=ADMIN), 200)
    again = await ok(await client.get(USERS, headers=ADMIN), 200)
    assert listed == again
    await ok(await client.put(f"{USERS}/{first['id']}", json={"name": "Renamed"}, headers=ADMIN))
    second = await create_user(client, {"email": "two@example.com", "rootRole": 2})
    users = (await ok(await client.get(USERS, headers=ADMIN), 200))["users"]
    assert [(u["id"], u.get("name")) for u in users] == [
        (first["id"], "Renamed"),
        (second["id"], None),
    ]
    assert (await client.delete(f"{USERS}/{first['id']}", headers=ADMIN)).status == 200
    users = (await ok(await client.get(USERS, headers=ADMIN), 200))["users"]
    assert [u["id"] for u in users] == [second["id"]]
