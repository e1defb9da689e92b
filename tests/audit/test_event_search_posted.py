"""Unleash's POST /api/admin/events/search (one value a filter, `totalEvents`) and
GET /api/admin/event-creators: the same search as GET /api/admin/search/events, and every
author of the log with the name the UI shows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.appkeys import POOL
from tests.audit.test_event_log import a_flag_with_a_history, search
from tests.factories import ADMIN, FEATURES, error, make_account, ok

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

POSTED = "/api/admin/events/search"
CREATORS = "/api/admin/event-creators"


async def posted(client: Client, body: dict[str, Any], headers: dict[str, str] = ADMIN) -> Any:
    return await ok(await client.post(POSTED, json=body, headers=headers), 200)


async def test_each_filter_answers_as_the_get_search_does(
    client: Client, app: web.Application
) -> None:
    await a_flag_with_a_history(client, "one")
    await a_flag_with_a_history(client, "two")
    await ok(
        await client.post("/api/admin/projects", json={"id": "p2", "name": "P2"}, headers=ADMIN),
        201,
    )
    await ok(
        await client.post("/api/admin/projects/p2/features", json={"name": "three"}, headers=ADMIN),
        200,
    )
    pairs: list[tuple[dict[str, Any], str]] = [
        ({}, "limit=100"),
        ({"type": "feature-tagged"}, "type=IS:feature-tagged&limit=100"),
        ({"project": "p2"}, "project=IS:p2&limit=100"),
        ({"feature": "one"}, "feature=IS:one&limit=100"),
        ({"feature": "one", "type": "feature-untagged"}, "feature=IS:one&type=IS:feature-untagged"),
        (
            {"type": "feature-created", "limit": 2, "offset": 1},
            "type=IS:feature-created&limit=2&offset=1",
        ),
        ({"type": "no-such-type"}, "type=IS:no-such-type"),
    ]
    for body, query in pairs:
        got = await posted(client, body)
        want = await search(client, query)
        assert got["version"] == 1
        assert got["totalEvents"] == want["total"], body
        assert got["events"] == want["events"], body
    assert (await posted(client, {"type": "feature-tagged"}))["totalEvents"] == 4
    assert (await posted(client, {"project": "p2"}))["totalEvents"] == 2  # created, and its flag
    # Unknown fields are ignored, as Unleash's schema admits them.
    assert (await posted(client, {"type": "feature-tagged", "colour": 1}))["totalEvents"] == 4


async def test_text_is_searched_in_one_flag_s_events(client: Client) -> None:
    await a_flag_with_a_history(client, "one")
    await a_flag_with_a_history(client, "two")
    found = await posted(client, {"feature": "one", "query": "GAMMA"})
    assert found["totalEvents"] == len(found["events"]) > 0
    assert {e["featureName"] for e in found["events"]} == {"one"}
    assert all("gamma" in str(e).lower() for e in found["events"])
    assert (await posted(client, {"feature": "one", "query": "nowhere-at-all"}))["events"] == []


async def test_text_without_one_flag_is_searched_in_the_latest_events_data(
    client: Client, app: web.Application
) -> None:
    """As the event log page's search box sends it: the stored data of the latest
    TEXT_SEARCHED events the other filters keep, in any case; `%` and `_` are plain."""
    await a_flag_with_a_history(client, "one_100")
    await a_flag_with_a_history(client, "two")
    everything = (await search(client, "limit=1000"))["events"]
    async with app[POOL].acquire() as conn:
        stored = {r[0]: r[1] for r in await conn.fetch("SELECT position, data::text FROM events")}

    def holding(text: str) -> list[int]:
        return [e["id"] for e in everything if text.lower() in stored[e["id"]].lower()]

    for text in ("ONE_100", "two", "flexibleRollout", "_", "%", "nowhere"):
        got = await posted(client, {"query": text})
        assert [e["id"] for e in got["events"]] == holding(text)[:100], text
        assert got["totalEvents"] == len(holding(text)), text
        listed = await search(client, f"query={quote(text)}&limit=3&offset=1")
        assert [e["id"] for e in listed["events"]] == holding(text)[1:4], text
        assert listed["total"] == len(holding(text)), text
    typed = await posted(client, {"query": "rollout", "type": "feature-strategy-update"})
    assert {e["type"] for e in typed["events"]} == {"feature-strategy-update"}
    assert typed["totalEvents"] == 2
    first = everything[-1]["id"]
    assert (await search(client, f"query=two&before={first + 1}"))["total"] == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"offset": -1}, "offset"),
        ({"type": 3}, "type"),
        ({"project": ""}, "project"),
        ({"feature": "x" * 1001}, "feature"),
    ],
)
async def test_bad_bodies_are_a_400_naming_the_field(
    client: Client, body: dict[str, Any], field: str
) -> None:
    message = await error(
        await client.post(POSTED, json=body, headers=ADMIN), 400, "ValidationError"
    )
    assert field in message


async def test_without_admin_only_project_events_and_a_token_of_no_kind_is_refused(
    client: Client, app: web.Application
) -> None:
    await a_flag_with_a_history(client)
    await make_account(app, role=2)  # a user-created event outside any project
    viewer = await make_account(app, role=3)
    seen = await posted(client, {}, viewer.headers)
    assert seen["totalEvents"] == len(seen["events"]) == 15
    assert {e["project"] for e in seen["events"]} == {"default"}
    assert (await posted(client, {}))["totalEvents"] > seen["totalEvents"]
    await error(await client.post(POSTED, json={}), 401, "AuthenticationRequired")
    await error(await client.get(CREATORS), 401, "AuthenticationRequired")


async def test_event_creators_are_every_author_once_by_id(
    client: Client, app: web.Application
) -> None:
    editor = await make_account(app, role=2, username="ada")
    leaver = await make_account(app, role=2, username="leaver")
    await ok(await client.post(FEATURES, json={"name": "by-token"}, headers=ADMIN), 200)
    before = await ok(await client.get(CREATORS, headers=ADMIN), 200)
    assert editor.id not in {c["id"] for c in before}  # an account counts once it acts
    for n, who in enumerate([editor, editor, leaver]):
        await ok(await client.post(FEATURES, json={"name": f"f{n}"}, headers=who.headers), 200)
    await ok(await client.delete(f"/api/admin/user-admin/{leaver.id}", headers=ADMIN), 200)
    creators = await ok(await client.get(CREATORS, headers=editor.headers), 200)
    assert {"id": -42, "name": "Unleash Admin Token"} in creators
    assert {"id": editor.id, "name": "ada"} in creators
    # A deleted account's name went with it (docs/behavior.md).
    assert {"id": leaver.id, "name": f"Deleted user {leaver.id}"} in creators
    ids = [c["id"] for c in creators]
    assert ids == sorted(set(ids))
    # Every author of the log, each once: as the log's events say.
    everything = await search(client, "limit=1000")
    assert set(ids) == {
        e["createdByUserId"] for e in everything["events"] if e["createdByUserId"] is not None
    }


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    body=st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(["feature-created", "feature-tagged", "user-created", "x"]),
            "feature": st.sampled_from(["one", "two", "nope"]),
            "project": st.sampled_from(["default", "nope"]),
            "limit": st.integers(1, 100),
            "offset": st.integers(0, 30),
        },
    )
)
async def test_any_combination_is_the_whole_log_filtered(
    history: Client, body: dict[str, Any]
) -> None:
    everything = (await search(history, "limit=1000"))["events"]
    kept = [
        e
        for e in everything
        if body.get("type", e["type"]) == e["type"]
        and body.get("feature", e["featureName"]) == e["featureName"]
        and body.get("project", e["project"]) == e["project"]
    ]
    got = await posted(history, body)
    offset, limit = body.get("offset", 0), body.get("limit", 100)
    assert got["totalEvents"] == len(kept)
    assert [e["id"] for e in got["events"]] == [e["id"] for e in kept[offset : offset + limit]]


@pytest.fixture(name="history")
async def a_log_with_two_flags(client: Client) -> Client:
    await a_flag_with_a_history(client, "one")
    await a_flag_with_a_history(client, "two")
    return client
