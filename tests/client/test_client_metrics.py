"""The SDKs' reports, POST /api/client/register and /api/client/metrics: what the official
SDKs send is accepted (202, no body), what Unleash refuses is a 400, nothing is a 500; counts
add up per flag, environment, application and hour, feed lastSeenAt, and reach the reporting
views."""

from __future__ import annotations

import asyncio
import io
import json
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import asyncpg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eventlog import connections
from eventlog.events.features import FeatureCreated
from service.appkeys import POOL
from service.telemetry import retention
from service.telemetry.commands import MAX_COUNT, MAX_TOGGLES
from tests import factories
from tests.clientapi import token
from tests.factories import ADMIN, FEATURES, create, error
from tests.pg import Roles, new_login

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

REGISTER = "/api/client/register"
METRICS = "/api/client/metrics"

# What the official SDKs send, byte for byte but for times and ids: unleash-client (Node)
# 6.12.1 (lib/metrics.js getClientData, createMetricsData) and UnleashClient (Python) 6.9.1
# (_payloads.py, the bucket from yggdrasil-engine's get_metrics).
NODE_REGISTER = {
    "appName": "node-app",
    "instanceId": "node-1",
    "sdkVersion": "unleash-node-sdk:6.12.1",
    "strategies": ["default", "flexibleRollout"],
    "started": "2026-11-25T04:18:04.511Z",
    "interval": 60000,
    "connectionId": "c-1",
    "platformName": "node",
    "platformVersion": "20.20.2",
    "yggdrasilVersion": None,
    "specVersion": "5.2.0",
}
# The next hour (UTC), the hour of these reports' stops. A report counts in the hour of its
# stop, and the reporting views give a flag only the hours from the one it was created in on
# (earlier ones are a deleted namesake's). This module is imported when the run starts and its
# flags are created minutes later, maybe in the next hour: the next hour is never before
# their creation's hour, while this hour would be once the run crosses the hour's end.
HOUR = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
_H = f"{HOUR:%Y-%m-%dT%H}"
NODE_METRICS = {
    "appName": "node-app",
    "instanceId": "node-1",
    "connectionId": "c-1",
    "bucket": {
        "start": f"{_H}:00:04.511Z",
        "stop": f"{_H}:00:04.526Z",
        "toggles": {
            "a": {"yes": 1, "no": 0, "variants": {"v1": 1}},
            "b": {"yes": 0, "no": 1, "variants": {}},
        },
    },
    "platformName": "node",
    "platformVersion": "20.20.2",
    "yggdrasilVersion": None,
    "specVersion": "5.2.0",
}
PYTHON_REGISTER = {
    "appName": "py-app",
    "instanceId": "unleash-python-sdk",
    "connectionId": "f98067cb-9274-494a-bf5a-b0fd4fe27c62",
    "platformName": "CPython",
    "platformVersion": "3.11.7",
    "yggdrasilVersion": "0.20.8",
    "specVersion": "6.1.0",
    "sdkVersion": "unleash-python-sdk:6.9.1",
    "strategies": ["default", "flexibleRollout"],
    "started": "2026-11-25T04:17:59.746500+00:00",
    "interval": 60,
}
PYTHON_METRICS = {
    "appName": "py-app",
    "instanceId": "unleash-python-sdk",
    "connectionId": "f98067cb-9274-494a-bf5a-b0fd4fe27c62",
    "platformName": "CPython",
    "platformVersion": "3.11.7",
    "yggdrasilVersion": "0.20.8",
    "specVersion": "6.1.0",
    "bucket": {
        "start": f"{_H}:00:03.903562978Z",
        "stop": f"{_H}:00:03.903883855Z",
        "toggles": {
            "b": {"no": 1, "yes": 0, "variants": {}},
            "a": {"no": 0, "yes": 2, "variants": {"v1": 1}},
        },
    },
    "impactMetrics": [
        {"name": "x", "help": "h", "type": "counter", "samples": [{"labels": {}, "value": 0}]}
    ],
}
USAGE = """
SELECT feature_name, environment, app_name, hour, yes, no, variants::text AS variants, project
FROM reporting.flag_usage_hourly ORDER BY hour, feature_name, environment, app_name
"""


@pytest.fixture
async def sdk(client: Client) -> dict[str, str]:
    """A client token of environment development, and flags `a` and `b`."""
    for name in ("a", "b"):
        assert (await create(client, {"name": name})).status == 200
    return {"Authorization": await token(client)}


def bucket(toggles: dict[str, Any], stop: datetime = HOUR, **fields: Any) -> dict[str, Any]:
    times = {"start": (stop - timedelta(minutes=1)).isoformat(), "stop": stop.isoformat()}
    return {"appName": "app", "bucket": {**times, "toggles": toggles}} | fields


async def accepted(client: Client, path: str, body: Any, headers: dict[str, str]) -> None:
    resp = await client.post(path, json=body, headers=headers)
    assert resp.status == 202, await resp.text()
    assert await resp.read() == b""


async def rows(app: web.Application, query: str = USAGE) -> list[dict[str, Any]]:
    async with app[POOL].acquire() as conn:
        return [dict(r) for r in await conn.fetch(query)]


async def feature(client: Client, name: str) -> Any:
    resp = await client.get(f"{FEATURES}/{name}", headers=ADMIN)
    assert resp.status == 200
    return await resp.json()


# --- what the SDKs send -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("register", "metrics"), [(NODE_REGISTER, NODE_METRICS), (PYTHON_REGISTER, PYTHON_METRICS)]
)
async def test_what_the_official_sdks_send_is_accepted_and_counted(
    client: Client, app: web.Application, sdk: dict[str, str], register: Any, metrics: Any
) -> None:
    await accepted(client, REGISTER, register, sdk)
    await accepted(client, METRICS, metrics, sdk)
    app_name = register["appName"]
    yes = metrics["bucket"]["toggles"]["a"]["yes"]
    assert await rows(app) == [
        {
            "feature_name": "a",
            "environment": "development",
            "app_name": app_name,
            "hour": HOUR,
            "yes": yes,
            "no": 0,
            "variants": '{"v1": 1}',
            "project": "default",
        },
        {
            "feature_name": "b",
            "environment": "development",
            "app_name": app_name,
            "hour": HOUR,
            "yes": 0,
            "no": 1,
            "variants": "{}",
            "project": "default",
        },
    ]
    [instance] = await rows(app, "SELECT * FROM reporting.client_instances")
    assert instance["last_seen"] >= instance["registered_at"]
    del instance["registered_at"], instance["first_seen"], instance["last_seen"]
    assert instance == {
        "app_name": app_name,
        "instance_id": register["instanceId"],
        "environment": "development",
        "sdk_version": register["sdkVersion"],
        "sdk_flavor": None,
        "sdk_flavor_version": None,
        "platform_name": register["platformName"],
        "platform_version": register["platformVersion"],
        "yggdrasil_version": register["yggdrasilVersion"],
        "spec_version": register["specVersion"],
        "strategies": ["default", "flexibleRollout"],
        "metrics_interval": register["interval"],
        "started": datetime.fromisoformat(register["started"]),
        "projects": ["*"],
    }


async def test_a_report_without_a_bucket_only_says_the_instance_is_alive(
    client: Client, app: web.Application, sdk: dict[str, str]
) -> None:
    """The Python SDK sends `bucket: null` with impact metrics only; Unleash takes it."""
    for body in ({**PYTHON_METRICS, "bucket": None}, {"appName": "app", "instanceId": ""}):
        await accepted(client, METRICS, body, sdk)
    assert await rows(app) == []
    instances = await rows(
        app, "SELECT app_name, instance_id, registered_at FROM reporting.client_instances"
    )
    assert sorted(instances, key=lambda r: r["app_name"]) == [
        {"app_name": "app", "instance_id": "default", "registered_at": None},
        {"app_name": "py-app", "instance_id": "unleash-python-sdk", "registered_at": None},
    ]


async def test_unleashs_own_examples_are_accepted(client: Client, sdk: dict[str, str]) -> None:
    """From Unleash's metrics.test.ts and register.test.ts: milliseconds for times, unknown
    fields, flags without yes and no, no instanceId or an empty one."""
    now_ms = int(datetime.now(UTC).timestamp() * 1000)
    for body in [
        {
            "appName": "demo",
            "instanceId": "1",
            "bucket": {"start": now_ms, "stop": now_ms, "toggles": {}},
        },
        {
            "appName": "demo",
            "someParam": "some-value",
            "bucket": {
                "start": now_ms,
                "stop": now_ms,
                "toggles": {"a": {"blue": 200, "green": 0}},
            },
        },
        bucket({"a": {"yes": 200, "no": 0, "variants": {"variant1": 1, "variant2": 2}}}),
        bucket({"a": {"yes": 1, "variants": None}}),
    ]:
        await accepted(client, METRICS, body, sdk)
    for body in [
        {"appName": "demo", "strategies": ["default"], "started": now_ms, "interval": 10},
        {"appName": "demo", "instanceId": "", "strategies": [], "started": now_ms, "interval": 0},
        {
            **NODE_REGISTER,
            "sdkFlavor": "unleash-openfeature-node-provider",
            "sdkFlavorVersion": "1.0.1",
        },
    ]:
        await accepted(client, REGISTER, body, sdk)


# --- counting -----------------------------------------------------------------------------------


async def test_counts_add_up_within_an_hour_and_stay_apart_across_hours_apps_and_environments(
    client: Client, app: web.Application, sdk: dict[str, str]
) -> None:
    production = {"Authorization": await token(client, environment="production")}
    later = HOUR + timedelta(minutes=59, seconds=59)
    await accepted(client, METRICS, bucket({"a": {"yes": 1, "no": 2}}), sdk)
    await accepted(client, METRICS, bucket({"a": {"yes": 10, "no": 20}}, later), sdk)
    await accepted(client, METRICS, bucket({"a": {"yes": 5}}, HOUR + timedelta(hours=1)), sdk)
    await accepted(client, METRICS, bucket({"a": {"no": 7}}, appName="other"), sdk)
    await accepted(client, METRICS, bucket({"a": {"yes": 3}}), production)
    usage = [
        (r["hour"], r["environment"], r["app_name"], r["yes"], r["no"]) for r in await rows(app)
    ]
    assert usage == [
        (HOUR, "development", "app", 11, 22),
        (HOUR, "development", "other", 0, 7),
        (HOUR, "production", "app", 3, 0),
        (HOUR + timedelta(hours=1), "development", "app", 5, 0),
    ]


async def test_the_hour_is_the_utc_hour_of_the_buckets_stop(
    client: Client, app: web.Application, sdk: dict[str, str]
) -> None:
    body = bucket({"a": {"yes": 1}})
    plus_two = f"{HOUR + timedelta(hours=2):%Y-%m-%dT%H}"
    body["bucket"] |= {"start": f"{plus_two}:00:00+02:00", "stop": f"{plus_two}:00:30+02:00"}
    await accepted(client, METRICS, body, sdk)
    body["bucket"] |= {"stop": f"{_H}:00:10.123456789Z"}  # nanoseconds (Python SDK)
    await accepted(client, METRICS, body, sdk)
    body["bucket"] |= {"stop": int(HOUR.timestamp() * 1000) + 1}  # milliseconds
    await accepted(client, METRICS, body, sdk)
    assert [(r["hour"], r["yes"]) for r in await rows(app)] == [(HOUR, 3)]


async def test_variants_add_up_name_by_name(
    client: Client, app: web.Application, sdk: dict[str, str]
) -> None:
    await accepted(client, METRICS, bucket({"a": {"yes": 1, "variants": {"x": 1, "y": 2}}}), sdk)
    await accepted(client, METRICS, bucket({"a": {"yes": 1}}), sdk)
    await accepted(client, METRICS, bucket({"a": {"yes": 1, "variants": {"y": 3, "z": 0}}}), sdk)
    [row] = await rows(app)
    assert json.loads(row["variants"]) == {"x": 1, "y": 5, "z": 0}


async def test_unknown_flags_and_flags_counted_zero_times_are_left_out_archived_ones_not(
    client: Client, app: web.Application, sdk: dict[str, str]
) -> None:
    """As Unleash: metrics of flags that do not exist are not stored, nor a flag's entry with
    yes and no both 0 (even with variants); archived flags still exist."""
    assert (await client.delete(f"{FEATURES}/b", headers=ADMIN)).status == 202
    toggles = {"a": {"yes": 0, "no": 0, "variants": {"v": 3}}, "b": {"no": 1}, "nope": {"yes": 9}}
    await accepted(client, METRICS, bucket(toggles), sdk)
    assert [r["feature_name"] for r in await rows(app)] == ["b"]
    assert (await feature(client, "a"))["lastSeenAt"] is None


async def test_the_environment_is_the_tokens_and_default_for_an_admin_token(
    client: Client, app: web.Application, sdk: dict[str, str]
) -> None:
    """As Unleash's resolveMetricsEnvironment: the body's environment is never read."""
    body = bucket({"a": {"yes": 1}}, environment="production")
    await accepted(client, METRICS, body, sdk)
    await accepted(client, METRICS, body, ADMIN)
    await accepted(client, REGISTER, NODE_REGISTER | {"environment": "production"}, ADMIN)
    assert [r["environment"] for r in await rows(app)] == ["default", "development"]
    instances = await rows(app, "SELECT environment FROM reporting.client_instances")
    assert {r["environment"] for r in instances} == {"default", "development"}


async def test_concurrent_reports_of_the_same_flags_all_count(
    client: Client, app: web.Application, sdk: dict[str, str]
) -> None:
    """Many instances of one application report at once: no deadlock, no lost count."""
    names = [f"f{i}" for i in range(20)]
    for name in names:
        assert (await create(client, {"name": name})).status == 200
    bodies = [
        bucket({name: {"yes": 1, "no": 1} for name in (names if i % 2 else names[::-1])})
        | {"instanceId": f"i{i}"}
        for i in range(30)
    ]
    answers = await asyncio.gather(*(client.post(METRICS, json=b, headers=sdk) for b in bodies))
    assert [a.status for a in answers] == [202] * 30
    counts = {(r["feature_name"], r["yes"], r["no"]) for r in await rows(app)}
    assert counts == {(name, 30, 30) for name in names}


async def test_counts_saturate_at_the_largest_bigint(
    client: Client, app: web.Application, sdk: dict[str, str]
) -> None:
    await accepted(client, METRICS, bucket({"a": {"yes": 1, "variants": {"v": 1}}}), sdk)
    async with app[POOL].acquire() as conn:
        await conn.execute(
            "UPDATE telemetry.client_metrics_hourly SET yes = 9223372036854775000, "
            """variants = '{"v": 9223372036854775000}'"""
        )
    top = {"yes": MAX_COUNT, "no": MAX_COUNT, "variants": {"v": MAX_COUNT}}
    await accepted(client, METRICS, bucket({"a": top}), sdk)
    [row] = await rows(app)
    assert (row["yes"], row["no"]) == (2**63 - 1, MAX_COUNT)
    assert json.loads(row["variants"]) == {"v": 2**63 - 1}


async def test_a_full_bucket_is_one_statement(
    client: Client, app: web.Application, sdk: dict[str, str]
) -> None:
    """MAX_TOGGLES flags in one report (most of them unknown): all counted in one round trip."""
    flags = [
        FeatureCreated(
            name=f"f{i}",
            project="default",
            feature_type="release",
            description=None,
            impression_data=False,
            created_at=datetime.now(UTC),
        )
        for i in range(1, 2001)
    ]
    async with app[POOL].acquire() as conn:
        await factories.append(conn, list(flags))
    toggles = {f"f{i}": {"yes": i, "no": 1, "variants": {"v": 1}} for i in range(MAX_TOGGLES)}
    await accepted(client, METRICS, bucket(toggles), sdk)
    await accepted(client, METRICS, bucket(toggles), sdk)
    [[count, total]] = [
        list(r.values())
        for r in await rows(app, "SELECT count(*), sum(yes) FROM reporting.flag_usage_hourly")
    ]
    assert (count, total) == (2000, 2 * sum(range(1, 2001)))


# --- lastSeenAt ---------------------------------------------------------------------------------


async def test_last_seen_at_of_the_flag_and_its_environment(
    client: Client, app: web.Application, sdk: dict[str, str]
) -> None:
    before = datetime.now(UTC)
    assert (await feature(client, "a"))["lastSeenAt"] is None
    await accepted(client, METRICS, bucket({"a": {"yes": 1}}), sdk)
    seen = await feature(client, "a")
    last_seen = datetime.fromisoformat(seen["lastSeenAt"])
    assert before <= last_seen <= datetime.now(UTC)  # when it was reported, as in Unleash
    environments = {e["name"]: e["lastSeenAt"] for e in seen["environments"]}
    assert environments == {"development": seen["lastSeenAt"], "production": None}
    listed = await (await client.get(FEATURES, headers=ADMIN)).json()
    assert next(f for f in listed["features"] if f["name"] == "a") == seen
    assert (await feature(client, "b"))["lastSeenAt"] is None
    # Seen in production later: the flag's lastSeenAt is the latest of its environments'.
    production = {"Authorization": await token(client, environment="production")}
    await accepted(client, METRICS, bucket({"a": {"no": 1}}), production)
    again = await feature(client, "a")
    environments = {e["name"]: e["lastSeenAt"] for e in again["environments"]}
    assert environments["development"] == seen["lastSeenAt"]
    assert again["lastSeenAt"] == environments["production"] > seen["lastSeenAt"]
    seen_rows = await rows(app, "SELECT * FROM reporting.flag_last_seen ORDER BY environment")
    assert [(r["feature_name"], r["project"], r["environment"]) for r in seen_rows] == [
        ("a", "default", "development"),
        ("a", "default", "production"),
    ]


async def test_an_admin_tokens_report_is_seen_in_environment_default(
    client: Client, sdk: dict[str, str]
) -> None:
    """`default` is no environment of this install: the flag was seen, none of its
    environments was (Unleash records it there the same)."""
    await accepted(client, METRICS, bucket({"a": {"yes": 1}}), ADMIN)
    seen = await feature(client, "a")
    assert seen["lastSeenAt"] is not None
    assert [e["lastSeenAt"] for e in seen["environments"]] == [None, None]


async def test_a_sighting_from_before_the_flag_was_created_is_of_another_flag(
    client: Client, app: web.Application, sdk: dict[str, str]
) -> None:
    """A name used again after its flag was deleted (Unleash deletes archived flags) does not
    inherit what SDKs reported of the earlier one."""
    async with app[POOL].acquire() as conn:
        await conn.execute(
            "INSERT INTO telemetry.feature_last_seen VALUES ('a', 'development', $1)",
            datetime(2020, 1, 1, tzinfo=UTC),
        )
    seen = await feature(client, "a")
    assert [seen["lastSeenAt"], *(e["lastSeenAt"] for e in seen["environments"])] == [None] * 3
    seen_rows = await rows(app, "SELECT project FROM reporting.flag_last_seen")
    assert seen_rows == [{"project": None}]


# --- retention ----------------------------------------------------------------------------------


async def test_counts_and_instances_older_than_the_retention_are_deleted(
    client: Client, app: web.Application, sdk: dict[str, str]
) -> None:
    for days in (0, 29, 31, 40):
        await accepted(client, METRICS, bucket({"a": {"yes": 1}}, HOUR - timedelta(days=days)), sdk)
    await accepted(client, METRICS, bucket({"a": {"yes": 1}}) | {"instanceId": "gone"}, sdk)
    async with app[POOL].acquire() as conn:
        await conn.execute(
            "UPDATE telemetry.client_instances SET last_seen = now() - interval '31 days' "
            "WHERE instance_id = 'gone'"
        )
        await conn.execute("UPDATE telemetry.feature_last_seen SET last_seen_at = '2020-01-01'")
    assert await retention.delete_expired(app[POOL], 30, batch=1) == 3
    hours = [r["hour"] for r in await rows(app)]
    assert hours == [HOUR - timedelta(days=29), HOUR]
    instances = await rows(app, "SELECT instance_id FROM reporting.client_instances")
    assert instances == [{"instance_id": "default"}]
    assert len(await rows(app, "SELECT * FROM reporting.flag_last_seen")) == 1  # kept
    assert await retention.delete_expired(app[POOL], 30) == 0


# --- the reporting role -------------------------------------------------------------------------


async def test_the_reporting_role_reads_the_telemetry_views_and_not_the_tables(
    client: Client, app: web.Application, sdk: dict[str, str], dsn: str, roles: Roles
) -> None:
    await accepted(client, REGISTER, NODE_REGISTER, sdk)
    await accepted(client, METRICS, bucket({"a": {"yes": 1}}), sdk)
    conn = await connections.connect(dsn)
    _, login = await new_login(conn, dsn, roles)
    try:
        for view in ("flag_usage_hourly", "flag_last_seen", "client_instances"):
            query = f"SELECT * FROM reporting.{view}"
            assert await login.fetch(query) == await conn.fetch(query) != [], view
        for table in ("client_metrics_hourly", "feature_last_seen", "client_instances"):
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await login.fetch(f"SELECT * FROM telemetry.{table}")
    finally:
        await login.close()
        await conn.close()


# --- what is refused ----------------------------------------------------------------------------


async def test_who_may_report(client: Client, sdk: dict[str, str]) -> None:
    for path, body in ((REGISTER, NODE_REGISTER), (METRICS, NODE_METRICS)):
        await error(await client.post(path, json=body), 401, "AuthenticationRequired")
        frontend = {"Authorization": await token(client, "frontend")}
        await error(await client.post(path, json=body, headers=frontend), 403, "NoAccessError")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "Object missing required field `appName`"),
        ({"appName": ""}, "Expected `str` of length >= 1 - at `$.appName`"),
        ({"appName": 7}, "Expected `str`, got `int` - at `$.appName`"),
        ({"appName": "x" * 256}, "Expected `str` of length <= 255 - at `$.appName`"),
        ({"appName": "a", "instanceId": "x" * 256}, "Expected `str` of length <= 255"),
        ({"appName": "a", "sdkFlavorVersion": "x" * 33}, "Expected `str` of length <= 32"),
        ({"appName": "a", "bucket": []}, "Expected `object | null`, got `array` - at `$.bucket`"),
        (
            {"appName": "a", "bucket": {"stop": 1, "toggles": {}}},
            "Object missing required field `start` - at `$.bucket`",
        ),
        (
            {"appName": "a", "bucket": {"start": 1, "toggles": {}}},
            "Object missing required field `stop` - at `$.bucket`",
        ),
        (
            {"appName": "a", "bucket": {"start": 1, "stop": 1}},
            "Object missing required field `toggles` - at `$.bucket`",
        ),
        (
            bucket({}) | {"bucket": {"start": "yesterday", "stop": 1, "toggles": {}}},
            "Invalid RFC3339 encoded datetime - at `$.bucket.start`",
        ),
        (
            bucket({}) | {"bucket": {"start": 1, "stop": "2026-13-01T00:00:00Z", "toggles": {}}},
            "Invalid RFC3339 encoded datetime - at `$.bucket.stop`",
        ),
        (
            bucket({}) | {"bucket": {"start": 1, "stop": "2026-11-25T04:10:00", "toggles": {}}},
            "Expected `datetime` with a timezone component - at `$.bucket.stop`",
        ),
        (
            bucket({}) | {"bucket": {"start": 1, "stop": 1.5, "toggles": {}}},
            "Expected `int | datetime`, got `float` - at `$.bucket.stop`",
        ),
        (
            bucket({}) | {"bucket": {"start": 1, "stop": 10**15, "toggles": {}}},
            "Expected `int` <= 253402300799999 - at `$.bucket.stop`",
        ),
        (bucket({"a": {"yes": -1}}), "Expected `int` >= 0 - at `$.bucket.toggles[...].yes`"),
        (bucket({"a": {"no": 1.5}}), "Expected `int`, got `float` - at `$.bucket.toggles[...].no`"),
        (
            bucket({"a": {"yes": "12"}}),
            "Expected `int`, got `str` - at `$.bucket.toggles[...].yes`",
        ),
        (
            bucket({"a": {"yes": 2**53}}),
            f"Expected `int` <= {MAX_COUNT} - at `$.bucket.toggles[...].yes`",
        ),
        (bucket({"a": {"yes": 10**30}}), f"Expected `int` <= {MAX_COUNT}"),
        (bucket({"a": 3}), "Expected `object`, got `int` - at `$.bucket.toggles[...]`"),
        (
            bucket({"a": {"variants": {"v": -1}}}),
            "Expected `int` >= 0 - at `$.bucket.toggles[...].variants[...]`",
        ),
        (bucket({"a": {"variants": []}}), "Expected `object | null`, got `array`"),
        (
            bucket({"a": {"variants": {"x" * 256: 1}}}),
            "Expected `str` of length <= 255 - at `key` in `$.bucket.toggles[...].variants`",
        ),
        (
            bucket({"x" * 256: {"yes": 1}}),
            "Expected `str` of length <= 255 - at `key` in `$.bucket.toggles`",
        ),
        (
            bucket({f"f{i}": {} for i in range(MAX_TOGGLES + 1)}),
            f"Expected `object` of length <= {MAX_TOGGLES} - at `$.bucket.toggles`",
        ),
        (bucket({"a": {"yes": 1}}, appName="\u0000"), "Strings may not contain the NUL character"),
    ],
)
async def test_invalid_metrics_are_400(
    client: Client, app: web.Application, sdk: dict[str, str], body: Any, message: str
) -> None:
    resp = await client.post(METRICS, json=body, headers=sdk)
    assert (await error(resp, 400, "ValidationError")).startswith(message)
    assert await rows(app) == []


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"appName": None}, "Expected `str`, got `null` - at `$.appName`"),
        ({"strategies": None}, "Expected `array`, got `null` - at `$.strategies`"),
        ({"strategies": ["default", 1]}, "Expected `str`, got `int` - at `$.strategies[1]`"),
        ({"strategies": ["x" * 256]}, "Expected `str` of length <= 255 - at `$.strategies[0]`"),
        ({"started": "soon"}, "Invalid RFC3339 encoded datetime - at `$.started`"),
        ({"interval": -1}, "Expected `float` >= 0.0 - at `$.interval`"),
        ({"interval": "10"}, "Expected `float`, got `str` - at `$.interval`"),
        ({"sdkFlavor": "x" * 257}, "Expected `str` of length <= 256 - at `$.sdkFlavor`"),
    ],
)
async def test_invalid_registrations_are_400(
    client: Client, app: web.Application, sdk: dict[str, str], change: Any, message: str
) -> None:
    resp = await client.post(REGISTER, json=NODE_REGISTER | change, headers=sdk)
    assert (await error(resp, 400, "ValidationError")).startswith(message)
    assert await rows(app, "SELECT * FROM reporting.client_instances") == []


@pytest.mark.parametrize("field", ["appName", "strategies", "started", "interval"])
async def test_a_registration_needs_what_unleash_requires(
    client: Client, sdk: dict[str, str], field: str
) -> None:
    body = {k: v for k, v in NODE_REGISTER.items() if k != field}
    resp = await client.post(REGISTER, json=body, headers=sdk)
    message = await error(resp, 400, "ValidationError")
    assert message == f"Object missing required field `{field}`"


async def test_large_and_abusive_bodies_are_400_or_413(
    client: Client, app: web.Application, sdk: dict[str, str]
) -> None:
    json_headers = {**sdk, "Content-Type": "application/json"}
    big = json.dumps(bucket({"a": {"yes": 1}}, padding="x" * 2**20)).encode()
    resp = await client.post(METRICS, data=io.BytesIO(big), headers=json_headers)
    assert (await error(resp, 413, "PayloadTooLargeError")).startswith("The request body")
    deep = b'{"appName": "a", "impactMetrics": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    resp = await client.post(METRICS, data=deep, headers=json_headers)
    assert (await error(resp, 400, "ValidationError")).startswith("Malformed JSON")
    nested = {"a": {"yes": 1, "extra": json.loads("[" * 500 + "]" * 500)}}
    await accepted(client, METRICS, bucket(nested), sdk)  # ignored, as Unleash strips it
    for body in (b'{"appName": "a", "bucket": {"toggles": {"\\ud800": {}}}}', b"\xff", b"[]"):
        resp = await client.post(METRICS, data=body, headers=json_headers)
        await error(resp, 400, "ValidationError")
    assert [r["yes"] for r in await rows(app)] == [1]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    body=st.fixed_dictionaries(
        {"appName": st.text(max_size=300)},
        optional={
            "instanceId": st.none() | st.text(max_size=300),
            "bucket": st.none()
            | st.fixed_dictionaries(
                {
                    "start": st.integers() | st.text(max_size=30) | st.datetimes().map(str),
                    "stop": st.integers()
                    | st.datetimes(timezones=st.just(UTC)).map(datetime.isoformat),
                    "toggles": st.dictionaries(
                        st.sampled_from(["a", "b", "nope", ""]) | st.text(max_size=300),
                        st.fixed_dictionaries(
                            {},
                            optional={
                                "yes": st.integers(min_value=-1, max_value=2**64),
                                "no": st.integers(min_value=0, max_value=MAX_COUNT) | st.floats(),
                                "variants": st.none()
                                | st.dictionaries(st.text(max_size=10), st.integers(), max_size=3),
                            },
                        ),
                        max_size=5,
                    ),
                }
            ),
        },
    )
)
async def test_random_reports_are_202_or_400_never_500(
    client: Client, sdk: dict[str, str], body: dict[str, Any]
) -> None:
    resp = await client.post(METRICS, json=body, headers=sdk)
    assert resp.status in {202, 400}, await resp.text()
    if resp.status == 400:
        await error(resp, 400, "ValidationError")
