"""What Unleash's segment pages ask before they change a segment: whether a name is free
(POST /api/admin/segments/validate) and which strategies use a segment (GET
/api/admin/segments/:id/strategies), as Unleash 6.10.1 answers them."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.factories import ADMIN, FEATURES, error, flag, head, ok

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

SEGMENTS = "/api/admin/segments"
VALIDATE = f"{SEGMENTS}/validate"
BETA: dict[str, Any] = {
    "name": "beta-users",
    "constraints": [{"contextName": "userId", "operator": "IN", "values": ["1"]}],
}
NONE_USE_IT: dict[str, list[Any]] = {"strategies": [], "changeRequestStrategies": []}


async def segment(client: Client, name: str = "beta-users") -> int:
    return int(
        (await ok(await client.post(SEGMENTS, json=BETA | {"name": name}, headers=ADMIN)))["id"]
    )


async def strategy(client: Client, feature: str, environment: str, body: dict[str, Any]) -> str:
    path = f"{FEATURES}/{feature}/environments/{environment}/strategies"
    return str((await ok(await client.post(path, json=body, headers=ADMIN), 200))["id"])


async def used_by(client: Client, segment_id: object, query: str = "") -> Any:
    return await ok(
        await client.get(f"{SEGMENTS}/{segment_id}/strategies{query}", headers=ADMIN), 200
    )


async def validate(client: Client, body: Any) -> Any:
    return await client.post(VALIDATE, json=body, headers=ADMIN)


async def test_a_free_name_is_a_204_and_a_taken_one_a_409(client: Client) -> None:
    resp = await validate(client, {"name": "beta-users"})
    assert (resp.status, await resp.read()) == (204, b"")
    segment_id = await segment(client)
    message = await error(await validate(client, {"name": "beta-users"}), 409, "NameExistsError")
    assert message == "A segment named beta-users already exists"
    # Names are case-sensitive and kept as given, as a create takes them.
    for free in ("Beta-users", " beta-users", "beta-users "):
        assert (await validate(client, {"name": free})).status == 204, free
    assert (await client.delete(f"{SEGMENTS}/{segment_id}", headers=ADMIN)).status == 204
    assert (await validate(client, {"name": "beta-users"})).status == 204


async def test_a_name_a_segment_cannot_take_is_a_400(client: Client, app: web.Application) -> None:
    before = await head(app)
    for body, message in [
        ({}, "Object missing required field `name`"),
        ({"name": ""}, "Expected `str` of length >= 1 - at `$.name`"),
        ({"name": "x" * 101}, "Expected `str` of length <= 100 - at `$.name`"),
        ({"name": 5}, "Expected `str`, got `int` - at `$.name`"),
        ({"name": None}, "Expected `str`, got `null` - at `$.name`"),
        ([], "Expected `object`, got `array`"),
    ]:
        assert await error(await validate(client, body), 400, "ValidationError") == message
    resp = await client.post(VALIDATE, data="name", headers=ADMIN)
    await error(resp, 415, "ContentTypeerror")
    assert await head(app) == before  # a check writes nothing


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(name=st.text(max_size=110) | st.sampled_from(["beta-users", "beta-users\u0000"]))
async def test_validate_answers_what_a_create_of_the_name_would(client: Client, name: str) -> None:
    """204 exactly when a create would make the segment, and 409 once it has; never a 500."""
    checked = await validate(client, {"name": name})
    created = await client.post(SEGMENTS, json=BETA | {"name": name}, headers=ADMIN)
    assert (checked.status, created.status) in {(204, 201), (400, 400), (409, 409)}
    if created.status == 201:
        await error(await validate(client, {"name": name}), 409, "NameExistsError")
        segment_id = (await created.json())["id"]
        assert (await client.delete(f"{SEGMENTS}/{segment_id}", headers=ADMIN)).status == 204


async def test_the_strategies_that_use_a_segment(client: Client) -> None:
    beta, other = await segment(client), await segment(client, "other")
    for name in ("b-flag", "a-flag", "gone", "plain"):
        await flag(client, name)
    uses = {"name": "default", "segments": [other, beta]}
    b_dev = await strategy(client, "b-flag", "development", uses)
    a_prod = await strategy(
        client,
        "a-flag",
        "production",
        uses | {"name": "userWithId", "parameters": {"userIds": "1"}},
    )
    a_dev_2 = await strategy(client, "a-flag", "development", uses | {"sortOrder": 2})
    a_dev_1 = await strategy(client, "a-flag", "development", uses | {"sortOrder": 1})
    gone = await strategy(client, "gone", "development", uses)
    await strategy(client, "plain", "development", {"name": "default", "segments": [other]})
    assert (await client.delete(f"{FEATURES}/gone", headers=ADMIN)).status == 202  # archived

    def using(strategy_id: str, feature: str, environment: str, name: str = "default") -> Any:
        return {
            "id": strategy_id,
            "projectId": "default",
            "featureName": feature,
            "strategyName": name,
            "environment": environment,
        }

    # By flag, environment and the strategies' order there; an archived flag's too: they keep
    # the segment from being deleted, and Unleash's UI lists them instead of a delete button.
    assert await used_by(client, beta) == {
        "strategies": [
            using(a_dev_1, "a-flag", "development"),
            using(a_dev_2, "a-flag", "development"),
            using(a_prod, "a-flag", "production", "userWithId"),
            using(b_dev, "b-flag", "development"),
            using(gone, "gone", "development"),
        ],
        "changeRequestStrategies": [],
    }
    await error(await client.delete(f"{SEGMENTS}/{beta}", headers=ADMIN), 409, "ConflictError")
    assert len((await used_by(client, other))["strategies"]) == 6
    # The list counts the active flags that use a segment and their projects, as Unleash's.
    listed = (await ok(await client.get(SEGMENTS, headers=ADMIN)))["segments"]
    assert {s["name"]: (s["usedInFeatures"], s["usedInProjects"]) for s in listed} == {
        "beta-users": (2, 1),
        "other": (3, 1),
    }

    # An archived flag's strategies change once it is revived.
    revive = await client.post(
        "/api/admin/projects/default/revive", json={"features": ["gone"]}, headers=ADMIN
    )
    assert revive.status == 200
    for strategy_id, feature, environment in [
        (a_dev_1, "a-flag", "development"),
        (a_dev_2, "a-flag", "development"),
        (a_prod, "a-flag", "production"),
        (b_dev, "b-flag", "development"),
        (gone, "gone", "development"),
    ]:
        path = f"{FEATURES}/{feature}/environments/{environment}/strategies/{strategy_id}"
        assert (await client.put(path, json={"name": "default"}, headers=ADMIN)).status == 200, path
    assert await used_by(client, beta) == NONE_USE_IT
    assert (await client.delete(f"{SEGMENTS}/{beta}", headers=ADMIN)).status == 204


async def test_a_number_that_is_no_segment_id_has_no_strategies(client: Client) -> None:
    segment_id = await segment(client)
    await flag(client, "f")
    strategy_id = await strategy(
        client, "f", "development", {"name": "default", "segments": [segment_id]}
    )
    used = {
        **NONE_USE_IT,
        "strategies": [
            {
                "id": strategy_id,
                "projectId": "default",
                "featureName": "f",
                "strategyName": "default",
                "environment": "development",
            }
        ],
    }
    assert await used_by(client, f"000{segment_id}") == used
    # Unleash answers these too (and a 500 for a number beyond PostgreSQL's integers).
    for number in ("999", "0", "-1", "2147483648", "9" * 5000, "-" + "9" * 20):
        assert await used_by(client, number) == NONE_USE_IT, number[:20]


async def test_an_id_that_is_no_number_names_no_route(client: Client) -> None:
    """A 404, as for any path no route has (Unleash: a 400): GET, PUT and DELETE of
    /segments/:id take numbers only too, so that /segments/validate is no segment's path."""
    for value in ("abc", "1.5", "1e3", "+1", " 1", "\uff11", "validate"):
        resp = await client.get(f"{SEGMENTS}/{quote(value)}/strategies", headers=ADMIN)
        await error(resp, 404, "NotFoundError")
    for method in ("GET", "PUT", "DELETE"):
        resp = await client.request(method, VALIDATE, json={"name": "x"}, headers=ADMIN)
        await error(resp, 405, "MethodNotAllowedError")
        assert resp.headers["Allow"] == "POST"


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=st.text(min_size=1, max_size=30) | st.integers().map(str))
async def test_any_id_is_answered_never_a_500(client: Client, value: str) -> None:
    resp = await client.get(f"{SEGMENTS}/{quote(value, safe='')}/strategies", headers=ADMIN)
    if re.fullmatch(r"-?[0-9]+", value):
        assert await ok(resp, 200) == NONE_USE_IT
    else:
        await error(resp, 404, "NotFoundError")


async def test_the_strategies_that_used_a_segment_in_the_past(client: Client) -> None:
    segment_id = await segment(client)
    await flag(client, "f")
    position = (await (await client.get("/api/admin/events", headers=ADMIN)).json())["events"][0][
        "id"
    ]
    strategy_id = await strategy(
        client, "f", "development", {"name": "default", "segments": [segment_id]}
    )
    assert await used_by(client, segment_id, f"?at={position}") == NONE_USE_IT
    assert [s["id"] for s in (await used_by(client, segment_id))["strategies"]] == [strategy_id]
    resp = await client.get(f"{SEGMENTS}/{segment_id}/strategies?at=soon", headers=ADMIN)
    await error(resp, 400, "ValidationError")
