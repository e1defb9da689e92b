"""What Unleash's web UI calls as it boots and signs in (service/admin_ui.py, the users'
handlers): the 401 that shows its sign-in form, sign-in from the form, who the caller is with
Unleash's permission names, the UI's configuration, splash screens and feedback prompts (events
that replay), UI error reports, sign-out from the UI's HTML form."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest
from structlog.testing import capture_logs

from projections.replay import replay
from projections.verify import verify
from service import auth
from service.appkeys import POOL
from service.errors import NotFound, ValidationError
from service.users import domain
from service.users.domain import Account as Locked
from tests.factories import (
    ADMIN,
    ADMIN_TOKEN,
    SIGN_IN_HINTS,
    STRONG,
    api_token,
    create_user,
    error,
    make_account,
    session,
    sign_in,
)

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

ME = "/api/admin/user"
MESSAGE = "You must log in or send a valid API token in the Authorization header"


async def test_a_browser_that_has_not_signed_in_gets_unleashs_sign_in_hints(
    client: Client,
) -> None:
    for path in (ME, "/api/admin/ui-config", "/api/admin/projects", "/api/admin/no-such-path"):
        resp = await client.get(path)
        assert resp.status == 401
        body = await resp.json()
        assert body == {
            "id": body["id"],
            "name": "AuthenticationRequired",
            "message": MESSAGE,
            **SIGN_IN_HINTS,
        }
    # A session that ended is no sign-in either: the form again.
    expired = await client.get(ME, headers=session("no-such-session"))
    assert (await expired.json())["path"] == "/auth/simple/login"


@pytest.mark.parametrize(
    ("path", "headers"),
    [
        (ME, {"Authorization": "*:*.not-a-token"}),  # an API client: Unleash's plain error too
        (ME, {"Authorization": ""}),
        ("/api/client/features", {}),  # the SDKs' APIs are no page of the UI
        ("/api/frontend", {}),
    ],
)
async def test_other_401s_carry_only_our_three_fields(
    client: Client, path: str, headers: dict[str, str]
) -> None:
    resp = await client.get(path, headers=headers)
    assert resp.status == 401
    assert set(await resp.json()) == {"id", "name", "message"}


async def signed_in(client: Client, role: int, email: str) -> dict[str, str]:
    """A person of this root role, signed in as the UI's form signs in; their cookie."""
    await create_user(client, {"email": email, "rootRole": role, "password": STRONG})
    # The form posts exactly this (useAuthApi.passwordAuth), as JSON, to the 401's `path`.
    resp = await client.post(
        str(SIGN_IN_HINTS["path"]),
        data=f'{{"username": "{email}", "password": "{STRONG}"}}',
        headers={"Content-Type": "application/json"},
    )
    assert resp.status == 200, await resp.text()
    assert (await resp.json())["email"] == email
    cookie = resp.cookies[auth.SESSION_COOKIE].value
    client.session.cookie_jar.clear()
    return session(cookie)


FLAG_PERMISSIONS = [
    "CREATE_FEATURE_STRATEGY",
    "DELETE_FEATURE_STRATEGY",
    "UPDATE_FEATURE",
    "UPDATE_FEATURE_DEPENDENCY",
    "UPDATE_FEATURE_ENVIRONMENT",
    "UPDATE_FEATURE_ENVIRONMENT_VARIANTS",
    "UPDATE_FEATURE_STRATEGY",
    "UPDATE_FEATURE_VARIANTS",
]
EDITOR_PERMISSIONS = sorted(
    [
        *FLAG_PERMISSIONS,
        "CREATE_FEATURE",
        "DELETE_FEATURE",
        "CREATE_PROJECT",
        "UPDATE_PROJECT",
        "CREATE_SEGMENT",
        "UPDATE_SEGMENT",
        "DELETE_SEGMENT",
        "CREATE_TAG_TYPE",
        "UPDATE_TAG_TYPE",
        "DELETE_TAG_TYPE",
        "CREATE_STRATEGY",
        "UPDATE_STRATEGY",
        "DELETE_STRATEGY",
        "CREATE_CONTEXT_FIELD",
        "UPDATE_CONTEXT_FIELD",
        "DELETE_CONTEXT_FIELD",
        "UPDATE_APPLICATION",
        "DELETE_APPLICATION",
        "CREATE_ADDON",
        "UPDATE_ADDON",
        "DELETE_ADDON",
        "READ_CLIENT_API_TOKEN",
        "READ_FRONTEND_API_TOKEN",
    ]
)


@pytest.mark.parametrize(("role", "expected"), [(1, ["ADMIN"]), (2, EDITOR_PERMISSIONS), (3, [])])
async def test_who_signed_in_with_the_permissions_unleashs_ui_checks(
    client: Client, role: int, expected: list[str]
) -> None:
    cookie = await signed_in(client, role, f"role{role}@example.com")
    resp = await client.get(ME, headers=cookie)
    assert resp.status == 200
    body = await resp.json()
    assert body["permissions"] == [{"permission": p} for p in expected]
    assert body["user"]["email"] == f"role{role}@example.com"
    assert body["user"]["rootRole"] == role
    assert (body["feedback"], body["splash"]) == ([], {})


def test_every_permission_a_role_holds_is_shown() -> None:
    for role in auth.ROOT_ROLES.values():
        shown = auth.unleash_permissions(role.permissions)
        if "ADMIN" in role.permissions:
            assert shown == ["ADMIN"]
        else:  # each by its Unleash names
            for held in role.permissions - {"READ"}:
                assert set(auth.UNLEASH_PERMISSIONS.get(held, (held,))) <= set(shown)


async def test_a_refused_request_of_a_viewer_or_editor_is_a_403(client: Client) -> None:
    viewer = await signed_in(client, 3, "viewer@example.com")
    editor = await signed_in(client, 2, "editor@example.com")
    create = {"name": "from-the-ui"}
    resp = await client.post("/api/admin/projects/default/features", json=create, headers=viewer)
    assert await error(resp, 403, "NoAccessError")
    resp = await client.post("/api/admin/projects/default/features", json=create, headers=editor)
    assert resp.status == 200
    resp = await client.post("/api/admin/api-tokens", json={"tokenName": "t"}, headers=editor)
    assert await error(resp, 403, "NoAccessError") == (
        "You need the ADMIN permission for this operation"
    )


async def test_the_ui_config_presents_the_open_source_edition(client: Client) -> None:
    resp = await client.get("/api/admin/ui-config", headers=ADMIN)
    assert resp.status == 200
    assert await resp.json() == {
        "environment": "Open Source",
        "flags": {"embedProxy": True, "embedProxyFrontend": True},
        "version": "6.10.1",
        "emailEnabled": False,
        "unleashUrl": str(client.make_url("/")).rstrip("/"),
        "baseUriPath": "",
        "authenticationType": "open-source",
        "segmentValuesLimit": 100_000,
        "strategySegmentsLimit": 100,
        "frontendApiOrigins": ["*"],
        "versionInfo": {
            "current": {"oss": "6.10.1", "enterprise": ""},
            "latest": {},
            "isLatest": True,
            "instanceId": "flagstore",
        },
        "prometheusAPIAvailable": False,
        "resourceLimits": {
            "segmentValues": 100_000,
            "strategySegments": 100,
            "signalEndpoints": 5,
            "actionSetActions": 10,
            "actionSetsPerProject": 5,
            "actionSetFilters": 5,
            "actionSetFilterValues": 25,
            "signalTokensPerEndpoint": 5,
            "featureEnvironmentStrategies": 1_000_000_000,
            "constraintValues": 1000,
            "constraints": 100,
            "environments": 1_000_000_000,
            "projects": 1_000_000_000,
            "apiTokens": 1_000_000_000,
            "segments": 1_000_000_000,
            "featureFlags": 1_000_000_000,
        },
        "disablePasswordAuth": False,
        "maintenanceMode": False,
        "maxSessionsCount": 0,
        "unleashContext": {},
    }
    viewer = await make_account(client.app, role=3)
    assert (await client.get("/api/admin/ui-config", headers=viewer.headers)).status == 200
    sdk = await api_token(client)
    resp = await client.get("/api/admin/ui-config", headers={"Authorization": sdk["secret"]})
    assert await error(resp, 403, "NoAccessError")


async def test_splash_screens_seen_are_remembered_once(
    client: Client, app: web.Application
) -> None:
    cookie = await signed_in(client, 3, "splash@example.com")
    me = (await (await client.get(ME, headers=cookie)).json())["user"]["id"]
    for _ in range(2):
        resp = await client.post("/api/admin/splash/personalDashboardKeyConcepts", headers=cookie)
        assert resp.status == 200
        assert await resp.json() == {
            "userId": me,
            "splashId": "personalDashboardKeyConcepts",
            "seen": True,
        }
    await client.post("/api/admin/splash/strategy-drag-tooltip", headers=cookie)
    body = await (await client.get(ME, headers=cookie)).json()
    assert body["splash"] == {"personalDashboardKeyConcepts": True, "strategy-drag-tooltip": True}
    async with app[POOL].acquire() as conn:
        stored = await conn.fetch(
            "SELECT data FROM events WHERE type = 'SplashSeen' ORDER BY position"
        )
    assert len(stored) == 2  # seeing one again records nothing


@pytest.mark.parametrize("splash", ["x" * 256, "tab%09here"])
async def test_a_splash_name_out_of_bounds_is_a_400(client: Client, splash: str) -> None:
    cookie = await signed_in(client, 3, "bounds@example.com")
    resp = await client.post(f"/api/admin/splash/{splash}", headers=cookie)
    assert (await error(resp, 400, "ValidationError")).endswith("- at `id`")


async def test_only_people_have_splash_screens_and_feedback(client: Client) -> None:
    machine = await make_account(client.app, role=1, service=True)
    for headers in (ADMIN, machine.headers):
        resp = await client.post("/api/admin/splash/operators", headers=headers)
        assert await error(resp, 403, "NoAccessError") == "PATs require an authenticated user."
        resp = await client.post(
            "/api/admin/feedback", json={"feedbackId": "pnps"}, headers=headers
        )
        assert resp.status == 403
    body = await (await client.get(ME, headers=ADMIN)).json()
    assert (body["feedback"], body["splash"]) == ([], {})


async def test_feedback_prompts_answered(client: Client, app: web.Application) -> None:
    cookie = await signed_in(client, 2, "feedback@example.com")
    me = (await (await client.get(ME, headers=cookie)).json())["user"]["id"]
    before = datetime.now(UTC)
    resp = await client.post("/api/admin/feedback", json={"feedbackId": "pnps"}, headers=cookie)
    assert resp.status == 200
    created = await resp.json()
    assert created == {
        "userId": me,
        "feedbackId": "pnps",
        "neverShow": False,
        "given": created["given"],
    }
    assert datetime.fromisoformat(created["given"]) >= before
    given = "2026-06-01T12:00:00Z"
    resp = await client.put(
        "/api/admin/feedback/pnps", json={"neverShow": True, "given": given}, headers=cookie
    )
    assert await resp.json() == {
        "userId": me,
        "feedbackId": "pnps",
        "neverShow": True,
        "given": "2026-06-01T12:00:00Z",
    }
    # A prompt never answered before is answered by the PUT (as in Unleash).
    resp = await client.put("/api/admin/feedback/ces:segments", json={}, headers=cookie)
    assert (await resp.json())["neverShow"] is False
    body = await (await client.get(ME, headers=cookie)).json()
    assert [f["feedbackId"] for f in body["feedback"]] == ["ces:segments", "pnps"]
    assert body["feedback"][1] == {
        "userId": me,
        "feedbackId": "pnps",
        "neverShow": True,
        "given": "2026-06-01T12:00:00Z",
    }
    resp = await client.post("/api/admin/feedback", json={"neverShow": True}, headers=cookie)
    assert (
        await error(resp, 400, "ValidationError")
    ) == "Object missing required field `feedbackId`"


async def test_what_people_told_the_ui_replays_and_goes_with_them(
    client: Client, app: web.Application
) -> None:
    await create_user(client, {"email": "gone@example.com", "password": STRONG})
    _, cookie = await sign_in(client, "gone@example.com")
    await client.post("/api/admin/splash/operators", headers=session(cookie))
    await client.post("/api/admin/feedback", json={"feedbackId": "pnps"}, headers=session(cookie))
    async with app[POOL].acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM user_splashes") == 1
        await replay(conn)
        assert (await verify(conn)).ok
        assert await conn.fetchval("SELECT count(*) FROM user_feedback") == 1
    user_id = (await (await client.get(ME, headers=session(cookie))).json())["user"]["id"]
    assert (await client.delete(f"/api/admin/user-admin/{user_id}", headers=ADMIN)).status == 200
    async with app[POOL].acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM user_splashes") == 0
        assert await conn.fetchval("SELECT count(*) FROM user_feedback") == 0
        assert (await verify(conn)).ok


def test_a_person_has_at_most_a_thousand_of_each() -> None:
    person = Locked(
        id=7, account_type="User", name=None, username="u", email=None, root_role=3,
        login_attempts=0,
    )  # fmt: skip
    assert domain.see_splash(person, 7, "x", seen=False, count=999)
    assert domain.see_splash(person, 7, "x", seen=True, count=1000) == []
    with pytest.raises(ValidationError, match="at most 1000 splash screens"):
        domain.see_splash(person, 7, "x", seen=False, count=1000)
    now = datetime.now(UTC)
    again = domain.record_feedback(
        person, 7, "pnps", given=now, never_show=True, answered=True, count=1000
    )
    assert again.never_show
    with pytest.raises(ValidationError, match="at most 1000 feedback prompts"):
        domain.record_feedback(
            person, 7, "new", given=now, never_show=False, answered=False, count=1000
        )
    with pytest.raises(NotFound):
        domain.see_splash(None, 7, "x", seen=False, count=0)


async def test_ui_errors_are_logged_shortened_and_without_tokens(client: Client) -> None:
    viewer = await make_account(client.app, role=3)
    stack = "Error: boom\n" + "    at Component (index.js:1:1)\n" * 500
    report = {"errorMessage": f"failed with {ADMIN_TOKEN} and {viewer.secret}", "errorStack": stack}
    with capture_logs() as logs:
        resp = await client.post("/api/admin/record-ui-error", json=report, headers=viewer.headers)
    assert (resp.status, await resp.read()) == (204, b"")
    [line] = [line for line in logs if line["event"] == "ui_error"]
    assert line["log_level"] == "warning"
    assert line["principal"] == f"user:{viewer.id}"
    assert line["error_message"] == "failed with *:*.******** and user:********"
    assert len(line["error_stack"]) == 4003
    assert line["error_stack"].endswith("...")
    assert ADMIN_TOKEN not in str(logs)
    assert viewer.secret not in str(logs)
    resp = await client.post("/api/admin/record-ui-error", json={}, headers=viewer.headers)
    assert (
        await error(resp, 400, "ValidationError")
    ) == "Object missing required field `errorMessage`"
    resp = await client.post("/api/admin/record-ui-error", json={"errorMessage": "x"})
    assert resp.status == 401


async def test_sign_out_from_the_uis_html_form_goes_to_the_start(client: Client) -> None:
    cookie = await signed_in(client, 3, "leaving@example.com")
    # The UI's form: <form method="POST" action="/logout">, an empty urlencoded body.
    resp = await client.post(
        "/logout",
        data=b"",
        headers={**cookie, "Content-Type": "application/x-www-form-urlencoded"},
        allow_redirects=False,
    )
    assert resp.status == 302
    assert resp.headers["Location"] == "/"
    assert (await client.get(ME, headers=cookie)).status == 401
    page = await client.get("/")  # where the browser goes next: the UI, whose sign-in form shows
    assert page.status == 200


async def test_the_profile_the_projects_page_reads(client: Client) -> None:
    cookie = await signed_in(client, 2, "profile@example.com")
    resp = await client.get("/api/admin/user/profile", headers=cookie)
    assert resp.status == 200
    assert await resp.json() == {
        "rootRole": {
            "id": 2,
            "type": "root",
            "name": "Editor",
            "description": auth.ROOT_ROLES[2].description,
        },
        "projects": [],
        "subscriptions": [],
        "features": [],
    }
    resp = await client.get("/api/admin/user/profile", headers=ADMIN)
    assert await error(resp, 403, "NoAccessError") == "PATs require an authenticated user."
