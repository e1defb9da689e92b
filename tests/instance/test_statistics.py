"""The instance's usage statistics (Unleash's instanceAdminStatsSchema, as JSON and as CSV),
counted from the read models, and the telemetry settings (nothing is ever sent)."""

from __future__ import annotations

import csv
import hashlib
import io
import re
from typing import TYPE_CHECKING, Any

from service.auth import ROOT_ROLES
from service.context.builtins import BUILT_IN as CONTEXT_FIELDS
from service.strategies.builtins import BUILT_IN as STRATEGY_TYPES
from tests.factories import ADMIN, api_token, create_flag, error, make_account, ok

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

STATISTICS = "/api/admin/instance-admin/statistics"


def expected(stats: dict[str, Any], **counts: Any) -> dict[str, Any]:
    """The body Unleash's open-source edition would show for these counts (the rest 0)."""
    body: dict[str, Any] = {
        "timestamp": stats["timestamp"],
        "instanceId": "flagstore",
        "versionOSS": "6.10.1",
        "versionEnterprise": "",
        "users": 0,
        "serviceAccounts": 0,
        "apiTokens": {"admin": 1},  # the bootstrap token of INIT_ADMIN_API_TOKENS
        "activeUsers": {"last7": 0, "last30": 0, "last60": 0, "last90": 0},
        "licensedUsers": 0,
        "featureToggles": 0,
        "archivedFeatureToggles": 0,
        "projects": 1,
        "contextFields": len(CONTEXT_FIELDS),
        "roles": len(ROOT_ROLES),
        "customRootRoles": 0,
        "customRootRolesInUse": 0,
        "groups": 0,
        "environments": 2,
        "segments": 0,
        "strategies": len(STRATEGY_TYPES),
        "SAMLenabled": False,
        "OIDCenabled": False,
        "passwordAuthEnabled": True,
        "SCIMenabled": False,
        "clientApps": [
            {"range": "7d", "count": 0},
            {"range": "30d", "count": 0},
            {"range": "allTime", "count": 0},
        ],
        "featureExports": 0,
        "featureImports": 0,
        "productionChanges": {"last30": 0, "last60": 0, "last90": 0},
        "previousDayMetricsBucketsCount": {"enabledCount": 0, "variantCount": 0},
        "maxEnvironmentStrategies": 0,
        "maxConstraintValues": 0,
        "maxConstraints": 0,
    }
    body |= counts
    signed = "".join(
        str(body[k])
        for k in (
            "users",
            "featureToggles",
            "projects",
            "roles",
            "groups",
            "environments",
            "segments",
        )
    )
    body["sum"] = hashlib.sha256(f"flagstore{signed}".encode()).hexdigest()
    return body


async def test_a_new_instance_counts_what_it_starts_with(client: Client) -> None:
    stats = await ok(await client.get(STATISTICS, headers=ADMIN))
    assert stats == expected(stats)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", stats["timestamp"])


async def test_the_counts_follow_what_is_made(client: Client, app: web.Application) -> None:
    assert await create_flag(client, "one") == 200
    assert await create_flag(client, "two") == 200
    strategy = {
        "name": "flexibleRollout",
        "constraints": [
            {"contextName": "userId", "operator": "IN", "values": ["a", "b", "c"]},
            {"contextName": "appName", "operator": "IN", "values": ["x"]},
        ],
    }
    path = "/api/admin/projects/default/features/one/environments/development/strategies"
    await ok(await client.post(path, json=strategy, headers=ADMIN))
    await ok(await client.post(path, json={"name": "default"}, headers=ADMIN))
    await ok(
        await client.post(
            "/api/admin/projects/default/archive", json={"features": ["two"]}, headers=ADMIN
        ),
        202,
    )
    await make_account(app, role=3)
    await make_account(app, role=2, service=True)
    await api_token(client)
    await api_token(client, "frontend")
    stats = await ok(await client.get(STATISTICS, headers=ADMIN))
    assert stats == expected(
        stats,
        users=1,
        serviceAccounts=1,
        apiTokens={"admin": 1, "client": 1, "frontend": 1},
        featureToggles=1,
        archivedFeatureToggles=1,
        maxEnvironmentStrategies=2,
        maxConstraintValues=3,
        maxConstraints=2,
    )


async def test_the_csv_is_the_same_figures_as_a_file(client: Client) -> None:
    resp = await client.get(f"{STATISTICS}/csv", headers=ADMIN)
    assert resp.status == 200
    assert resp.headers["Content-Type"] == "text/csv; charset=utf-8"
    disposition = resp.headers["Content-Disposition"]
    assert re.fullmatch(r'attachment; filename="unleash-flagstore-\d{13}\.csv"', disposition)
    text = await resp.text()
    header, values = text.split("\n")
    assert header.startswith('"timestamp","instanceId","versionOSS",')
    names, row = list(csv.reader(io.StringIO(text)))
    stats = await ok(await client.get(STATISTICS, headers=ADMIN))
    assert names == list(stats)
    shown = dict(zip(names, row, strict=True))
    assert shown["instanceId"] == "flagstore"
    assert shown["apiTokens"] == '{"admin":1}'
    assert shown["SAMLenabled"] == "false"
    assert (
        shown["clientApps"]
        == '[{"range":"7d","count":0},{"range":"30d","count":0},{"range":"allTime","count":0}]'
    )
    assert shown["sum"] == stats["sum"]  # nothing changed in between: the same signed counts
    # Texts quoted, numbers bare, objects as their JSON (quotes doubled).
    assert ',"6.10.1","",0,0,"{""admin"":1}",' in values


async def test_anyone_signed_in_reads_them_and_sdks_do_not(
    client: Client, app: web.Application
) -> None:
    viewer = await make_account(app, role=3)
    sdk = {"Authorization": (await api_token(client))["secret"]}
    for path in (STATISTICS, f"{STATISTICS}/csv", "/api/admin/telemetry/settings"):
        await ok(await client.get(path, headers=viewer.headers))
        await error(await client.get(path, headers=sdk), 403, "NoAccessError")
        await error(await client.get(path), 401, "AuthenticationRequired")


async def test_telemetry_collection_is_off(client: Client) -> None:
    body = await ok(await client.get("/api/admin/telemetry/settings", headers=ADMIN))
    assert body == {"versionInfoCollectionEnabled": False, "featureInfoCollectionEnabled": False}
