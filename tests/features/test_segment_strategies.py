"""POST /api/admin/segments/strategies: the segments one strategy uses, all of them, as
Unleash's strategy form saves them; a StrategyUpdated of the flag's stream (docs/behavior.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from projections.replay import replay
from projections.verify import verify
from service import auth
from service.appkeys import POOL
from tests.conftest import as_principal
from tests.factories import ADMIN, FEATURES, error, event_count, ok
from tests.features.test_segment_usage import segment, strategy

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

PATH = "/api/admin/segments/strategies"


def body(strategy_id: str, segment_ids: list[int], **fields: Any) -> dict[str, Any]:
    return {
        "projectId": "default",
        "strategyId": strategy_id,
        "environmentId": "development",
        "segmentIds": segment_ids,
    } | fields


async def segments_of(client: Client, strategy_id: str) -> list[int]:
    path = f"{FEATURES}/f/environments/development/strategies/{strategy_id}"
    return list((await ok(await client.get(path, headers=ADMIN)))["segments"])


async def test_a_strategy_s_segments_are_set_and_the_answer_is_the_body(
    client: Client, app: web.Application
) -> None:
    one, two = await segment(client, "one"), await segment(client, "two")
    await ok(await client.post(FEATURES, json={"name": "f"}, headers=ADMIN), 200)
    strategy_id = await strategy(client, "f", "development", {"name": "default"})
    sent = body(strategy_id, [two, one])
    assert await ok(await client.post(PATH, json=sent, headers=ADMIN), 201) == sent
    assert await segments_of(client, strategy_id) == [two, one]
    used = await ok(await client.get(f"/api/admin/segments/{one}/strategies", headers=ADMIN))
    assert [s["id"] for s in used["strategies"]] == [strategy_id]
    updates = await event_count(app, "StrategyUpdated")
    assert updates == 1
    # The same segments again: nothing changes, nothing recorded.
    await ok(await client.post(PATH, json=body(strategy_id, [two, one]), headers=ADMIN), 201)
    assert await event_count(app, "StrategyUpdated") == updates
    await ok(await client.post(PATH, json=body(strategy_id, []), headers=ADMIN), 201)
    assert await segments_of(client, strategy_id) == []
    found = await ok(await client.get("/api/admin/search/events?limit=2", headers=ADMIN))
    last, before = found["events"]
    assert (last["type"], last["featureName"], last["environment"]) == (
        "feature-strategy-update",
        "f",
        "development",
    )
    assert (last["data"]["segments"], last["preData"]["segments"]) == ([], [two, one])
    assert before["data"]["segments"] == [two, one]
    async with app[POOL].acquire() as conn:
        await replay(conn)
        assert (await verify(conn)).ok


async def test_what_is_missing_is_a_404_or_a_400_and_records_nothing(
    client: Client, app: web.Application
) -> None:
    one = await segment(client, "one")
    await ok(await client.post(FEATURES, json={"name": "f"}, headers=ADMIN), 200)
    strategy_id = await strategy(client, "f", "development", {"name": "default"})
    before = await event_count(app)
    for sent, status in [
        (body("not-a-uuid", [one]), 404),
        (body("15d1e20b-6310-4e17-a0c2-9fb84de3053a", [one]), 404),
        (body(strategy_id, [one], projectId="elsewhere"), 404),
        (body(strategy_id, [one], environmentId="production"), 404),
        (body(strategy_id, [one + 100]), 400),
        (body(strategy_id, [0]), 400),
        (body(strategy_id, []) | {"segmentIds": ["x"]}, 400),
        ({"strategyId": strategy_id}, 400),
    ]:
        resp = await client.post(PATH, json=sent, headers=ADMIN)
        await error(resp, status, "NotFoundError" if status == 404 else "ValidationError")
    assert await event_count(app) == before


async def test_setting_segments_takes_updating_flags(client: Client) -> None:
    one = await segment(client, "one")
    await ok(await client.post(FEATURES, json={"name": "f"}, headers=ADMIN), 200)
    strategy_id = await strategy(client, "f", "development", {"name": "default"})
    reader = as_principal(auth.READ)
    resp = await client.post(PATH, json=body(strategy_id, [one]), headers=reader)
    await error(resp, 403, "NoAccessError")
    await error(
        await client.post(PATH, json=body(strategy_id, [one])), 401, "AuthenticationRequired"
    )
    may = as_principal(auth.READ, auth.UPDATE_FEATURE)
    await ok(await client.post(PATH, json=body(strategy_id, [one]), headers=may), 201)


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(picks=st.lists(st.integers(0, 2), max_size=5))
async def test_any_list_is_kept_each_segment_once_in_order(
    client: Client, picks: list[int]
) -> None:
    listed = (await ok(await client.get("/api/admin/segments", headers=ADMIN)))["segments"]
    ids = [s["id"] for s in sorted(listed, key=lambda s: s["name"])]
    while len(ids) < 3:
        ids.append(await segment(client, f"s{len(ids)}"))
    found = await client.get(f"{FEATURES}/f", headers=ADMIN)
    if found.status == 404:
        await ok(await client.post(FEATURES, json={"name": "f"}, headers=ADMIN), 200)
        await strategy(client, "f", "development", {"name": "default"})
    path = f"{FEATURES}/f/environments/development/strategies"
    strategy_id = (await ok(await client.get(path, headers=ADMIN)))[0]["id"]
    wanted = [ids[p] for p in picks]
    await ok(await client.post(PATH, json=body(strategy_id, wanted), headers=ADMIN), 201)
    assert await segments_of(client, strategy_id) == list(dict.fromkeys(wanted))
