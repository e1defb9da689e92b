"""Feature types, their expected lifetime, and the flags that outlive it (potentially stale):
docs/behavior.md, "Feature types" and "Potentially stale flags"."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, get_args

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eventlog.events.features import FeatureCreated
from projections.feature_types import potentially_stale
from projections.replay import replay
from projections.verify import verify
from service import auth
from service.appkeys import POOL
from service.feature_types import domain
from service.features import commands
from service.http.past import CLOCK
from tests.conftest import as_principal
from tests.factories import ADMIN, FEATURES, append, error, event_count, ok

if TYPE_CHECKING:
    import asyncpg
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    from eventlog.connections import Conn

    Client = TestClient[Any, Any]

TYPES = "/api/admin/feature-types"
# What Unleash 6.10.1 answers on a new install (GET /api/admin/feature-types).
UNLEASH_TYPES: list[dict[str, Any]] = [
    {
        "id": "release",
        "name": "Release",
        "description": "Release feature toggles are used to release new features.",
        "lifetimeDays": 40,
    },
    {
        "id": "experiment",
        "name": "Experiment",
        "description": "Experiment feature toggles are used to test and verify multiple "
        "different versions of a feature.",
        "lifetimeDays": 40,
    },
    {
        "id": "operational",
        "name": "Operational",
        "description": "Operational feature toggles are used to control aspects of a rollout.",
        "lifetimeDays": 7,
    },
    {
        "id": "kill-switch",
        "name": "Kill switch",
        "description": "Kill switch feature toggles are used to quickly turn on or off critical "
        "functionality in your system.",
        "lifetimeDays": None,
    },
    {
        "id": "permission",
        "name": "Permission",
        "description": "Permission feature toggles are used to control permissions in your system.",
        "lifetimeDays": None,
    },
]


def lifetime(type_id: str) -> str:
    return f"{TYPES}/{type_id}/lifetime"


async def aged_flag(conn: Conn, name: str, flag_type: str, days: float) -> None:
    """A flag of the default project created `days` ago (appended as its event)."""
    created = FeatureCreated(
        name=name,
        project="default",
        feature_type=flag_type,
        description=None,
        impression_data=False,
        created_at=datetime.now(UTC) - timedelta(days=days),
    )
    await append(conn, [created], stream=("feature", name))


async def staleness(client: Client, *names: str) -> dict[str, bool]:
    listed = await ok(await client.get(FEATURES, headers=ADMIN))
    return {f["name"]: f["potentiallyStale"] for f in listed["features"] if f["name"] in names}


def test_flags_are_created_with_exactly_the_known_feature_types() -> None:
    assert set(get_args(commands.FeatureType)) == {d.id for d in domain.BUILT_IN}


async def test_a_new_install_has_unleash_s_feature_types(client: Client) -> None:
    assert await ok(await client.get(TYPES, headers=ADMIN)) == {
        "version": 1,
        "types": UNLEASH_TYPES,
    }


async def test_changing_a_lifetime(client: Client, app: web.Application) -> None:
    changed = await ok(
        await client.put(lifetime("release"), json={"lifetimeDays": 3}, headers=ADMIN)
    )
    assert changed == UNLEASH_TYPES[0] | {"lifetimeDays": 3}
    # 0 means never, as null does (Unleash stores 0 as null); any case of the id, as Unleash
    never = await ok(
        await client.put(lifetime("OPERATIONAL"), json={"lifetimeDays": 0}, headers=ADMIN)
    )
    assert never == UNLEASH_TYPES[2] | {"lifetimeDays": None}
    back = await ok(
        await client.put(lifetime("operational"), json={"lifetimeDays": 7}, headers=ADMIN)
    )
    assert back == UNLEASH_TYPES[2]
    # the lifetime it has already records nothing
    await ok(await client.put(lifetime("kill-switch"), json={"lifetimeDays": None}, headers=ADMIN))
    assert await event_count(app, "FeatureTypeLifetimeChanged") == 3
    listed = await ok(await client.get(TYPES, headers=ADMIN))
    assert listed["types"] == [UNLEASH_TYPES[0] | {"lifetimeDays": 3}, *UNLEASH_TYPES[1:]]
    async with app[POOL].acquire() as conn:
        await replay(conn)
        assert (await verify(conn)).ok
    assert await ok(await client.get(TYPES, headers=ADMIN)) == listed


async def test_lifetime_bodies_and_ids_are_checked(client: Client, app: web.Application) -> None:
    for body, message in [
        ({}, "Object missing required field `lifetimeDays`"),
        ({"lifetimeDays": -1}, "Expected `int` >= 0 - at `$.lifetimeDays`"),
        ({"lifetimeDays": 2**31}, "Expected `int` <= 2147483647 - at `$.lifetimeDays`"),
        ({"lifetimeDays": 1.5}, "Expected `int | null`, got `float` - at `$.lifetimeDays`"),
        ({"lifetimeDays": "7"}, "Expected `int | null`, got `str` - at `$.lifetimeDays`"),
    ]:
        resp = await client.put(lifetime("release"), json=body, headers=ADMIN)
        assert await error(resp, 400, "ValidationError") == message
    resp = await client.put(lifetime("nope"), json={"lifetimeDays": 3}, headers=ADMIN)
    message = await error(resp, 404, "NotFoundError")
    assert message == 'The feature type you tried to update ("nope") does not exist.'
    assert await event_count(app, "FeatureTypeLifetimeChanged") == 0


async def test_only_admins_change_a_lifetime(client: Client) -> None:
    editor = as_principal(*auth.ROOT_ROLES[2].permissions)
    resp = await client.put(lifetime("release"), json={"lifetimeDays": 3}, headers=editor)
    await error(resp, 403, "NoAccessError")
    assert (await client.get(TYPES, headers=as_principal(auth.READ))).status == 200


async def test_a_flag_is_potentially_stale_once_it_outlives_its_type(
    client: Client, app: web.Application
) -> None:
    async with app[POOL].acquire() as conn:
        await aged_flag(conn, "young-release", "release", 39)
        await aged_flag(conn, "old-release", "release", 41)
        await aged_flag(conn, "old-operational", "operational", 8)
        await aged_flag(conn, "ancient-switch", "kill-switch", 4000)
    names = ("young-release", "old-release", "old-operational", "ancient-switch")
    assert await staleness(client, *names) == {
        "young-release": False,
        "old-release": True,
        "old-operational": True,
        "ancient-switch": False,
    }
    one = await ok(await client.get(f"{FEATURES}/old-release", headers=ADMIN))
    assert (one["stale"], one["potentiallyStale"]) == (False, True)
    # a change of lifetime holds at once, no job to wait for
    await ok(await client.put(lifetime("release"), json={"lifetimeDays": 30}, headers=ADMIN))
    await ok(await client.put(lifetime("operational"), json={"lifetimeDays": None}, headers=ADMIN))
    await ok(await client.put(lifetime("kill-switch"), json={"lifetimeDays": 365}, headers=ADMIN))
    assert await staleness(client, *names) == {
        "young-release": True,
        "old-release": True,
        "old-operational": False,
        "ancient-switch": True,
    }
    # the largest lifetime there is overflows nothing
    big = {"lifetimeDays": 2_147_483_647}
    await ok(await client.put(lifetime("release"), json=big, headers=ADMIN))
    assert await staleness(client, "old-release") == {"old-release": False}


async def test_a_past_state_is_potentially_stale_as_of_then(
    client: Client, app: web.Application
) -> None:
    async with app[POOL].acquire() as conn:
        await aged_flag(conn, "f", "operational", 6)
        position = await conn.fetchval("SELECT max(position) FROM events")
        moment = await conn.fetchval("SELECT recorded_at FROM events WHERE position = $1", position)
    now = await ok(await client.get(f"{FEATURES}/f", headers=ADMIN))
    assert now["potentiallyStale"] is False
    later = (moment + timedelta(days=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    # in two days' time it will be: a time after the log's end reads the state now, at now
    at_later = await ok(await client.get(f"{FEATURES}/f?at={later}", headers=ADMIN))
    assert at_later["potentiallyStale"] is False
    await ok(await client.put(lifetime("operational"), json={"lifetimeDays": 1}, headers=ADMIN))
    assert (await ok(await client.get(f"{FEATURES}/f", headers=ADMIN)))["potentiallyStale"]
    # before the change, at that change's position's time: as it was then
    then = await ok(await client.get(f"{FEATURES}/f?at={position}", headers=ADMIN))
    assert then == now


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    age_hours=st.integers(min_value=0, max_value=24 * 400),
    days=st.one_of(st.none(), st.integers(min_value=1, max_value=365)),
)
async def test_the_sql_rule_is_unleash_s_rule(
    conn: asyncpg.Connection, age_hours: int, days: int | None
) -> None:
    """now > createdAt + lifetimeDays, never for a null lifetime: the expression the flag
    answers and the search use (projections/feature_types.py), against the rule in Python."""
    now = datetime(2026, 6, 1, tzinfo=UTC)
    created = now - timedelta(hours=age_hours)
    sql = f"""
    SELECT {potentially_stale("f", CLOCK)}
    FROM (SELECT $1::timestamptz AS created_at, 'x' AS type) f
    """
    async with conn.transaction():
        await conn.execute("SET LOCAL search_path = pg_temp, public")
        await conn.execute("CREATE TEMPORARY TABLE feature_types (id text, lifetime_days int)")
        await conn.execute("INSERT INTO feature_types VALUES ('x', $1::integer)", days)
        await conn.execute("SELECT set_config('flagstore.clock', $1, true)", now.isoformat())
        found = await conn.fetchval(sql, created)
        await conn.execute("DROP TABLE feature_types")
    assert found == (days is not None and now > created + timedelta(days=days))
