"""Security of accounts: every admin route declares its permission and is walked here; no
secret or password leaks into events, read models, logs or later answers; tokens are found by
hash; read models of accounts rebuild identically."""

from __future__ import annotations

import io
import json
import re
from typing import TYPE_CHECKING, Any

import pytest

from eventlog.logs import configure_logging
from projections.replay import replay
from projections.verify import verify
from service import auth
from service.app import ROUTES
from service.appkeys import POOL
from service.openapi import openapi_path
from tests import factories
from tests.factories import (
    ADMIN,
    ADMIN_TOKEN,
    STRONG,
    USERS,
    api_token,
    create_user,
    error,
    in_days,
    make_account,
    session,
    sign_in,
)

if TYPE_CHECKING:
    import asyncpg
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    from eventlog.connections import Conn
    from tests.conftest import AiohttpClient

    Client = TestClient[Any, Any]

UI_ASSET = "index-T3stHash.js"  # of the web UI's stand-in build (tests/ui_sample)
ENVIRONMENT = "/api/admin/projects/{projectId}/features/{featureName}/environments/{environment}"
STRATEGIES = ENVIRONMENT + "/strategies"
DEPENDENCIES = "/api/admin/projects/{projectId}/features/{child}/dependencies"
# Every route and the permission it needs, as the README documents them: written here, not read
# from the application, so that a route whose declared permission drifts fails this test.
# "any" in the README is READ; OWN_ACCOUNT is held by people (sessions and their own tokens).
ROUTE_PERMISSIONS = [
    ("GET", "/health", "PUBLIC"),
    ("HEAD", "/health", "PUBLIC"),
    ("GET", "/ready", "PUBLIC"),
    ("HEAD", "/ready", "PUBLIC"),
    ("GET", "/internal-backstage/prometheus", "PUBLIC"),
    ("GET", "/docs/openapi.json", "PUBLIC"),
    ("GET", "/docs/openapi/", "PUBLIC"),
    ("GET", "/docs/openapi", "PUBLIC"),
    ("GET", "/docs/openapi/{asset}", "PUBLIC"),
    ("POST", "/auth/simple/login", "PUBLIC"),
    ("POST", "/logout", "PUBLIC"),
    ("GET", "/api/admin/user", "READ"),
    ("GET", "/api/admin/roles", "READ"),
    ("GET", "/api/admin/user-admin", "ADMIN"),
    ("POST", "/api/admin/user-admin", "ADMIN"),
    ("GET", "/api/admin/user-admin/search", "READ"),
    ("GET", "/api/admin/user-admin/inactive", "ADMIN"),
    ("POST", "/api/admin/user-admin/inactive/delete", "ADMIN"),
    ("GET", "/api/admin/user-admin/{id}", "ADMIN"),
    ("PUT", "/api/admin/user-admin/{id}", "ADMIN"),
    ("DELETE", "/api/admin/user-admin/{id}", "ADMIN"),
    ("POST", "/api/admin/user-admin/{id}/change-password", "ADMIN"),
    ("POST", "/api/admin/user-admin/validate-password", "READ"),
    ("POST", "/api/admin/user-admin/reset-password", "ADMIN"),
    ("GET", "/api/admin/user-admin/admin-count", "ADMIN"),
    ("GET", "/api/admin/user-admin/access", "READ"),
    ("GET", "/api/admin/user-admin/{id}/permissions", "ADMIN"),
    ("GET", "/api/admin/user/roles", "OWN_ACCOUNT"),
    ("POST", "/api/admin/user/change-password", "OWN_ACCOUNT"),
    ("GET", "/auth/reset/validate", "PUBLIC"),
    ("POST", "/auth/reset/password", "PUBLIC"),
    ("POST", "/auth/reset/validate-password", "PUBLIC"),
    ("POST", "/auth/reset/password-email", "PUBLIC"),
    ("GET", "/api/admin/user/tokens", "OWN_ACCOUNT"),
    ("POST", "/api/admin/user/tokens", "OWN_ACCOUNT"),
    ("DELETE", "/api/admin/user/tokens/{id}", "OWN_ACCOUNT"),
    ("GET", "/api/admin/service-account", "ADMIN"),
    ("POST", "/api/admin/service-account", "ADMIN"),
    ("PUT", "/api/admin/service-account/{id}", "ADMIN"),
    ("DELETE", "/api/admin/service-account/{id}", "ADMIN"),
    ("GET", "/api/admin/service-account/{id}/token", "ADMIN"),
    ("POST", "/api/admin/service-account/{id}/token", "ADMIN"),
    ("DELETE", "/api/admin/service-account/{id}/token/{tokenId}", "ADMIN"),
    ("GET", "/api/admin/api-tokens", "READ_API_TOKEN"),
    ("POST", "/api/admin/api-tokens", "ADMIN"),
    ("DELETE", "/api/admin/api-tokens/{token}", "ADMIN"),
    ("GET", "/api/admin/api-tokens/{token}", "READ_API_TOKEN"),
    ("PUT", "/api/admin/api-tokens/{token}", "ADMIN"),
    ("GET", "/api/admin/projects/{projectId}/api-tokens", "READ_API_TOKEN"),
    ("POST", "/api/admin/projects/{projectId}/api-tokens", "ADMIN"),
    ("DELETE", "/api/admin/projects/{projectId}/api-tokens/{token}", "ADMIN"),
    ("GET", "/api/admin/invite-link/tokens", "ADMIN"),
    ("POST", "/api/admin/invite-link/tokens", "ADMIN"),
    ("GET", "/api/admin/invite-link/tokens/{token}", "ADMIN"),
    ("PUT", "/api/admin/invite-link/tokens/{token}", "ADMIN"),
    ("GET", "/invite/{token}/validate", "PUBLIC"),
    ("POST", "/invite/{token}/signup", "PUBLIC"),
    ("GET", "/api/admin/projects", "READ"),
    ("POST", "/api/admin/projects", "CREATE_PROJECT"),
    ("GET", "/api/admin/projects/{projectId}", "READ"),
    ("DELETE", "/api/admin/projects/{projectId}", "DELETE_PROJECT"),
    ("GET", "/api/admin/environments", "READ"),
    ("POST", "/api/admin/environments", "ADMIN"),
    ("POST", "/api/admin/projects/{projectId}/environments", "UPDATE_PROJECT"),
    ("DELETE", "/api/admin/projects/{projectId}/environments/{environment}", "UPDATE_PROJECT"),
    ("GET", "/api/admin/environments/{name}", "READ"),
    ("POST", "/api/admin/environments/{name}/on", "ADMIN"),
    ("POST", "/api/admin/environments/{name}/off", "ADMIN"),
    ("PUT", "/api/admin/environments/sort-order", "ADMIN"),
    ("PUT", "/api/admin/environments/update/{name}", "ADMIN"),
    ("GET", "/api/admin/environments/project/{projectId}", "READ"),
    (
        "POST",
        "/api/admin/projects/{projectId}/environments/{environment}/default-strategy",
        "UPDATE_PROJECT",
    ),
    (
        "POST",
        "/api/admin/projects/{projectId}/bulk_features/environments/{environment}/on",
        "UPDATE_FEATURE",
    ),
    (
        "POST",
        "/api/admin/projects/{projectId}/bulk_features/environments/{environment}/off",
        "UPDATE_FEATURE",
    ),
    ("POST", "/api/admin/projects/{projectId}/features", "CREATE_FEATURE"),
    ("GET", "/api/admin/projects/{projectId}/features", "READ"),
    ("GET", "/api/admin/projects/{projectId}/features/{featureName}", "READ"),
    ("DELETE", "/api/admin/projects/{projectId}/features/{featureName}", "DELETE_FEATURE"),
    ("POST", "/api/admin/projects/{projectId}/revive", "UPDATE_FEATURE"),
    ("POST", "/api/admin/projects/{projectId}/stale", "UPDATE_FEATURE"),
    ("POST", "/api/admin/projects/{projectId}/features/{featureName}/clone", "CREATE_FEATURE"),
    ("POST", "/api/admin/features-batch/export", "READ"),
    ("POST", "/api/admin/features-batch/validate", "READ"),
    ("POST", "/api/admin/features-batch/import", "UPDATE_FEATURE"),
    ("POST", "/api/admin/projects/{projectId}/archive", "DELETE_FEATURE"),
    ("POST", "/api/admin/projects/{projectId}/archive/validate", "DELETE_FEATURE"),
    ("POST", "/api/admin/projects/{projectId}/delete", "DELETE_FEATURE"),
    ("GET", "/api/admin/archive/features", "READ"),
    ("GET", "/api/admin/archive/features/{projectId}", "READ"),
    ("POST", "/api/admin/archive/revive/{featureName}", "UPDATE_FEATURE"),
    ("DELETE", "/api/admin/archive/{featureName}", "DELETE_FEATURE"),
    ("GET", STRATEGIES, "READ"),
    ("POST", STRATEGIES, "UPDATE_FEATURE"),
    ("PUT", f"{STRATEGIES}/{{strategyId}}", "UPDATE_FEATURE"),
    ("DELETE", f"{STRATEGIES}/{{strategyId}}", "UPDATE_FEATURE"),
    ("POST", f"{ENVIRONMENT}/on", "UPDATE_FEATURE"),
    ("POST", f"{ENVIRONMENT}/off", "UPDATE_FEATURE"),
    ("PUT", f"{ENVIRONMENT}/variants", "UPDATE_FEATURE"),
    ("GET", "/api/admin/features/{featureName}/tags", "READ"),
    ("POST", "/api/admin/features/{featureName}/tags", "UPDATE_FEATURE"),
    ("DELETE", "/api/admin/features/{featureName}/tags/{type}/{value}", "UPDATE_FEATURE"),
    ("POST", DEPENDENCIES, "UPDATE_FEATURE"),
    ("DELETE", DEPENDENCIES, "UPDATE_FEATURE"),
    ("DELETE", f"{DEPENDENCIES}/{{parent}}", "UPDATE_FEATURE"),
    ("GET", "/api/admin/segments", "READ"),
    ("POST", "/api/admin/segments", "CREATE_SEGMENT"),
    ("GET", "/api/admin/segments/{id}", "READ"),
    ("PUT", "/api/admin/segments/{id}", "UPDATE_SEGMENT"),
    ("DELETE", "/api/admin/segments/{id}", "DELETE_SEGMENT"),
    ("GET", "/api/admin/tag-types", "READ"),
    ("POST", "/api/admin/tag-types", "CREATE_TAG_TYPE"),
    ("POST", "/api/admin/tag-types/validate", "READ"),
    ("GET", "/api/admin/tag-types/{name}", "READ"),
    ("PUT", "/api/admin/tag-types/{name}", "UPDATE_TAG_TYPE"),
    ("DELETE", "/api/admin/tag-types/{name}", "DELETE_TAG_TYPE"),
    ("GET", "/api/admin/tags", "READ"),
    ("POST", "/api/admin/tags", "UPDATE_FEATURE"),
    ("GET", "/api/admin/tags/{type}", "READ"),
    ("GET", "/api/admin/tags/{type}/{value}", "READ"),
    ("DELETE", "/api/admin/tags/{type}/{value}", "UPDATE_FEATURE"),
    ("GET", "/api/admin/feature-types", "READ"),
    ("PUT", "/api/admin/feature-types/{id}/lifetime", "ADMIN"),
    ("GET", "/api/admin/strategies", "READ"),
    ("POST", "/api/admin/strategies", "CREATE_STRATEGY"),
    ("GET", "/api/admin/strategies/{name}", "READ"),
    ("PUT", "/api/admin/strategies/{name}", "UPDATE_STRATEGY"),
    ("DELETE", "/api/admin/strategies/{name}", "DELETE_STRATEGY"),
    ("POST", "/api/admin/strategies/{strategyName}/deprecate", "UPDATE_STRATEGY"),
    ("POST", "/api/admin/strategies/{strategyName}/reactivate", "UPDATE_STRATEGY"),
    ("GET", "/api/admin/context", "READ"),
    ("POST", "/api/admin/context", "CREATE_CONTEXT_FIELD"),
    ("POST", "/api/admin/context/validate", "UPDATE_CONTEXT_FIELD"),
    ("GET", "/api/admin/context/{contextField}", "READ"),
    ("PUT", "/api/admin/context/{contextField}", "UPDATE_CONTEXT_FIELD"),
    ("DELETE", "/api/admin/context/{contextField}", "DELETE_CONTEXT_FIELD"),
    ("GET", "/api/admin/context/{contextField}/strategies", "READ"),
    ("POST", "/api/admin/context/{contextField}/legal-values", "UPDATE_CONTEXT_FIELD"),
    ("DELETE", "/api/admin/context/{contextField}/legal-values/{value}", "UPDATE_CONTEXT_FIELD"),
    ("POST", "/api/admin/segments/validate", "READ"),
    ("POST", "/api/admin/segments/strategies", "UPDATE_FEATURE"),
    ("GET", "/api/admin/segments/{id}/strategies", "READ"),
    ("GET", "/api/admin/events", "ADMIN"),
    ("GET", "/api/admin/events/{featureName}", "READ"),
    ("GET", "/api/admin/search/events", "READ"),
    ("POST", "/api/admin/events/search", "READ"),
    ("GET", "/api/admin/event-creators", "READ"),
    ("GET", "/api/admin/audit/diff", "ADMIN"),
    ("GET", "/api/client/features", "CLIENT"),
    ("GET", "/api/client/features/{name}", "CLIENT"),
    ("GET", "/api/client/streaming", "CLIENT"),
    ("POST", "/api/client/register", "CLIENT"),
    ("POST", "/api/client/metrics", "CLIENT"),
    ("GET", "/api/frontend", "FRONTEND"),
    ("POST", "/api/frontend", "FRONTEND"),
    ("POST", "/api/admin/playground", "READ"),
    ("POST", "/api/admin/playground/advanced", "READ"),
    ("POST", "/api/frontend/client/register", "FRONTEND"),
    ("POST", "/api/frontend/client/metrics", "FRONTEND"),
    ("POST", "/api/admin/projects/{projectId}/features/{featureName}/favorites", "OWN_ACCOUNT"),
    ("DELETE", "/api/admin/projects/{projectId}/features/{featureName}/favorites", "OWN_ACCOUNT"),
    ("POST", "/api/admin/projects/{projectId}/favorites", "OWN_ACCOUNT"),
    ("DELETE", "/api/admin/projects/{projectId}/favorites", "OWN_ACCOUNT"),
    ("GET", "/api/admin/projects/{projectId}/overview", "READ"),
    ("GET", "/api/admin/projects/{projectId}/status", "READ"),
    ("GET", "/api/admin/projects/{projectId}/flag-creators", "READ"),
    ("GET", "/api/admin/personal-dashboard", "OWN_ACCOUNT"),
    ("GET", "/api/admin/personal-dashboard/{projectId}", "OWN_ACCOUNT"),
    ("GET", "/api/admin/search/features", "READ"),
    # A flag's page in Unleash's UI (issue 42).
    ("PATCH", "/api/admin/projects/{projectId}/features/{featureName}", "UPDATE_FEATURE"),
    ("POST", "/api/admin/features/validate", "READ"),
    ("GET", f"{STRATEGIES}/{{strategyId}}", "READ"),
    ("PATCH", f"{STRATEGIES}/{{strategyId}}", "UPDATE_FEATURE"),
    ("POST", f"{STRATEGIES}/set-sort-order", "UPDATE_FEATURE"),
    ("GET", f"{ENVIRONMENT}/variants", "READ"),
    ("PATCH", f"{ENVIRONMENT}/variants", "UPDATE_FEATURE"),
    (
        "PUT",
        "/api/admin/projects/{projectId}/features/{featureName}/variants-batch",
        "UPDATE_FEATURE",
    ),
    ("PUT", "/api/admin/features/{featureName}/tags", "UPDATE_FEATURE"),
    ("PUT", "/api/admin/projects/{projectId}/tags", "UPDATE_FEATURE"),
    ("GET", "/api/admin/projects/{projectId}/features/{child}/parents", "READ"),
    ("GET", "/api/admin/projects/{projectId}/features/{parent}/parent-variants", "READ"),
    ("GET", "/api/admin/projects/{projectId}/dependencies", "READ"),
    ("PUT", "/api/admin/projects/{projectId}/features/{featureName}", "UPDATE_FEATURE"),
    (
        "GET",
        "/api/admin/projects/{projectId}/features/{featureName}/environments/{environment}",
        "READ",
    ),
    ("GET", "/api/admin/projects/{projectId}/features/{featureName}/variants", "READ"),
    ("PUT", "/api/admin/projects/{projectId}/features/{featureName}/variants", "UPDATE_FEATURE"),
    ("PATCH", "/api/admin/projects/{projectId}/features/{featureName}/variants", "UPDATE_FEATURE"),
    ("POST", "/api/admin/projects/{projectId}/features/{featureName}/link", "UPDATE_FEATURE"),
    (
        "PUT",
        "/api/admin/projects/{projectId}/features/{featureName}/link/{linkId}",
        "UPDATE_FEATURE",
    ),
    (
        "DELETE",
        "/api/admin/projects/{projectId}/features/{featureName}/link/{linkId}",
        "UPDATE_FEATURE",
    ),
    ("GET", "/api/admin/projects/{projectId}/features/{featureName}/lifecycle", "READ"),
    (
        "POST",
        "/api/admin/projects/{projectId}/features/{featureName}/lifecycle/complete",
        "UPDATE_FEATURE",
    ),
    (
        "POST",
        "/api/admin/projects/{projectId}/features/{featureName}/lifecycle/uncomplete",
        "UPDATE_FEATURE",
    ),
    ("GET", "/api/admin/lifecycle/count", "READ"),
    ("GET", "/api/admin/segments/strategies/{strategyId}", "READ"),
    ("POST", "/api/admin/constraints/validate", "READ"),
    ("GET", "/api/admin/client-metrics/features/{name}", "READ"),
    ("GET", "/api/admin/client-metrics/features/{name}/raw", "READ"),
    ("GET", "/api/admin/metrics/applications", "READ"),
    ("GET", "/api/admin/metrics/applications/{appName}", "READ"),
    ("POST", "/api/admin/metrics/applications/{appName}", "UPDATE_APPLICATION"),
    ("DELETE", "/api/admin/metrics/applications/{appName}", "DELETE_APPLICATION"),
    ("GET", "/api/admin/metrics/applications/{appName}/overview", "READ"),
    ("GET", "/api/admin/metrics/instances/{appName}/environment/{environment}", "READ"),
    ("GET", "/api/admin/metrics/sdks/outdated", "READ"),
    ("GET", "/api/admin/projects/{projectId}/applications", "READ"),
    ("GET", "/api/admin/projects/{projectId}/sdks/outdated", "READ"),
    ("GET", "/api/admin/projects/{projectId}/health-report", "READ"),
    ("GET", "/api/admin/projects/{projectId}/dora", "READ"),
    ("GET", "/api/admin/projects/{projectId}/insights", "READ"),
    ("GET", "/api/admin/ui-config", "READ"),
    ("POST", "/api/admin/record-ui-error", "READ"),
    ("GET", "/api/admin/user/profile", "OWN_ACCOUNT"),
    ("POST", "/api/admin/splash/{id}", "OWN_ACCOUNT"),
    ("POST", "/api/admin/feedback", "OWN_ACCOUNT"),
    ("PUT", "/api/admin/feedback/{id}", "OWN_ACCOUNT"),
    ("GET", "/api/admin/maintenance", "ADMIN"),
    ("POST", "/api/admin/maintenance", "ADMIN"),
    ("POST", "/api/admin/ui-config", "ADMIN"),
    ("POST", "/api/admin/ui-config/cors", "ADMIN"),
    ("GET", "/api/admin/instance-admin/statistics", "READ"),
    ("GET", "/api/admin/instance-admin/statistics/csv", "READ"),
    ("GET", "/api/admin/telemetry/settings", "READ"),
    ("GET", "/api/admin/addons", "READ"),
    ("POST", "/api/admin/addons", "CREATE_ADDON"),
    ("GET", "/api/admin/addons/{id}", "READ"),
    ("PUT", "/api/admin/addons/{id}", "UPDATE_ADDON"),
    ("DELETE", "/api/admin/addons/{id}", "DELETE_ADDON"),
    ("GET", "/api/admin/addons/{id}/events", "ADMIN"),
    ("GET", "/", "PUBLIC"),
    ("GET", "/static/{file}", "PUBLIC"),
    ("GET", "/{path}", "PUBLIC"),
]
# The root roles' permissions, as the README documents them (ADMIN implies every other one).
ROLE_PERMISSIONS = {
    1: {"ADMIN", "READ"},
    2: {
        "READ",
        "CREATE_FEATURE",
        "UPDATE_FEATURE",
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
        "READ_API_TOKEN",
    },
    3: {"READ"},
}


def test_the_application_has_exactly_the_routes_of_the_table() -> None:
    """A new route must be added to the table above (and to the README), and so be walked."""
    served = sorted((r.method, openapi_path(r.path)) for r in ROUTES)
    assert served == sorted((method, path) for method, path, _ in ROUTE_PERMISSIONS)


def expected_status(permission: str, held: set[str] | None) -> int | None:
    """401 without credentials, 403 without the permission, else None (the route runs)."""
    if held is None:
        return 401
    if permission == "OWN_ACCOUNT":
        return None if "OWN_ACCOUNT" in held else 403
    return None if "ADMIN" in held or permission in held else 403


async def test_walk_the_route_table_with_every_kind_of_principal(
    client: Client, app: web.Application
) -> None:
    """Each admin route, called by each principal, gets 401/403 exactly when the route table
    says so. Path parameters are placeholders: past auth, 404 or 400 are fine."""
    principals: dict[str, tuple[dict[str, str], set[str] | None]] = {
        "nobody": ({}, None),
        "client token": ({"Authorization": (await api_token(client))["secret"]}, {"CLIENT"}),
        "frontend token": (
            {"Authorization": (await api_token(client, "frontend"))["secret"]},
            {"FRONTEND"},
        ),
        "admin token": (ADMIN, {"ADMIN", "READ"}),
    }
    for role, granted in ROLE_PERMISSIONS.items():
        person = await make_account(app, role=role)
        principals[f"role {role} user"] = (person.headers, granted | {"OWN_ACCOUNT"})
        machine = await make_account(app, role=role, service=True)
        principals[f"role {role} service account"] = (machine.headers, granted)
    walked = 0
    for method, template, permission in ROUTE_PERMISSIONS:
        if permission == "PUBLIC":
            continue
        path = re.sub(r"\{[^}]+\}", "12345", template)  # a number matches `{id:\d+}` too
        for who, (headers, held) in principals.items():
            resp = await client.request(method, path, json={}, headers=headers)
            expected = expected_status(permission, held)
            if expected is not None:
                assert resp.status == expected, (method, template, who, await resp.text())
                name = "AuthenticationRequired" if expected == 401 else "NoAccessError"
                assert (await resp.json())["name"] == name
            else:
                assert resp.status not in {401, 403}, (method, template, who, await resp.text())
            walked += 1
    assert walked == 10 * sum(1 for *_, p in ROUTE_PERMISSIONS if p != "PUBLIC")


async def test_public_routes_run_without_credentials(client: Client) -> None:
    for method, template, permission in ROUTE_PERMISSIONS:
        if permission != "PUBLIC":
            continue
        body = {
            "username": "nobody",
            "password": "Wr0ng!Passw0rd#1",
            "token": "no-such-reset-link",
            "email": "nobody@example.com",
        }
        path = template.replace("{asset}", "swagger-ui.css").replace("{file}", UI_ASSET)
        path = path.replace("{token}", "unknown")
        resp = await client.request(method, path, json=body, allow_redirects=False)
        if template == "/auth/simple/login":  # the route itself ran and refused the password
            assert (await resp.json())["name"] == "PasswordMismatch"
        elif template.startswith("/invite/"):  # the route itself ran: no such invite link
            assert (resp.status, (await resp.json())["name"]) == (400, "ValidationError")
        elif template in {"/auth/reset/validate", "/auth/reset/password"}:  # refused the token
            assert (await resp.json())["name"] == "InvalidTokenError"
        else:
            assert resp.status in {200, 302}, (method, template, resp.status)


async def test_no_secret_or_password_leaks(
    app: web.Application, aiohttp_client: AiohttpClient
) -> None:
    logs = io.StringIO()
    configure_logging("json", "debug", logs)
    client = await aiohttp_client(app)
    secrets: dict[str, str] = {"admin token": ADMIN_TOKEN}
    answers: list[str] = []  # every answer except the one that created a secret

    async def call(method: str, path: str, **kwargs: Any) -> Any:
        resp = await client.request(method, path, **kwargs)
        answers.append(json.dumps(dict(resp.headers)) + await resp.text())
        return resp

    # Passwords: set at creation, wrong, changed.
    secrets["password"] = STRONG
    user = await create_user(client, {"username": "bob", "password": STRONG, "rootRole": 1})
    secrets["wrong password"] = "Wr0ng!Password#1"
    await call(
        "POST",
        "/auth/simple/login",
        json={"username": "bob", "password": secrets["wrong password"]},
    )
    resp, cookie = await sign_in(client, "bob")
    secrets["session cookie"] = cookie
    me = session(cookie)
    # Tokens of every kind, each created once and then used.
    resp = await client.post(
        "/api/admin/user/tokens", json={"description": "d", "expiresAt": in_days(1)}, headers=me
    )
    secrets["personal access token"] = (await resp.json())["secret"]
    resp = await client.post(
        "/api/admin/service-account", json={"username": "sa", "rootRole": 1}, headers=ADMIN
    )
    account_id = (await resp.json())["id"]
    resp = await client.post(
        f"/api/admin/service-account/{account_id}/token",
        json={"description": "d", "expiresAt": in_days(1)},
        headers=ADMIN,
    )
    secrets["service account token"] = (await resp.json())["secret"]
    secrets["client token"] = (await api_token(client))["secret"]
    for headers in (
        me,
        {"Authorization": secrets["personal access token"]},
        {"Authorization": secrets["service account token"]},
        ADMIN,
    ):
        for path in (
            "/api/admin/user",
            "/api/admin/user/tokens",
            "/api/admin/api-tokens",
            f"/api/admin/service-account/{account_id}/token",
            USERS,
        ):
            await call("GET", path, headers=headers)
    await call("GET", "/api/admin/projects", headers={"Authorization": secrets["client token"]})
    secrets["new password"] = "N3w!Password#2026"
    await call(
        "POST",
        f"{USERS}/{user['id']}/change-password",
        json={"password": secrets["new password"]},
        headers=ADMIN,
    )
    await call("POST", "/logout", headers=me, allow_redirects=False)
    # The event log shows every event above, and none of the hashes that stand for secrets.
    log_answers = [
        await (await call("GET", path, headers=ADMIN)).text()
        for path in ("/api/admin/events", "/api/admin/search/events?limit=1000")
    ]
    assert '"user-created"' in log_answers[1]
    hashes = [auth.hash_secret(secrets[s]) for s in secrets if s != "password"]
    for text in log_answers:
        assert "$argon2" not in text
        assert not [h for h in hashes if h in text]
    await app[POOL].fetchval("SELECT 1")
    async with app[POOL].acquire() as conn:
        stored = await everything_stored(conn)
    places = {"logs": logs.getvalue(), "stored": stored, "answers": "\n".join(answers)}
    assert len(places["logs"].splitlines()) >= 25
    for what, secret in secrets.items():
        for where, text in places.items():
            assert secret not in text, f"the {what} is in the {where}"
    # What is stored instead: hashes of tokens and cookies, argon2id of passwords.
    assert auth.hash_secret(secrets["service account token"]) in stored
    assert auth.hash_secret(secrets["session cookie"]) in stored
    assert "$argon2id$" in stored


async def everything_stored(conn: Conn) -> str:
    """The event log and every read-model and reporting row, as text."""
    parts = [await conn.fetchval("SELECT string_agg(e::text, ' ') FROM events e")]
    tables = await conn.fetch(
        "SELECT table_schema, table_name FROM information_schema.tables "
        "WHERE table_schema IN ('readmodel', 'reporting', 'public')"
    )
    for table in tables:
        ident = f'"{table["table_schema"]}"."{table["table_name"]}"'
        parts.append(await conn.fetchval(f"SELECT string_agg(t::text, ' ') FROM {ident} t"))
    return " ".join(p for p in parts if p)


@pytest.mark.parametrize(
    ("query", "index"),
    [
        (auth.RESOLVE_API_TOKEN, "api_tokens_secret_hash_key"),
        (auth.RESOLVE_PAT, "personal_access_tokens_secret_hash_key"),
        (auth.RESOLVE_SESSION, "sessions_pkey"),
    ],
)
async def test_credentials_are_found_by_one_index_lookup_of_their_hash(
    conn: asyncpg.Connection, query: str, index: str
) -> None:
    await conn.execute("SET enable_seqscan = off")  # tiny tables: ask what the plan can use
    plan = "\n".join(r[0] for r in await conn.fetch("EXPLAIN " + query, "0" * 64))
    assert f"Index Scan using {index}" in plan


async def test_a_token_that_differs_in_one_character_is_refused(
    client: Client, app: web.Application
) -> None:
    person = await make_account(app, role=1)
    assert (await client.get(USERS, headers=person.headers)).status == 200
    secret = person.secret
    for forged in (
        secret.upper(),
        secret[:-1],
        secret + "0",
        secret[:-1] + ("1" if secret[-1] != "1" else "2"),
        f" {secret} x",
    ):
        await error(
            await client.get(USERS, headers={"Authorization": forged}),
            401,
            "AuthenticationRequired",
        )


async def test_account_read_models_rebuild_identically(any_conn: asyncpg.Connection) -> None:
    from datetime import UTC, datetime, timedelta  # noqa: PLC0415

    from eventlog.events.users import (  # noqa: PLC0415
        PersonalAccessTokensSeen,
        TokenUse,
        UserSignedIn,
        UserSignInFailed,
    )

    people = [await factories.account(any_conn, role=r) for r in (1, 2, 3)]
    machine = await factories.account(any_conn, role=1, service=True)
    now = datetime.now(UTC)
    await factories.append(
        any_conn,
        [
            UserSignInFailed(
                user_id=people[0].id,
                attempts=1,
                first_attempted_at=now,
                attempted_at=now,
                login_attempts=1,
            ),
            UserSignedIn(
                user_id=people[0].id,
                seen_at=now,
                session_hash="ab" * 32,
                session_expires_at=now + timedelta(hours=48),
            ),
        ],
        stream=("user", str(people[0].id)),
    )
    await factories.append(
        any_conn,
        [
            PersonalAccessTokensSeen(
                seen=[TokenUse(token_id=1, seen_at=now), TokenUse(token_id=4, seen_at=now)]
            )
        ],
        stream=("token-usage", "personal-access-tokens"),
    )
    tables = ("users", "user_passwords", "personal_access_tokens", "sessions")
    before = {
        t: [tuple(r) for r in await any_conn.fetch(f"SELECT * FROM {t} ORDER BY 1")] for t in tables
    }
    assert len(before["users"]) == 4
    assert machine.id in [row[0] for row in before["users"]]
    await replay(any_conn)
    after = {
        t: [tuple(r) for r in await any_conn.fetch(f"SELECT * FROM {t} ORDER BY 1")] for t in tables
    }
    assert after == before
    report = await verify(any_conn)
    assert report.problems == []
