"""GET /api/client/streaming: Unleash's streaming protocol (server-sent events with its delta
events), a change pushed the moment it is committed, and a resume from Last-Event-ID."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import aiohttp
import jsonschema_rs
import msgspec
import pytest

from tests.clientapi import PROJECT, SPEC, rich_flags, segment, strategy, switch, token
from tests.factories import ADMIN, api_token, flag, ok
from tests.sse import Reader

if TYPE_CHECKING:
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

STREAM = "/api/client/streaming"
HEADERS = {"Accept": "text/event-stream", **SPEC}


async def connect(client: Client, secret: str, last_event_id: str | None = None) -> Reader:
    headers = {**HEADERS, "Authorization": secret}
    if last_event_id is not None:
        headers["Last-Event-ID"] = last_event_id
    resp = await client.get(STREAM, headers=headers)
    assert resp.status == 200, await resp.text()
    assert resp.headers["Content-Type"] == "text/event-stream"
    return Reader(resp)


async def next_event(reader: Reader, seconds: float = 2.0) -> Any:
    return await asyncio.wait_for(reader.next(), seconds)


async def test_connected_hydrates_then_each_change_is_pushed(client: Client) -> None:
    made = await rich_flags(client)
    secret = await token(client)
    polled = await ok(
        await client.get("/api/client/features", headers={"Authorization": secret, **HEADERS}),
        200,
    )
    reader = await connect(client, secret)
    first = await next_event(reader)
    assert first.event == "unleash-connected"
    assert first.id == str(polled["meta"]["revisionId"])
    [hydration] = first.json()["events"]
    assert hydration == {
        "type": "hydration",
        "eventId": polled["meta"]["revisionId"],
        "features": polled["features"],
        "segments": polled["segments"],
    }

    await switch(client, "dormant")
    updated = await next_event(reader)
    assert updated.event == "unleash-updated"
    [change] = updated.json()["events"]
    assert change["type"] == "feature-updated"
    assert change["feature"]["name"] == "dormant"
    assert change["feature"]["enabled"] is True
    assert int(updated.id or 0) > polled["meta"]["revisionId"]
    assert change["eventId"] == int(updated.id or 0)

    await ok(await client.delete(f"{PROJECT}/features/dormant", headers=ADMIN), 202)
    removed = (await next_event(reader)).json()["events"]
    assert removed == [
        {
            "type": "feature-removed",
            "eventId": removed[0]["eventId"],
            "featureName": "dormant",
            "project": "default",
        }
    ]

    body = {
        "name": "beta",
        "constraints": [{"contextName": "region", "operator": "IN", "values": ["eu"]}],
    }
    await ok(
        await client.put(f"/api/admin/segments/{made['segment']}", json=body, headers=ADMIN),
        200,
        204,
    )
    [seg] = (await next_event(reader)).json()["events"]
    assert seg["type"] == "segment-updated"
    assert seg["segment"]["constraints"][0]["values"] == ["eu"]

    other = await segment(
        client, "unused", [{"contextName": "x", "operator": "IN", "values": ["1"]}]
    )
    # a segment no flag uses is nobody's business; once a strategy uses it, it comes first
    made_strategy = await strategy(client, "banner", {"name": "default", "segments": [other]})
    events = (await next_event(reader)).json()["events"]
    assert [e["type"] for e in events] == ["segment-updated", "feature-updated"]
    assert events[0]["segment"]["id"] == other
    assert events[1]["feature"]["strategies"][-1]["segments"] == [other]
    strategies = f"{PROJECT}/features/banner/environments/development/strategies"
    await ok(await client.delete(f"{strategies}/{made_strategy['id']}", headers=ADMIN))
    [banner] = (await next_event(reader)).json()["events"]
    assert banner["type"] == "feature-updated"
    await ok(await client.delete(f"/api/admin/segments/{other}", headers=ADMIN), 200, 204)
    assert (await next_event(reader)).json()["events"] == [
        {
            "type": "segment-removed",
            "eventId": (await _revision(client, secret)),
            "segmentId": other,
        }
    ]


async def _revision(client: Client, secret: str) -> int:
    body = await ok(
        await client.get("/api/client/features", headers={"Authorization": secret, **HEADERS}), 200
    )
    return int(body["meta"]["revisionId"])


async def test_a_change_nobody_sees_sends_nothing(client: Client) -> None:
    await ok(
        await client.post(
            "/api/admin/projects", json={"id": "other", "name": "Other"}, headers=ADMIN
        )
    )
    scoped = await token(client, projects=["default"])
    reader = await connect(client, scoped)
    await next_event(reader)
    await flag(client, "elsewhere", project="other")  # another project's flag
    user = {"email": "someone@example.com", "rootRole": 3, "sendEmail": False}
    await ok(await client.post("/api/admin/user-admin", json=user, headers=ADMIN), 201)
    await flag(client, "mine")
    [change] = (await next_event(reader)).json()["events"]
    assert change["feature"]["name"] == "mine"


async def test_a_reconnect_resumes_from_the_last_event_id(client: Client) -> None:
    await flag(client, "a")
    await flag(client, "gone")
    secret = await token(client)
    reader = await connect(client, secret)
    first = await next_event(reader)
    reader.response.close()
    # missed while away: a flag changed twice, one created, one archived, and one created and
    # archived (which the client never had: nothing to say of it)
    await strategy(client, "a", {"name": "default"})
    await switch(client, "a")
    await flag(client, "b")
    await ok(await client.delete(f"{PROJECT}/features/gone", headers=ADMIN), 202)
    await flag(client, "c")
    await ok(await client.delete(f"{PROJECT}/features/c", headers=ADMIN), 202)
    resumed = await next_event(await connect(client, secret, first.id))
    assert resumed.event == "unleash-connected"
    events = resumed.json()["events"]
    assert [
        (e["type"], e.get("feature", {}).get("name") or e.get("featureName")) for e in events
    ] == [
        ("feature-updated", "a"),
        ("feature-updated", "b"),
        ("feature-removed", "gone"),
    ]
    assert events[0]["feature"]["enabled"] is True
    # up to date: nothing to send
    current = await next_event(await connect(client, secret, resumed.id))
    assert current.event == "unleash-connected"
    assert current.json() == {"events": []}
    assert current.id == resumed.id
    # an id this process cannot resume from (ahead of it, or not a number): everything again
    for unknown in ("999999999", "junk"):
        again = (await next_event(await connect(client, secret, unknown))).json()["events"]
        assert [e["type"] for e in again] == ["hydration"]


async def test_who_may_stream(client: Client) -> None:
    frontend = await token(client, kind="frontend")
    assert (await client.get(STREAM, headers=HEADERS)).status == 401
    assert (await client.get(STREAM, headers={**HEADERS, "Authorization": frontend})).status == 403


async def test_a_revoked_or_expired_token_loses_its_stream(client: Client) -> None:
    made = await api_token(client, name="t", environment="development")
    reader = await connect(client, made["secret"])
    await next_event(reader)
    await ok(await client.delete(f"/api/admin/api-tokens/{made['id']}", headers=ADMIN))
    await flag(client, "after")  # not for a revoked token's eyes
    with pytest.raises((EOFError, aiohttp.ClientPayloadError)):
        await next_event(reader, 3.0)
    soon = (datetime.now(UTC) + timedelta(seconds=2)).isoformat()
    made = await api_token(client, name="t", environment="development", expiresAt=soon)
    reader = await connect(client, made["secret"])
    await next_event(reader)
    with pytest.raises((EOFError, aiohttp.ClientPayloadError)):
        await next_event(reader, 5.0)


async def test_streams_take_the_pollers_query_and_hear_only_their_environment(
    client: Client,
) -> None:
    await flag(client, "f")
    headers = {**HEADERS, "Authorization": ADMIN["Authorization"]}
    resp = await client.get(f"{STREAM}?environment=production&namePrefix=f", headers=headers)
    reader = Reader(resp)
    [hydration] = (await next_event(reader)).json()["events"]
    assert [f["name"] for f in hydration["features"]] == ["f"]
    await strategy(client, "f", {"name": "default"}, environment="development")  # not ours
    await strategy(client, "f", {"name": "default"}, environment="production")
    [change] = (await next_event(reader)).json()["events"]
    assert change["feature"]["strategies"][0]["name"] == "default"
    assert len(change["feature"]["strategies"]) == 1
    bad = await client.get(STREAM, headers={**headers, "Unleash-Client-Spec": "banana"})
    assert bad.status == 400


async def test_every_event_is_what_the_openapi_document_describes(client: Client) -> None:
    """Each event read as schemathesis reads one (`{event, id, data}`) against the document's
    `text/event-stream` schema, and its data against that schema's `contentSchema`: a document
    that called the stream a plain string failed schemathesis' check (ST108)."""
    made = await rich_flags(client)
    reader = await connect(client, await token(client))
    events = [await next_event(reader)]
    await switch(client, "dormant")
    events.append(await next_event(reader))
    await ok(await client.delete(f"{PROJECT}/features/dormant", headers=ADMIN), 202)
    events.append(await next_event(reader))
    body = {"name": "beta", "constraints": []}
    segments = f"/api/admin/segments/{made['segment']}"
    await ok(await client.put(segments, json=body, headers=ADMIN), 200, 204)
    events.append(await next_event(reader))
    document = msgspec.json.decode(await (await client.get("/docs/openapi.json")).read())
    answer = document["paths"][STREAM]["get"]["responses"]["200"]
    assert list(answer["content"]) == ["text/event-stream"]
    schema = answer["content"]["text/event-stream"]["schema"]
    components = {"components": document["components"]}
    each = jsonschema_rs.validator_for({**schema, **components})
    for event in events:
        fields = {"event": event.event, "id": event.id, "data": event.data}
        assert [str(e) for e in each.iter_errors(fields)] == []
    data = jsonschema_rs.validator_for(
        {**schema["properties"]["data"]["contentSchema"], **components}
    )
    for event in events:
        assert [str(e) for e in data.iter_errors(event.json())] == []
    kinds = [(event.event, [e["type"] for e in event.json()["events"]]) for event in events]
    assert kinds == [
        ("unleash-connected", ["hydration"]),
        ("unleash-updated", ["feature-updated"]),
        ("unleash-updated", ["feature-removed"]),
        ("unleash-updated", ["segment-updated"]),
    ]
    # The document refuses what the stream must not send: another event name, no id.
    assert not each.is_valid({"event": "message", "id": "1", "data": "{}"})
    assert not each.is_valid({"event": "unleash-updated", "data": "{}"})
    assert not data.is_valid({"events": [{"type": "hydration"}]})
