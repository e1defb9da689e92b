"""What a flag's page does with strategies beyond adding and changing them: the order
(set-sort-order), one strategy, a JSON Patch of one (the UI's disable), the segments a strategy
uses, switching on with its disabled strategies, and validating a constraint."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, get_args

import msgspec
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from projections.verify import verify
from service.appkeys import POOL
from service.errors import ValidationError
from service.features import commands, domain
from tests.factories import ADMIN, FEATURES, create, error, event_count, ok

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

DEV = f"{FEATURES}/f/environments/development"
STRATEGIES = f"{DEV}/strategies"


@pytest.fixture
async def three(client: Client) -> list[str]:
    """Flag `f` with three strategies in development (sort orders 0, 1, 2): their ids."""
    await ok(await create(client, {"name": "f"}), 200)
    ids = []
    for title in ("a", "b", "c"):
        body = {"name": "default", "title": title}
        ids.append((await ok(await client.post(STRATEGIES, json=body, headers=ADMIN)))["id"])
    return ids


async def order(client: Client) -> list[tuple[str, int]]:
    listed = await ok(await client.get(STRATEGIES, headers=ADMIN))
    return [(s["title"], s["sortOrder"]) for s in listed]


# --- set-sort-order -----------------------------------------------------------------------------


async def test_set_sort_order_reorders_the_strategies_of_the_environment(
    client: Client, app: web.Application, three: list[str]
) -> None:
    a, b, c = three
    body = [{"id": c, "sortOrder": 0}, {"id": a, "sortOrder": 1}, {"id": b, "sortOrder": 2}]
    resp = await client.post(f"{STRATEGIES}/set-sort-order", json=body, headers=ADMIN)
    assert resp.status == 200
    assert await resp.read() == b""
    assert await order(client) == [("c", 0), ("a", 1), ("b", 2)]
    flag = await ok(await client.get(f"{FEATURES}/f", headers=ADMIN))
    assert [s["title"] for s in flag["environments"][0]["strategies"]] == ["c", "a", "b"]
    assert await event_count(app, "StrategiesReordered") == 1
    # The same order again changes nothing and records nothing; a part of it only that part.
    await ok(await client.post(f"{STRATEGIES}/set-sort-order", json=body, headers=ADMIN))
    assert await event_count(app, "StrategiesReordered") == 1
    body = [{"id": b, "sortOrder": -1}]
    await ok(await client.post(f"{STRATEGIES}/set-sort-order", json=body, headers=ADMIN))
    assert await order(client) == [("b", -1), ("c", 0), ("a", 1)]
    search = await ok(
        await client.get("/api/admin/search/events?type=IS:strategy-order-changed", headers=ADMIN)
    )
    assert [e["environment"] for e in search["events"]] == ["development", "development"]
    assert search["events"][0]["data"] == {
        "name": "f",
        "project": "default",
        "environment": "development",
        "sortOrders": [{"strategyId": b, "sortOrder": -1}],
    }
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok


async def test_set_sort_order_takes_only_the_flag_s_strategies_of_the_environment(
    client: Client, app: web.Application, three: list[str]
) -> None:
    """Unlike Unleash, which sets the sort order of whatever strategy the body names."""
    await ok(await create(client, {"name": "g"}), 200)
    prod = f"{FEATURES}/f/environments/production/strategies"
    other = (await ok(await client.post(prod, json={"name": "default"}, headers=ADMIN)))["id"]
    before = await event_count(app)
    for body in (
        [{"id": three[0], "sortOrder": 5}, {"id": other, "sortOrder": 0}],
        [{"id": str(uuid.uuid4()), "sortOrder": 0}],
        [{"id": "not-a-uuid", "sortOrder": 0}],
    ):
        resp = await client.post(f"{STRATEGIES}/set-sort-order", json=body, headers=ADMIN)
        assert (await error(resp, 404, "NotFoundError")).startswith("Could not find strategy")
    body = [{"id": three[0], "sortOrder": 1}, {"id": three[0], "sortOrder": 2}]
    resp = await client.post(f"{STRATEGIES}/set-sort-order", json=body, headers=ADMIN)
    assert await error(resp, 400, "ValidationError") == (
        f"Strategy {three[0]} is listed twice - at `$[1].id`"
    )
    resp = await client.post(
        f"{FEATURES}/g/environments/development/strategies/set-sort-order",
        json=[{"id": three[0], "sortOrder": 0}],
        headers=ADMIN,
    )
    await error(resp, 404, "NotFoundError")
    assert await event_count(app) == before
    assert await order(client) == [("a", 0), ("b", 1), ("c", 2)]


async def test_set_sort_order_is_a_path_of_its_own(client: Client, three: list[str]) -> None:
    """Not a strategy's id: another method there is a 405 listing only POST (the strategy
    routes' methods are not its own)."""
    path = f"{STRATEGIES}/set-sort-order"
    for method in ("PUT", "GET", "DELETE", "OPTIONS"):
        resp = await client.request(method, path, json=[], headers=ADMIN)
        await error(resp, 405, "MethodNotAllowedError")
        assert resp.headers["Allow"] == "POST"


# --- one strategy, and its JSON Patch ----------------------------------------------------------


async def test_one_strategy_is_read_as_the_list_shows_it(client: Client, three: list[str]) -> None:
    listed = await ok(await client.get(STRATEGIES, headers=ADMIN))
    assert await ok(await client.get(f"{STRATEGIES}/{three[1]}", headers=ADMIN)) == listed[1]
    prod = f"{FEATURES}/f/environments/production/strategies/{three[1]}"
    await error(await client.get(prod, headers=ADMIN), 404, "NotFoundError")
    await error(await client.get(f"{STRATEGIES}/nope", headers=ADMIN), 404, "NotFoundError")


async def test_the_ui_s_disable_patch_saves_the_strategy_as_put_does(
    client: Client, app: web.Application, three: list[str]
) -> None:
    path = f"{STRATEGIES}/{three[1]}"
    before = await ok(await client.get(path, headers=ADMIN))
    body = [{"path": "/disabled", "value": True, "op": "replace"}]
    answered = await ok(await client.patch(path, json=body, headers=ADMIN))
    assert answered == before | {"disabled": True}
    assert await ok(await client.get(path, headers=ADMIN)) == answered
    flag = await ok(await client.get(f"{FEATURES}/f", headers=ADMIN))
    assert flag["environments"][0]["hasEnabledStrategies"] is True
    body = [
        {
            "op": "add",
            "path": "/constraints/-",
            "value": {"contextName": "userId", "operator": "IN", "values": ["1"]},
        },
        {"op": "replace", "path": "/sortOrder", "value": 9},
        {"op": "add", "path": "/parameters/rollout", "value": "50"},
    ]
    answered = await ok(await client.patch(path, json=body, headers=ADMIN))
    assert (answered["sortOrder"], answered["parameters"]) == (9, {"rollout": "50"})
    assert answered["constraints"] == [
        {
            "contextName": "userId",
            "operator": "IN",
            "caseInsensitive": False,
            "inverted": False,
            "values": ["1"],
            "value": None,
        }
    ]
    assert await event_count(app, "StrategyUpdated") == 2
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([{"op": "replace", "path": "/id", "value": "x"}], "`/id` cannot be changed"),
        (
            [{"op": "replace", "path": "/featureName", "value": "g"}],
            "`/featureName` cannot be changed",
        ),
        ([{"op": "replace", "path": "", "value": {}}], "`` cannot be changed"),
        (
            [{"op": "replace", "path": "/disabled", "value": "no"}],
            (
                "The patched strategy is not valid: Expected `bool | null`, got `str`"
                " - at `$.disabled`"
            ),
        ),
        (
            [
                {
                    "op": "add",
                    "path": "/constraints/0",
                    "value": {"contextName": "v", "operator": "SEMVER_EQ", "value": "1.2"},
                }
            ],
            "SEMVER_EQ needs a semantic version - at `$.constraints[0].value`",
        ),
        (
            [{"op": "add", "path": "/segments/-", "value": 999}],
            "Segment 999 does not exist - at `$.segments`",
        ),
        (
            [{"op": "remove", "path": "/title/x"}],
            "The path does not exist in the document - at `$[0]`",
        ),
        (
            [{"op": "replace", "path": "/name", "value": "nosuchstrategy"}],
            "Could not find strategy type with name nosuchstrategy - at `$.name`",
        ),
    ],
)
async def test_a_strategy_patch_outside_the_rules_is_a_400(
    client: Client, app: web.Application, three: list[str], body: Any, message: str
) -> None:
    before = await event_count(app)
    resp = await client.patch(f"{STRATEGIES}/{three[0]}", json=body, headers=ADMIN)
    assert (await error(resp, 400, "ValidationError")).startswith(message)
    assert await event_count(app) == before


async def test_a_patch_of_a_strategy_that_is_not_there_is_a_404(client: Client) -> None:
    await ok(await create(client, {"name": "f"}), 200)
    body = [{"op": "replace", "path": "/disabled", "value": True}]
    resp = await client.patch(f"{STRATEGIES}/{uuid.uuid4()}", json=body, headers=ADMIN)
    await error(resp, 404, "NotFoundError")


# --- the segments of a strategy -------------------------------------------------------------------


async def test_the_segments_a_strategy_uses(client: Client) -> None:
    await ok(await create(client, {"name": "f"}), 200)
    made = []
    for name in ("beta", "alpha"):
        body: dict[str, Any] = {"name": name, "constraints": []}
        made.append(
            await ok(await client.post("/api/admin/segments", json=body, headers=ADMIN), 201)
        )
    body = {"name": "default", "segments": [made[1]["id"], made[0]["id"]]}
    strategy = await ok(await client.post(STRATEGIES, json=body, headers=ADMIN))
    assert strategy["segments"] == [made[1]["id"], made[0]["id"]]
    found = await ok(
        await client.get(f"/api/admin/segments/strategies/{strategy['id']}", headers=ADMIN)
    )
    assert found == {"segments": sorted(made, key=lambda s: s["id"])}
    for unknown in (str(uuid.uuid4()), "not-a-uuid"):
        found = await ok(
            await client.get(f"/api/admin/segments/strategies/{unknown}", headers=ADMIN)
        )
        assert found == {"segments": []}


# --- switching on with the disabled strategies ---------------------------------------------------


async def test_switching_on_may_enable_the_disabled_strategies_there(
    client: Client, app: web.Application, three: list[str]
) -> None:
    for strategy_id in three[:2]:
        body = [{"op": "replace", "path": "/disabled", "value": True}]
        await ok(await client.patch(f"{STRATEGIES}/{strategy_id}", json=body, headers=ADMIN))
    await ok(await client.post(f"{DEV}/on?shouldActivateDisabledStrategies=false", headers=ADMIN))
    assert [s["disabled"] for s in await ok(await client.get(STRATEGIES, headers=ADMIN))] == [
        True,
        True,
        False,
    ]
    await ok(await client.post(f"{DEV}/off", headers=ADMIN))
    before = await event_count(app, "StrategyUpdated")
    await ok(await client.post(f"{DEV}/on?shouldActivateDisabledStrategies=true", headers=ADMIN))
    listed = await ok(await client.get(STRATEGIES, headers=ADMIN))
    assert [s["disabled"] for s in listed] == [False, False, False]
    assert await event_count(app, "StrategyUpdated") == before + 2
    flag = await ok(await client.get(f"{FEATURES}/f", headers=ADMIN))
    assert flag["environments"][0]["enabled"] is True
    resp = await client.post(f"{DEV}/on?shouldActivateDisabledStrategies=yes", headers=ADMIN)
    assert await error(resp, 400, "ValidationError") == (
        "shouldActivateDisabledStrategies is true or false - at `shouldActivateDisabledStrategies`"
    )
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok


# --- validating a constraint ---------------------------------------------------------------------

VALIDATE = "/api/admin/constraints/validate"


@pytest.mark.parametrize(
    "body",
    [
        {
            "values": ["rec-app"],
            "inverted": False,
            "operator": "IN",
            "contextName": "appName",
            "caseInsensitive": False,
        },
        {"contextName": "userId", "operator": "STR_CONTAINS", "values": ["a"]},
        {"contextName": "n", "operator": "NUM_GTE", "value": "1.5"},
        {
            "contextName": "currentTime",
            "operator": "DATE_AFTER",
            "value": "2024-01-01T00:00:00.000Z",
        },
        {"contextName": "appVersion", "operator": "SEMVER_LT", "value": "2.0.0-beta.1"},
    ],
)
async def test_a_valid_constraint_is_a_204(client: Client, body: dict[str, Any]) -> None:
    resp = await client.post(VALIDATE, json=body, headers=ADMIN)
    assert resp.status == 204
    assert await resp.read() == b""


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"contextName": "userId", "operator": "IN", "values": []},
            "IN needs a non-empty `values` list - at `$`",
        ),
        (
            {"contextName": "userId", "operator": "NOT_IN"},
            "NOT_IN needs a non-empty `values` list - at `$`",
        ),
        (
            {"contextName": "n", "operator": "NUM_EQ", "value": "abc"},
            "NUM_EQ needs a number - at `$.value`",
        ),
        ({"contextName": "n", "operator": "NUM_EQ"}, "NUM_EQ needs a `value` - at `$.value`"),
        (
            {"contextName": "t", "operator": "DATE_BEFORE", "value": "nope"},
            "DATE_BEFORE needs an ISO 8601 date - at `$.value`",
        ),
        (
            {"contextName": "v", "operator": "SEMVER_GT", "value": "v1.2.3"},
            "SEMVER_GT needs a semantic version - at `$.value`",
        ),
        (
            {"contextName": "x", "operator": "BOGUS", "values": ["a"]},
            "Invalid enum value 'BOGUS' - at `$.operator`",
        ),
        ({"operator": "IN", "values": ["a"]}, "Object missing required field `contextName`"),
        (
            {"contextName": "u", "operator": "IN", "values": ["a"], "caseInsensitive": "x"},
            "Expected `bool`, got `str` - at `$.caseInsensitive`",
        ),
    ],
)
async def test_an_invalid_constraint_is_a_400_naming_the_field(
    client: Client, body: dict[str, Any], message: str
) -> None:
    resp = await client.post(VALIDATE, json=body, headers=ADMIN)
    assert await error(resp, 400, "ValidationError") == message


CONSTRAINT = st.fixed_dictionaries(
    {
        "contextName": st.sampled_from(["userId", "appVersion", "currentTime", "n"]),
        "operator": st.sampled_from(get_args(commands.Operator)),
    },
    optional={
        "values": st.lists(st.text(max_size=5), max_size=3),
        "value": st.none()
        | st.sampled_from(["1", "-2.5", "1.2.3", "2024-01-01", "2024-01-01T10:00:00Z", "x", ""])
        | st.text(max_size=6),
        "inverted": st.booleans(),
        "caseInsensitive": st.booleans(),
    },
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(constraint=CONSTRAINT)
@example(constraint={"contextName": "userId", "operator": "NOT_IN", "values": ["\x00"]})
async def test_a_constraint_validates_exactly_when_a_strategy_can_be_saved_with_it(
    client: Client, constraint: dict[str, Any]
) -> None:
    """Never a 500; 204 exactly when the strategy routes take it (the same rules)."""
    resp = await client.post(VALIDATE, json=constraint, headers=ADMIN)
    assert resp.status in {204, 400}, await resp.text()
    texts = [constraint.get("value") or "", *constraint.get("values", [])]
    if any("\x00" in text for text in texts):
        # Every route's body reader refuses NUL (PostgreSQL text cannot hold it), before the rules.
        assert await error(resp, 400, "ValidationError") == (
            "Strings may not contain the NUL character (\\u0000)"
        )
        return
    body = msgspec.convert({"name": "default", "constraints": [constraint]}, commands.StrategyBody)
    try:
        domain.strategy_data(body, "id", 0)
    except ValidationError:
        assert resp.status == 400
    else:
        assert resp.status == 204


async def test_switching_on_with_no_strategy_that_runs_adds_the_default_one(
    client: Client, app: web.Application
) -> None:
    """As in Unleash: a gradual rollout to everyone, grouped by the flag's name."""
    await ok(await create(client, {"name": "f"}), 200)
    await ok(await client.post(f"{DEV}/on?shouldActivateDisabledStrategies=false", headers=ADMIN))
    (added,) = await ok(await client.get(STRATEGIES, headers=ADMIN))
    assert added == {
        "id": added["id"],
        "name": "flexibleRollout",
        "title": None,
        "disabled": False,
        "featureName": "f",
        "sortOrder": 0,
        "segments": [],
        "constraints": [],
        "variants": [],
        "parameters": {"rollout": "100", "stickiness": "default", "groupId": "f"},
    }
    assert (
        await event_count(app, "StrategyAdded"),
        await event_count(app, "FeatureEnvironmentEnabled"),
    ) == (1, 1)
    await ok(await client.post(f"{DEV}/on", headers=ADMIN))  # on, and a strategy runs: nothing
    await ok(await client.post(f"{DEV}/off", headers=ADMIN))
    await ok(await client.post(f"{DEV}/on", headers=ADMIN))
    assert await event_count(app, "StrategyAdded") == 1
    # Only disabled strategies there, and not enabling them: the default one is added too.
    body = [{"op": "replace", "path": "/disabled", "value": True}]
    await ok(await client.patch(f"{STRATEGIES}/{added['id']}", json=body, headers=ADMIN))
    await ok(await client.post(f"{DEV}/off", headers=ADMIN))
    await ok(await client.post(f"{DEV}/on", headers=ADMIN))
    listed = await ok(await client.get(STRATEGIES, headers=ADMIN))
    assert [(s["disabled"], s["sortOrder"]) for s in listed] == [(True, 0), (False, 1)]
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok
