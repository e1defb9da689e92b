"""The event log over HTTP (docs/audit.md): Unleash's /api/admin/events,
/api/admin/events/:featureName and /api/admin/search/events, its filters and ours (a cursor by
position), its event type names and data shapes, preData, tags, and never a secret."""

from __future__ import annotations

import asyncio
import json
import random
import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import jsonschema_rs
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import eventlog
from eventlog import codec
from eventlog.codec import EVENT_TYPES
from eventlog.events.api_tokens import ApiTokenCreated
from eventlog.events.features import SegmentCreated, SegmentUpdated, StrategyData, Variant
from eventlog.events.users import (
    ImportedUser,
    PersonalAccessTokenCreated,
    ServiceAccountCreated,
    ServiceAccountDeleted,
    UserCreated,
    UserDeleted,
)
from service.app import create_app
from service.appkeys import POOL, TOKEN_USAGE
from service.audit import logsearch
from service.audit.history import Context, Tag
from service.audit.logsearch import LogEntry
from service.audit.responses import log_event
from service.token_usage import TokenUsage
from service.users import importer
from tests import factories
from tests.eventlog.test_stored_events import METADATA, SAMPLED
from tests.factories import (
    ADMIN,
    FEATURES,
    STRONG,
    api_token,
    create_user,
    error,
    in_days,
    make_account,
    ok,
    seed_database,
    session,
    settings_for,
    sign_in,
    work,
)
from tests.strategies import for_type

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    from eventlog.connections import Conn
    from eventlog.events.base import Event
    from service.settings import Settings
    from tests.conftest import AiohttpClient

    Client = TestClient[Any, Any]

SEARCH = "/api/admin/search/events"
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
HEX64 = re.compile(r"^[0-9a-f]{64}$")


@pytest.fixture(name="settings")
def erasing_a_year_later(dsn: str) -> Settings:
    """Deleted people are erased a year later here (ERASURE_DELAY_DAYS): these tests read what
    the log held about them (erasure, and its "[erased]", is tests/audit/test_privacy.py's)."""
    return settings_for(dsn, erasure_delay_days=365)


async def search(client: Client, query: str = "", headers: dict[str, str] = ADMIN) -> Any:
    return await ok(await client.get(f"{SEARCH}?{query}", headers=headers), 200)


async def a_flag_with_a_history(client: Client, name: str = "checkout") -> str:
    """Every kind of change a flag can go through, in this order."""
    await ok(
        await client.post(FEATURES, json={"name": name, "description": "d"}, headers=ADMIN), 200
    )
    base = f"{FEATURES}/{name}/environments/development"
    strategy = {
        "name": "flexibleRollout",
        "parameters": {"rollout": "50", "groupId": name},
        "constraints": [{"contextName": "userId", "operator": "IN", "values": ["a"]}],
    }
    added = await ok(await client.post(f"{base}/strategies", json=strategy, headers=ADMIN), 200)
    changed = strategy | {"parameters": {"rollout": "60", "groupId": name}, "constraints": []}
    await ok(await client.put(f"{base}/strategies/{added['id']}", json=changed, headers=ADMIN), 200)
    await ok(await client.post(f"{base}/on", headers=ADMIN), 200)
    await ok(await client.post(f"{base}/off", headers=ADMIN), 200)
    variants = [{"name": "a", "weightType": "variable", "weight": 1000, "stickiness": "default"}]
    await ok(await client.put(f"{base}/variants", json=variants, headers=ADMIN), 200)
    await ok(await client.delete(f"{base}/strategies/{added['id']}", headers=ADMIN), 200)
    tags = f"/api/admin/features/{name}/tags"
    await ok(await client.post(tags, json={"value": "beta"}, headers=ADMIN), 201)
    await ok(await client.post(tags, json={"value": "gamma"}, headers=ADMIN), 201)
    await ok(await client.delete(f"{tags}/simple/beta", headers=ADMIN), 200)
    stale = "/api/admin/projects/default/stale"
    await ok(await client.post(stale, json={"features": [name], "stale": True}, headers=ADMIN), 202)
    await ok(
        await client.post(stale, json={"features": [name], "stale": False}, headers=ADMIN), 202
    )
    await ok(await client.delete(f"{FEATURES}/{name}", headers=ADMIN), 202)
    revive = "/api/admin/projects/default/revive"
    await ok(await client.post(revive, json={"features": [name]}, headers=ADMIN), 200)
    return str(added["id"])


async def test_a_flag_s_history_reads_as_unleash_records_it(client: Client) -> None:
    strategy_id = await a_flag_with_a_history(client)
    body = await ok(await client.get("/api/admin/events/checkout", headers=ADMIN), 200)
    assert body["version"] == 1
    assert body["toggleName"] == "checkout"
    assert body["totalEvents"] == len(body["events"]) == 14
    events = body["events"][::-1]  # oldest first
    assert [e["type"] for e in events] == [
        "feature-created",
        "feature-strategy-add",
        "feature-strategy-update",
        "feature-environment-enabled",
        "feature-environment-disabled",
        "feature-environment-variants-updated",
        "feature-strategy-remove",
        "feature-tagged",
        "feature-tagged",
        "feature-untagged",
        "feature-stale-on",
        "feature-stale-off",
        "feature-archived",
        "feature-revived",
    ]
    positions = [e["id"] for e in events]
    assert positions == sorted(positions)
    assert [e["streamVersion"] for e in events] == list(range(1, 15))
    assert {(e["featureName"], e["project"], e["stream"]) for e in events} == {
        ("checkout", "default", "feature/checkout")
    }
    added, updated = events[1], events[2]
    rollout_50 = {
        "id": strategy_id,
        "name": "flexibleRollout",
        "title": None,
        "disabled": False,
        "sortOrder": 0,
        "constraints": [
            {
                "contextName": "userId",
                "operator": "IN",
                "caseInsensitive": False,
                "inverted": False,
                "values": ["a"],
                "value": None,
            }
        ],
        "parameters": {"rollout": "50", "groupId": "checkout"},
        "variants": [],
        "segments": [],
    }
    rollout_60 = rollout_50 | {
        "constraints": [],
        "parameters": {"rollout": "60", "groupId": "checkout"},
    }
    assert (added["data"], added["preData"]) == (rollout_50, None)
    assert (updated["data"], updated["preData"]) == (rollout_60, rollout_50)
    assert (events[6]["data"], events[6]["preData"]) == (None, rollout_60)  # removed
    assert {e["environment"] for e in events[1:7]} == {"development"}
    variants = events[5]
    assert variants["preData"] == {"variants": []}
    assert variants["data"]["variants"][0]["name"] == "a"
    # Tags: the flag's tags once each event was applied; an untag's preData is the tag.
    beta, gamma = {"value": "beta", "type": "simple"}, {"value": "gamma", "type": "simple"}
    assert [e["tags"] for e in events[6:11]] == [[], [beta], [beta, gamma], [gamma], [gamma]]
    assert (events[9]["data"], events[9]["preData"]) == (None, {"type": "simple", "value": "beta"})
    assert events[7]["data"] == {"type": "simple", "value": "beta"}


async def test_one_event_whole(client: Client) -> None:
    await ok(await client.post(FEATURES, json={"name": "f1"}, headers=ADMIN), 200)
    body = await search(client, "type=IS:feature-created")
    assert body["total"] == 1
    (event,) = body["events"]
    assert ISO.match(event.pop("createdAt"))
    assert HEX64.match(event.pop("hash"))
    created_at = event["data"].pop("createdAt")
    assert ISO.match(created_at)
    position = event.pop("id")
    assert event == {
        "type": "feature-created",
        "createdBy": "admin",
        "createdByUserId": -42,
        "data": {
            "name": "f1",
            "description": None,
            "type": "release",
            "project": "default",
            "stale": False,
            "lastSeenAt": None,
            "impressionData": False,
            "archived": False,
        },
        "preData": None,
        "tags": [],
        "featureName": "f1",
        "project": "default",
        "environment": None,
        "position": position,
        "stream": "feature/f1",
        "streamVersion": 1,
        "storedType": "FeatureCreated",
    }
    # The hash is the log's own: export and verify_export check the same chain.
    async with client.app[POOL].acquire() as conn:
        stored = await conn.fetchval(
            "SELECT encode(hash, 'hex') FROM events WHERE position = $1", position
        )
    resp = await client.get(f"{SEARCH}?feature=IS:f1", headers=ADMIN)
    assert (await resp.json())["events"][0]["hash"] == stored


async def test_accounts_tokens_and_segments_show_what_they_were_before(
    client: Client, app: web.Application
) -> None:
    user = await create_user(client, {"email": "ada@example.com", "name": "Ada", "rootRole": 3})
    await ok(
        await client.put(
            f"/api/admin/user-admin/{user['id']}", json={"name": "Ada K"}, headers=ADMIN
        ),
        200,
    )
    await ok(await client.delete(f"/api/admin/user-admin/{user['id']}", headers=ADMIN), 200)
    sa = await ok(
        await client.post(
            "/api/admin/service-account", json={"username": "bot", "rootRole": 3}, headers=ADMIN
        ),
        201,
    )
    pat = await ok(
        await client.post(
            f"/api/admin/service-account/{sa['id']}/token",
            json={"description": "ci", "expiresAt": in_days(3)},
            headers=ADMIN,
        ),
        201,
    )
    await ok(
        await client.delete(
            f"/api/admin/service-account/{sa['id']}/token/{pat['id']}", headers=ADMIN
        ),
        200,
    )
    await ok(
        await client.put(
            f"/api/admin/service-account/{sa['id']}",
            json={"name": "Bot", "rootRole": 2},
            headers=ADMIN,
        ),
        200,
    )
    await ok(await client.delete(f"/api/admin/service-account/{sa['id']}", headers=ADMIN), 200)
    token = await api_token(client, name="sdk", environment="development")
    await ok(await client.delete(f"/api/admin/api-tokens/{token['id']}", headers=ADMIN), 200)
    segment = await ok(
        await client.post(
            "/api/admin/segments", json={"name": "s1", "constraints": []}, headers=ADMIN
        ),
        201,
    )
    await ok(
        await client.put(
            f"/api/admin/segments/{segment['id']}",
            json={"name": "s2", "constraints": []},
            headers=ADMIN,
        ),
        204,
    )
    await ok(await client.delete(f"/api/admin/segments/{segment['id']}", headers=ADMIN), 204)
    body = await search(client, "limit=1000&after=0")
    by_type = {e["type"]: e for e in body["events"]}
    ada = {
        "id": user["id"],
        "name": "Ada",
        "email": "ada@example.com",
        "username": None,
        "rootRole": 3,
    }
    assert by_type["user-created"]["data"] == ada
    assert by_type["user-updated"]["data"] == {
        "id": user["id"],
        "name": "Ada K",
        "email": "ada@example.com",
        "rootRole": 3,
    }
    assert by_type["user-updated"]["preData"] == ada
    assert by_type["user-deleted"]["preData"] == ada | {"name": "Ada K"}
    assert by_type["user-deleted"]["data"] is None
    bot = {"id": sa["id"], "name": None, "username": "bot", "rootRole": 3}
    assert by_type["service-account-created"]["data"] == bot
    assert by_type["service-account-updated"]["preData"] == bot
    assert by_type["service-account-deleted"]["preData"] == bot | {"name": "Bot", "rootRole": 2}
    assert by_type["pat-created"]["data"]["description"] == "ci"
    assert by_type["pat-deleted"]["preData"] == by_type["pat-created"]["data"]
    assert by_type["api-token-created"]["data"]["tokenName"] == "sdk"
    assert by_type["api-token-created"]["environment"] == "development"
    assert by_type["api-token-deleted"]["preData"] == by_type["api-token-created"]["data"]
    assert by_type["api-token-deleted"]["environment"] == "development"
    s1 = by_type["segment-created"]["data"]
    assert (s1["id"], s1["name"]) == (segment["id"], "s1")
    assert by_type["segment-updated"]["preData"] == s1
    assert by_type["segment-deleted"]["preData"] == by_type["segment-updated"]["data"]
    # Events of accounts and tokens belong to no project.
    assert {by_type[t]["project"] for t in ("user-created", "pat-created", "segment-created")} == {
        None
    }
    assert "PasswordChanged" not in by_type  # no password was given
    del app


async def test_filters_narrow_and_total_counts_every_match(
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
    editor = await make_account(app, role=2)
    await ok(await client.post(FEATURES, json={"name": "four"}, headers=editor.headers), 200)
    # The editor's token use is an event the recorder appends every 2 s: written now, so that
    # no such event lands between the searches below and changes their totals.
    recorder = app[TOKEN_USAGE]
    assert isinstance(recorder, TokenUsage)
    await recorder.flush(app[POOL])
    everything = await search(client, "limit=1000")
    assert everything["total"] == len(everything["events"])
    kinds = [e["type"] for e in everything["events"]]

    async def total(query: str) -> int:
        return int((await search(client, query))["total"])

    assert await total("type=IS:feature-tagged") == kinds.count("feature-tagged") == 4
    assert await total("type=IS_ANY_OF:feature-tagged,feature-untagged") == 6
    assert await total("type=IS:feature-created&project=IS:p2") == 1
    assert await total("project=IS:default&feature=IS:one") == 14
    assert await total("feature=IS_ANY_OF:one,two") == 28
    assert await total(f"createdBy=IS:{editor.id}") == 1
    assert await total("createdBy=IS:-42") == kinds.count("feature-created") - 1 + sum(
        1
        for e in everything["events"]
        if e["createdByUserId"] == -42 and e["type"] != "feature-created"
    )
    assert await total("type=IS:nothing-of-the-kind") == 0
    page = await search(client, "type=IS:feature-tagged&limit=3&offset=1")
    assert page["total"] == 4
    tagged = [e["id"] for e in everything["events"] if e["type"] == "feature-tagged"]
    assert [e["id"] for e in page["events"]] == tagged[1:4]
    # Time: a whole UTC day as Unleash sends it (`to` included), or RFC 3339 times.
    # The days are the events' own (this test may run across midnight UTC).
    days = [
        datetime.fromisoformat(e["createdAt"]).astimezone(UTC).date() for e in everything["events"]
    ]
    first, last = min(days), max(days)
    assert await total(f"from=IS:{first}&to=IS:{last}") == everything["total"]
    assert await total(f"from=IS:{last + timedelta(days=1)}") == 0
    assert await total(f"to=IS:{first - timedelta(days=1)}") == 0
    middle = everything["events"][len(kinds) // 2]
    at = middle["createdAt"]
    newer = [e for e in everything["events"] if e["createdAt"] >= at]
    older = [e for e in everything["events"] if e["createdAt"] <= at]
    assert await total(f"from=IS:{at}") == len(newer)
    assert await total(f"to=IS:{at}") == len(older)


async def test_a_cursor_pages_through_the_whole_log_without_offsets(client: Client) -> None:
    await a_flag_with_a_history(client, "one")
    await a_flag_with_a_history(client, "two")
    everything = [e["id"] for e in (await search(client, "limit=1000"))["events"]]
    assert everything == sorted(everything, reverse=True) == list(range(len(everything), 0, -1))
    newest_first: list[int] = []
    cursor = ""
    while True:
        page = await search(client, f"limit=7{cursor}")
        assert page["total"] == len(everything)
        if not page["events"]:
            break
        newest_first += [e["id"] for e in page["events"]]
        cursor = f"&before={page['events'][-1]['id']}"
    assert newest_first == everything
    oldest_first: list[int] = []
    after = 0
    while page := (await search(client, f"limit=5&after={after}"))["events"]:
        oldest_first += [e["id"] for e in page]
        after = page[-1]["id"]
    assert oldest_first == everything[::-1]
    window = await search(client, "after=3&before=8&limit=100")
    assert [e["id"] for e in window["events"]] == [4, 5, 6, 7]


async def test_people_without_admin_see_only_project_events(
    client: Client, app: web.Application
) -> None:
    await a_flag_with_a_history(client)
    await create_user(client, {"email": "ada@example.com", "rootRole": 3})
    viewer = await make_account(app, role=3)
    seen = await search(client, "limit=1000", viewer.headers)
    everything = await search(client, "limit=1000")
    # The flag's 14 and the default project's creation (at the first start).
    assert seen["total"] == len(seen["events"]) == 15
    assert {e["project"] for e in seen["events"]} == {"default"}
    assert seen["events"][-1]["type"] == "project-created"
    assert everything["total"] > seen["total"]
    resp = await client.get("/api/admin/events/checkout", headers=viewer.headers)
    assert (await ok(resp, 200))["totalEvents"] == 14
    await error(await client.get("/api/admin/events", headers=viewer.headers), 403, "NoAccessError")


async def test_the_last_hundred_and_a_project_s(client: Client) -> None:
    for n in range(8):  # 8 x 14 events, and those of the first start
        await a_flag_with_a_history(client, f"flag{n}")
    body = await ok(await client.get("/api/admin/events", headers=ADMIN), 200)
    assert body["version"] == 1
    assert len(body["events"]) == 100
    assert body["totalEvents"] > 100
    assert body["events"][0]["id"] == body["totalEvents"]
    await ok(
        await client.post("/api/admin/projects", json={"id": "p2", "name": "P2"}, headers=ADMIN),
        201,
    )
    project = await ok(await client.get("/api/admin/events?project=p2", headers=ADMIN), 200)
    assert [e["type"] for e in project["events"]] == ["project-created"]
    assert project["totalEvents"] == 1
    unknown = await ok(await client.get("/api/admin/events/no-such-flag", headers=ADMIN), 200)
    assert unknown == {"version": 1, "toggleName": "no-such-flag", "events": [], "totalEvents": 0}


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("type=feature-created", "type"),
        ("type=IS:", "type"),
        ("type=IS_NOT:feature-created", "type"),
        ("project=IS:a,,b", "project"),
        ("createdBy=IS:abc", "createdBy"),
        ("from=2024-01-01", "from"),
        ("from=IS:2024-13-01", "from"),
        ("to=IS:yesterday", "to"),
        ("from=IS:2024-01-01T10:00:00", "from"),
        ("limit=0", "limit"),
        ("limit=abc", "limit"),
        ("offset=-1", "offset"),
        ("before=x", "before"),
        ("after=1e3", "after"),
        ("query=admin&after=3", "query"),  # text pages newest first only
        ("type=IS:a&type=IS:b", "type"),
    ],
)
async def test_bad_parameters_are_a_400_naming_them(client: Client, query: str, field: str) -> None:
    message = await error(
        await client.get(f"{SEARCH}?{query}", headers=ADMIN), 400, "ValidationError"
    )
    assert message.endswith(f"at `{field}`")


async def test_an_empty_filter_is_no_filter_and_the_document_says_so(client: Client) -> None:
    """An empty filter (`?type=`: schemathesis, make fuzz, sends it) is no filter, and the
    document's pattern takes it."""
    await a_flag_with_a_history(client)
    everything = await search(client)
    document = msgspec.json.decode(await (await client.get("/docs/openapi.json")).read())
    parameters = document["paths"][SEARCH]["get"]["parameters"]
    for name in ("type", "project", "feature", "createdBy"):
        assert await search(client, f"{name}=") == everything
        (schema,) = [p["schema"] for p in parameters if p["name"] == name]
        validator = jsonschema_rs.validator_for(schema)
        assert validator.is_valid("")
        assert validator.is_valid("IS_ANY_OF:a,b")
        assert not validator.is_valid("IS_NOT:a")


async def test_a_large_limit_is_capped(client: Client) -> None:
    await a_flag_with_a_history(client)
    body = await search(client, "limit=999999")
    assert len(body["events"]) == body["total"]


async def test_no_stored_sample_shows_a_secret(conn: Conn, client: Client) -> None:
    """Every event type and version of the frozen sample, appended as stored: the event log
    shows them all and none of their hashes of tokens, sessions or passwords."""
    metadata = codec.decode_metadata(METADATA)
    secrets = set()
    for (type_name, version), data in sorted(SAMPLED.items()):
        event = codec.decode(type_name, version, data)
        secrets |= set(_secret_values(json.loads(data)))
        await factories.append(
            conn, [event], stream=("sample", f"{type_name}.{version}"), metadata=metadata
        )
    assert len(secrets) >= 5
    body = await search(client, "limit=1000")
    assert {e["storedType"] for e in body["events"]} >= set(EVENT_TYPES)
    text = json.dumps(body)
    assert [s for s in secrets if s in text] == []


def _secret_values(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [
            item for key, item in value.items() if key.endswith("_hash") and isinstance(item, str)
        ] + [found for item in value.values() for found in _secret_values(item)]
    if isinstance(value, list):
        return [found for item in value for found in _secret_values(item)]
    return []


SECRET_KEYS = {
    "secretHash",
    "passwordHash",
    "sessionHash",
    "secret_hash",
    "password_hash",
    "session_hash",
}


USER_NAMED = {"parameters"}  # maps whose keys users choose (a strategy's): data, not fields


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        inside = {k for key, item in value.items() for k in _keys(item) if key not in USER_NAMED}
        return set(value) | inside
    if isinstance(value, list):
        return {k for item in value for k in _keys(item)}
    return set()


# What a stream's fold can hand to preData (service/audit/history.py, _Stream.before).
BEFORE = st.one_of(
    st.none(),
    *(
        for_type(cls)
        for cls in (
            StrategyData,
            ApiTokenCreated,
            PersonalAccessTokenCreated,
            SegmentCreated,
            SegmentUpdated,
            UserCreated,
            ImportedUser,
            UserDeleted,
            ServiceAccountCreated,
            ServiceAccountDeleted,
        )
    ),
    st.builds(lambda v: {"variants": v}, for_type(list[Variant])),
)


@pytest.mark.parametrize("cls", EVENT_TYPES.values(), ids=list(EVENT_TYPES))
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_no_event_type_shows_a_secret_key(cls: type[Event], data: st.DataObject) -> None:
    """Whatever an event of any type holds, and whatever its stream held before it."""
    record = factories.recorded(data.draw(for_type(cls)), stream=("feature", "f"))
    entry = LogEntry(recorded=record, hash="0" * 64, kind="k", project=None, actor_user_id=None)
    context = Context(before=data.draw(BEFORE), tags=[Tag(value="v", type="simple")])
    shown = msgspec.to_builtins(log_event(entry, context))
    assert _keys(shown) & SECRET_KEYS == set()


async def test_times_rise_with_positions(conn: Conn) -> None:
    """The global section gives each append its time: never behind the one before."""
    for n in range(20):
        await factories.append(conn, [factories.noted(n)])
    rows = await conn.fetch("SELECT position, recorded_at FROM events ORDER BY position")
    times = [r["recorded_at"] for r in rows]
    assert times == sorted(times)
    head = await conn.fetchrow("SELECT position, recorded_at FROM log_head")
    assert head is not None
    assert (head["position"], head["recorded_at"]) == (rows[-1]["position"], times[-1])
    assert await eventlog.last_at_or_before(conn, times[5]) == rows[5]["position"]
    assert await eventlog.first_at_or_after(conn, times[5]) == rows[5]["position"]


async def test_an_imported_person_s_first_change_shows_the_imported_record(
    client: Client, app: web.Application
) -> None:
    """Their stream has no UserCreated: what they were comes from the import batch."""
    lines = [json.dumps({"email": f"p{n}@example.com", "name": f"P {n}"}) + "\n" for n in range(3)]
    async with app[POOL].acquire() as conn:
        await importer.import_users(work(), conn, lines, source="people.jsonl")
        user_id = await conn.fetchval("SELECT id FROM users WHERE email = 'p1@example.com'")
    resp = await client.put(f"/api/admin/user-admin/{user_id}", json={"name": "Pia"}, headers=ADMIN)
    await ok(resp, 200)
    await ok(await client.delete(f"/api/admin/user-admin/{user_id}", headers=ADMIN), 200)
    body = await search(client, "type=IS_ANY_OF:user-updated,user-deleted,UsersImported&after=0")
    imported, updated, deleted = body["events"]
    assert imported["type"] == "UsersImported"
    assert imported["data"]["source"] == "people.jsonl"
    assert "passwordHash" not in imported["data"]["users"][0]
    record = {
        "id": user_id,
        "name": "P 1",
        "email": "p1@example.com",
        "username": None,
        "rootRole": 3,
    }
    assert updated["preData"] == record
    assert deleted["preData"] == record | {"name": "Pia"}


async def test_every_combination_of_filters_answers_as_filtering_the_whole_log_would(
    client: Client, app: web.Application
) -> None:
    """Whichever index a search walks (one per value of a filter, or of a pair of them), its
    pages and totals are those of the whole log filtered in Python, for people and admins.
    (The editor and the searching admin sign in: a session's use records nothing, so the log
    stays as it is once the admin token's use is written.)"""
    person = await create_user(client, {"username": "ed", "rootRole": 2, "password": STRONG})
    editor_headers = session((await sign_in(client, "ed"))[1])
    await create_user(client, {"username": "searcher", "rootRole": 1, "password": STRONG})
    searcher = session((await sign_in(client, "searcher"))[1])
    await ok(
        await client.post("/api/admin/projects", json={"id": "p2", "name": "P2"}, headers=ADMIN),
        201,
    )
    for n in range(4):
        await a_flag_with_a_history(client, f"a{n}")
    for n in range(3):
        name, path = f"b{n}", "/api/admin/projects/p2/features"
        await ok(await client.post(path, json={"name": name}, headers=editor_headers), 200)
        tags = f"/api/admin/features/{name}/tags"
        await ok(await client.post(tags, json={"value": "beta"}, headers=editor_headers), 201)
    await create_user(client, {"email": "ada@example.com"})
    recorder = app[TOKEN_USAGE]
    assert isinstance(recorder, TokenUsage)
    await recorder.flush(app[POOL])  # the admin token's use so far; the searches add none
    everything = (await search(client, "limit=1000", searcher))["events"]
    rng = random.Random(5)
    kinds = sorted({e["type"] for e in everything})
    options = {
        "type": kinds,
        "project": ["default", "p2", "nope"],
        "feature": ["a1", "b2", "a3", "nope"],
        "createdBy": ["-42", str(person["id"]), "-1337"],
    }
    fields = {"type": "type", "project": "project", "feature": "featureName"}
    for _ in range(60):
        query: dict[str, list[str]] = {}
        for name in rng.sample(sorted(options), rng.randint(1, 3)):
            query[name] = rng.sample(options[name], rng.randint(1, 2))
        expected = [
            e
            for e in everything
            if all(
                (str(e["createdByUserId"]) if name == "createdBy" else e[fields[name]]) in values
                for name, values in query.items()
            )
        ]
        text = "&".join(
            f"{name}={'IS' if len(v) == 1 else 'IS_ANY_OF'}:{','.join(v)}"
            for name, v in query.items()
        )
        limit, offset = rng.randint(1, 6), rng.randint(0, 3)
        page = await search(client, f"{text}&limit={limit}&offset={offset}", searcher)
        assert page["total"] == len(expected), text
        assert [e["id"] for e in page["events"]] == [e["id"] for e in expected][
            offset : offset + limit
        ]
        if expected:
            cursor = rng.choice(expected)["id"]
            older = await search(client, f"{text}&before={cursor}&limit=1000", searcher)
            assert [e["id"] for e in older["events"]] == [
                e["id"] for e in expected if e["id"] < cursor
            ]
            newer = await search(client, f"{text}&after={cursor}&limit=1000", searcher)
            assert [e["id"] for e in newer["events"]] == [
                e["id"] for e in expected if e["id"] > cursor
            ][::-1]
        seen = await search(client, f"{text}&limit=1000", editor_headers)
        assert [e["id"] for e in seen["events"]] == [e["id"] for e in expected if e["project"]]


async def test_many_values_fall_back_to_fewer_walks_and_too_many_are_refused(
    client: Client,
) -> None:
    await a_flag_with_a_history(client, "one")
    await a_flag_with_a_history(client, "two")
    everything = (await search(client, "limit=1000"))["events"]
    kinds = sorted({e["type"] for e in everything})
    projects = ["default"] + [f"p{n}" for n in range(15)]
    assert len(kinds) * len(projects) > logsearch.MAX_WALKS  # more walks than a pair may take
    query = f"type=IS_ANY_OF:{','.join(kinds)}&project=IS_ANY_OF:{','.join(projects)}"
    found = await search(client, f"{query}&limit=1000")
    expected = [e["id"] for e in everything if e["project"] == "default"]
    assert [e["id"] for e in found["events"]] == expected
    assert found["total"] == len(expected)
    values = ",".join(f"t{n}" for n in range(101))
    resp = await client.get(f"{SEARCH}?type=IS_ANY_OF:{values}", headers=ADMIN)
    assert (
        await error(resp, 400, "ValidationError")
    ) == "type takes at most 100 values - at `type`"


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("feature=IS:%00", "feature"),
        ("type=IS:%00x", "type"),
        ("project=IS_ANY_OF:a,b%00", "project"),
        ("from=IS:2026-W48-2", "from"),
        ("from=IS:20261124", "from"),
        ("to=IS:2026-11-24T21:53Z", "to"),
        ("to=IS:2026-11-24T21:53:29,1Z", "to"),
        ("from=IS:5", "from"),
    ],
)
async def test_nul_characters_and_times_that_are_not_rfc_3339_are_a_400(
    client: Client, query: str, field: str
) -> None:
    message = await error(
        await client.get(f"{SEARCH}?{query}", headers=ADMIN), 400, "ValidationError"
    )
    assert message.endswith(f"at `{field}`")
    assert "log position" not in message
    resp = await client.get("/api/admin/events?project=%00", headers=ADMIN)
    await error(resp, 400, "ValidationError")


async def test_times_at_the_ends_of_the_calendar_stand_for_the_first_and_last(
    client: Client,
) -> None:
    await a_flag_with_a_history(client)
    everything = await search(client, "limit=1000")
    for query, total in [
        ("to=IS:9999-12-31", everything["total"]),
        ("to=IS:9999-12-31T23:59:59.999999Z", everything["total"]),
        ("from=IS:9999-12-31T23:59:59-01:00", 0),
        ("to=IS:0001-01-01T00:00:00%2B01:00", 0),
        ("from=IS:0001-01-01", everything["total"]),
        ("from=IS:2026-11-24t00:00:00z", None),  # lower-case letters are RFC 3339 too
    ]:
        found = await search(client, query)
        assert total is None or found["total"] == total, query
    late = await answer_of(client, "/api/admin/projects?at=9999-12-31T23:59:59-01:00")
    assert late == await answer_of(client, "/api/admin/projects")
    early = await answer_of(client, "/api/admin/projects?at=0001-01-01T00:00:00%2B01:00")
    assert early == (200, '{"version":1,"projects":[]}')


async def answer_of(client: Client, path: str) -> tuple[int, str]:
    resp = await client.get(path, headers=ADMIN)
    return resp.status, await resp.text()


async def test_searches_that_hold_every_connection_still_answer(
    dsn: str, aiohttp_client: AiohttpClient
) -> None:
    """A search counts its total on a second connection when one is free at once, else on its
    own: with every connection of the pool held by searches, none waits for another forever."""
    settings = settings_for(dsn, db_pool_size=2)
    await seed_database(dsn, settings.init_admin_api_tokens)
    client = await aiohttp_client(create_app(settings, dsn))
    await a_flag_with_a_history(client)
    answers = await asyncio.gather(
        *(client.get(f"{SEARCH}?type=IS:feature-tagged", headers=ADMIN) for _ in range(8))
    )
    assert [r.status for r in answers] == [200] * 8
    assert {(await r.json())["total"] for r in answers} == {2}
