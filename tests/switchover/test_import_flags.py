"""The import's flags, from a source (this service, seeded through its admin API) into a fresh
target, read back through the target's API and compared with the source's answers: every
field of a flag (type, description, impression data, stale, created time), each environment's
switch, strategies in the source's order (constraints, segments, parameters, variants, title,
disabled), environment variants, tags, dependencies and links, archived flags included. A
second run appends nothing; a change in the source appends only its own events, those our API
appends for it; a flag made here with other content is a conflict unless --prefer-source; a
dry run writes nothing and says what a run would do."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, NamedTuple

import aiohttp
import pytest
from aiohttp import web

from service.appkeys import POOL
from service.switchover import kinds
from tests.switchover.test_import_refdata import (
    REFDATA,
    events_of,
    get,
    head,
    run_command,
    send,
)

if TYPE_CHECKING:
    from pytest_aiohttp import AiohttpServer

    from service.switchover.run import Kind, Outcome, Report
    from tests.switchover.conftest import Source, Target

FLAGS = (*REFDATA, "tag types", "flags")
BASE = "/api/admin/projects/default/features"
# What a server says of who did something, what only use sets (SDKs' metrics, a person's
# favourites), and when a flag entered its lifecycle stage (when this service saw the change
# that put it there: the import's run; the stage itself is compared): not carried.
NOT_CARRIED = frozenset(
    {"createdBy", "collaborators", "lastSeenAt", "yes", "no", "favorite", "enteredStageAt"}
)


def with_flags() -> list[Kind]:
    return [k for k in kinds.all_kinds() if k.name in FLAGS]


def flags_of(report: Report) -> Outcome:
    return next(o for o in report.outcomes if o.kind == "flags")


def _carried(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _carried(v) for k, v in value.items() if k not in NOT_CARRIED}
    if isinstance(value, list):
        return [_carried(v) for v in value]
    return value


STRATEGY_PATH = "/api/admin/projects/{p}/features/{f}/environments/{e}/strategies"


async def flag_state(client: Any) -> dict[str, Any]:
    """Every flag as the admin API answers it: each project's list and archive, each active
    flag's own answer, its tags and each environment's strategies (the route that lists them
    in order)."""
    found: dict[str, Any] = {}
    projects = (await get(client, "/api/admin/projects"))["projects"]
    for project in sorted(p["id"] for p in projects):
        listed = (await get(client, f"/api/admin/projects/{project}/features"))["features"]
        archive = await get(client, f"/api/admin/archive/features/{project}")
        found[f"{project} list"] = _carried(listed)
        found[f"{project} archive"] = _carried(archive["features"])
        for flag in listed:
            name = flag["name"]
            one = await get(client, f"/api/admin/projects/{project}/features/{name}")
            found[name] = _carried(one)
            found[f"{name} tags"] = await get(client, f"/api/admin/features/{name}/tags")
            for env in one["environments"]:
                path = STRATEGY_PATH.format(p=project, f=name, e=env["name"])
                found[f"{name} {env['name']} strategies"] = await get(client, path)
    return found


def differences(ours: Any, theirs: Any, at: str = "") -> list[str]:
    """Where two answers differ, as paths (for a failure's message)."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        return [
            d
            for k in sorted(ours.keys() | theirs.keys())
            for d in differences(ours.get(k, "(absent)"), theirs.get(k, "(absent)"), f"{at}.{k}")
        ]
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        pairs = enumerate(zip(ours, theirs, strict=True))
        return [d for i, (a, b) in pairs for d in differences(a, b, f"{at}[{i}]")]
    return [] if ours == theirs else [f"{at}: ours {ours!r}, the source's {theirs!r}"]


async def assert_same(target: Target, source: Source) -> None:
    ours, theirs = await flag_state(target.client), await flag_state(source.client)
    found = differences(ours, theirs)
    assert not found, "\n".join(found)


async def strategy(client: Any, flag: str, env: str, body: dict[str, Any]) -> str:
    made = await send(client, "POST", f"{BASE}/{flag}/environments/{env}/strategies", body)
    return str(made["id"])


async def seed(client: Any) -> dict[str, Any]:
    """Flags with some of everything: `rich` has three strategies in development, added in one
        order and sorted into another (a title, a disabled one, constraints of several operators,
        a segment, strategy variants with a payload), environment variants with overrides in
        production, tags of two types and two links; `child` depends on `parent` (off), `kid` on
        it with variants; `old` is stale; `gone` is archived with its strategy and tag, `ancient`
    archived bare. Returns
        the strategies' ids by name and the segments' by name."""
    await send(client, "POST", "/api/admin/tag-types", {"name": "team", "description": "owner"})
    beta = await send(
        client,
        "POST",
        "/api/admin/segments",
        {
            "name": "beta",
            "constraints": [{"contextName": "appName", "operator": "IN", "values": ["web"]}],
        },
    )
    body = {"type": "experiment", "description": "All of it", "impressionData": True}
    await send(client, "POST", BASE, {"name": "rich", **body})
    ids = {
        "rollout": await strategy(
            client,
            "rich",
            "development",
            {
                "name": "flexibleRollout",
                "title": "Half the staff",
                "parameters": {"rollout": "50", "stickiness": "userId", "groupId": "rich"},
                "constraints": [
                    {"contextName": "userId", "operator": "IN", "values": ["1", "2"]},
                    {
                        "contextName": "appName",
                        "operator": "STR_CONTAINS",
                        "values": ["Web"],
                        "caseInsensitive": True,
                        "inverted": True,
                    },
                    {
                        "contextName": "currentTime",
                        "operator": "DATE_AFTER",
                        "value": "2024-01-01T00:00:00.000Z",
                    },
                    {"contextName": "version", "operator": "SEMVER_GT", "value": "1.2.3"},
                    {"contextName": "userId", "operator": "NUM_GTE", "value": "7"},
                ],
                "segments": [beta["id"]],
                "variants": [
                    {
                        "name": "blue",
                        "weight": 1000,
                        "weightType": "variable",
                        "stickiness": "userId",
                        "payload": {"type": "json", "value": '{"x": 1}'},
                    }
                ],
            },
        ),
        "users": await strategy(
            client,
            "rich",
            "development",
            {"name": "userWithId", "parameters": {"userIds": "a,b"}, "disabled": True},
        ),
        "default": await strategy(client, "rich", "development", {"name": "default"}),
        "production": await strategy(
            client,
            "rich",
            "production",
            {"name": "remoteAddress", "parameters": {"IPs": "10.0.0.1"}},
        ),
    }
    await send(
        client,
        "POST",
        f"{BASE}/rich/environments/development/strategies/set-sort-order",
        [
            {"id": ids["default"], "sortOrder": 0},
            {"id": ids["rollout"], "sortOrder": 1},
            {"id": ids["users"], "sortOrder": 2},
        ],
    )
    await send(client, "POST", f"{BASE}/rich/environments/development/on")
    await send(
        client,
        "PUT",
        f"{BASE}/rich/environments/production/variants",
        [
            {
                "name": "a",
                "weight": 500,
                "weightType": "variable",
                "stickiness": "default",
                "payload": {"type": "string", "value": "first"},
                "overrides": [{"contextName": "userId", "values": ["9"]}],
            },
            {"name": "b", "weight": 500, "weightType": "variable", "stickiness": "default"},
        ],
    )
    for tag in ({"type": "simple", "value": "one"}, {"type": "team", "value": "core"}):
        await send(client, "POST", "/api/admin/features/rich/tags", tag, 201)
    await send(client, "POST", f"{BASE}/rich/link", {"url": "https://example.com/a", "title": "A"})
    await send(client, "POST", f"{BASE}/rich/link", {"url": "https://example.com/b"})
    await send(client, "POST", BASE, {"name": "parent"})
    await send(
        client,
        "PUT",
        f"{BASE}/parent/environments/development/variants",
        [{"name": "blue", "weight": 1000, "weightType": "variable", "stickiness": "default"}],
    )
    for child, dependency in (
        ("child", {"feature": "parent", "enabled": False}),
        ("kid", {"feature": "parent", "variants": ["blue"]}),
    ):
        await send(client, "POST", BASE, {"name": child, "type": "operational"})
        await send(client, "POST", f"{BASE}/{child}/dependencies", dependency)
    await send(client, "POST", BASE, {"name": "old", "type": "kill-switch"})
    await send(
        client,
        "POST",
        "/api/admin/projects/default/stale",
        {"features": ["old"], "stale": True},
        202,
    )
    await send(client, "POST", BASE, {"name": "gone", "description": "archived"})
    ids["gone"] = await strategy(client, "gone", "development", {"name": "default"})
    await send(
        client, "POST", "/api/admin/features/gone/tags", {"type": "simple", "value": "xx"}, 201
    )
    await send(client, "DELETE", f"{BASE}/gone", None, 202)
    await send(client, "POST", BASE, {"name": "ancient"})
    await send(client, "DELETE", f"{BASE}/ancient", None, 202)
    return {"strategies": ids, "segments": {"beta": beta["id"]}}


LIST = re.compile(r"^/api/admin/projects/[^/]+/features$")
# What this service's event log answers beyond Unleash's fields.
OURS_ONLY = ("position", "stream", "streamVersion", "hash", "storedType")


class Log(NamedTuple):
    """How the proxy's event log differs from the source's: the flags whose events it lacks
    (a log that is incomplete), those whose strategy events come without a sortOrder."""

    forgotten: set[str]
    unsorted: set[str]


def _as_unleash_log(found: dict[str, Any], log: Log) -> dict[str, Any]:
    """An event search's answer as Unleash's: its fields only, a re-order's data the strategy
    ids in their new order, newest first by creation time alone (Unleash's order)."""
    events = []
    for event in found["events"]:
        if event["featureName"] in log.forgotten:
            continue
        for field in OURS_ONLY:
            event.pop(field, None)
        data = event["data"]
        if event["type"] == "strategy-order-changed":
            orders = sorted(data["sortOrders"], key=lambda o: o["sortOrder"])
            event["data"] = {"strategyIds": [o["strategyId"] for o in orders]}
            event["preData"] = None
        elif event["featureName"] in log.unsorted and isinstance(data, dict):
            data.pop("sortOrder", None)
        events.append(event)
    events.sort(key=lambda e: e["createdAt"], reverse=True)
    return {"events": events, "total": len(events)}


def as_unleash(source: Source, asked: list[str], log: Log | None = None) -> web.Application:
    """The source answering as Unleash 6.10.1 does where that differs for the flags' reads: a
    project's list without each environment's strategies and variants, an export whose
    strategies come without their sortOrder and in another order than the flag's (so the
    importer takes each environment's order from the event log, or reads it, as it does from
    Unleash), an event log in Unleash's shape (less `log` says). Everything else is the
    source's answer as it is. `asked` gets each path asked."""
    log = log or Log(set(), set())

    async def forward(request: web.Request) -> web.Response:
        asked.append(request.path)
        async with (
            aiohttp.ClientSession() as session,
            session.request(
                request.method,
                source.url + request.path_qs,
                data=await request.read() if request.can_read_body else None,
                headers={"Authorization": source.token, "Content-Type": "application/json"},
            ) as answer,
        ):
            body = await answer.read()
            if answer.status != 200:
                return web.Response(body=body, status=answer.status)
            found = json.loads(body)
            if request.method == "GET" and LIST.match(request.path):
                for flag in found["features"]:
                    for env in flag["environments"]:
                        env.pop("strategies", None)
                        env.pop("variants", None)
            elif request.path == "/api/admin/features-batch/export":
                strategies = found["featureStrategies"]
                for strategy in strategies:
                    del strategy["sortOrder"]
                strategies.reverse()
            elif request.path == "/api/admin/search/events":
                found = _as_unleash_log(found, log)
            return web.json_response(found)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", forward)
    return app


class Via(NamedTuple):
    source: Source
    asked: list[str] | None  # the paths asked of a source answering as Unleash


@pytest.fixture(params=["lists in order", "as Unleash answers"])
async def either(request: Any, source: Source, aiohttp_server: AiohttpServer) -> Via:
    """The source as it is (its lists carry strategies in order), or answering as Unleash
    does (an export without order, each environment's order read)."""
    if request.param == "lists in order":
        return Via(source, None)
    asked: list[str] = []
    fake = await aiohttp_server(as_unleash(source, asked))
    url = str(fake.make_url("")).rstrip("/")
    return Via(type(source)(url=url, token=source.token, client=source.client), asked)


async def test_every_flag_is_copied_and_a_second_run_appends_nothing(
    either: Via, source: Source, target: Target
) -> None:
    await seed(source.client)
    report = await target.run(either.source, only=with_flags())
    assert report.problems == 0, report.outcomes
    outcome = flags_of(report)
    assert sorted(outcome.created) == ["ancient", "child", "gone", "kid", "old", "parent", "rich"]
    assert outcome.in_source == 7
    await assert_same(target, source)
    events = await target.events()
    again = await target.run(either.source, only=with_flags())
    assert again.problems == 0, again.outcomes
    assert events_of(again) == 0
    assert flags_of(again).unchanged == 7
    assert await target.events() == events


async def flag_events(conn: Any, since: int) -> list[tuple[str, str]]:
    """The flags' events after a position: (flag, event type), sorted."""
    rows = await conn.fetch(
        "SELECT stream_key, type FROM events WHERE position > $1 AND stream_type = 'feature'",
        since,
    )
    return sorted((r["stream_key"], r["type"]) for r in rows)


async def source_head(source: Source) -> int:
    async with source.client.app[POOL].acquire() as conn:
        return int(await conn.fetchval("SELECT coalesce(max(position), 0) FROM events"))


async def source_events(source: Source, since: int) -> list[tuple[str, str]]:
    async with source.client.app[POOL].acquire() as conn:
        return await flag_events(conn, since)


async def test_changes_in_the_source_append_the_events_our_api_appended_there(
    either: Via, source: Source, target: Target
) -> None:
    ids = (await seed(source.client))["strategies"]
    await target.run(either.source, only=with_flags())
    client = source.client
    since_there = await source_head(source)
    await send(
        client,
        "PUT",
        f"{BASE}/rich/environments/development/strategies/{ids['rollout']}",
        {
            "name": "flexibleRollout",
            "title": "Most of the staff",
            "parameters": {"rollout": "75", "stickiness": "userId", "groupId": "rich"},
            "constraints": [{"contextName": "userId", "operator": "IN", "values": ["3"]}],
        },
    )
    await send(
        client, "DELETE", f"{BASE}/rich/environments/production/strategies/{ids['production']}"
    )
    await send(client, "DELETE", f"{BASE}/old", None, 202)
    await send(client, "POST", "/api/admin/projects/default/revive", {"features": ["gone"]})
    await send(
        client,
        "PATCH",
        f"{BASE}/kid",
        [{"op": "replace", "path": "/description", "value": "Now described"}],
    )
    await send(client, "DELETE", "/api/admin/features/rich/tags/team/core")
    await send(client, "POST", "/api/admin/projects/default/delete", {"features": ["ancient"]})
    expected = await source_events(source, since_there)
    assert {t for _, t in expected} >= {
        "StrategyUpdated",
        "StrategyRemoved",
        "FeatureArchived",
        "FeatureRevived",
        "FeatureUpdated",
        "FeatureUntagged",
        "FeatureDeleted",
    }, expected
    since = await head(target)
    report = await target.run(either.source, only=with_flags())
    assert report.problems == 0, report.outcomes
    outcome = flags_of(report)
    assert sorted(outcome.updated) == ["gone", "kid", "old", "rich"]
    assert outcome.deleted == ["ancient"]
    assert await flag_events(target.conn, since) == expected
    assert events_of(report) == len(expected)
    await assert_same(target, source)
    settled = await target.events()
    again = await target.run(either.source, only=with_flags())
    assert events_of(again) == 0
    assert await target.events() == settled


def _order_reads(asked: list[str]) -> list[str]:
    """The strategy orders read one by one."""
    return sorted(p for p in asked if p.endswith("/strategies") and "/features/" in p)


async def strategy_order(client: Any, flag: str, env: str) -> list[str]:
    found = await get(client, STRATEGY_PATH.format(p="default", f=flag, e=env))
    return [s["id"] for s in found]


async def test_strategies_land_in_the_source_order_and_a_reorder_is_one_event(
    either: Via, source: Source, target: Target
) -> None:
    ids = (await seed(source.client))["strategies"]
    await send(source.client, "POST", BASE, {"name": "pair"})
    pair = []
    for rollout in ("10", "20"):  # not re-ordered before the first import
        body = {"name": "flexibleRollout", "parameters": {"rollout": rollout}}
        pair.append(await strategy(source.client, "pair", "production", body))
    report = await target.run(either.source, only=with_flags())
    assert report.problems == 0, report.outcomes
    expected = [ids["default"], ids["rollout"], ids["users"]]
    assert await strategy_order(source.client, "rich", "development") == expected
    assert await strategy_order(target.client, "rich", "development") == expected
    await assert_same(target, source)
    if either.asked is not None:
        # Read where the export leaves the order out and the log does not prove it: `rich`,
        # re-ordered (a re-order's event names no sortOrder); `pair`'s comes from its events.
        assert either.asked.count("/api/admin/search/events") == 1
        assert _order_reads(either.asked) == [f"{BASE}/rich/environments/development/strategies"]
        either.asked.clear()
        # Unchanged: only the order of `rich`, which the source's log shows re-ordered since
        # the first import (by the seed), is read again.
        assert events_of(await target.run(either.source, only=with_flags())) == 0
        assert either.asked.count("/api/admin/search/events") == 1
        assert _order_reads(either.asked) == [f"{BASE}/rich/environments/development/strategies"]
        either.asked.clear()
    since_there = await source_head(source)
    await send(
        source.client,
        "POST",
        f"{BASE}/rich/environments/development/strategies/set-sort-order",
        [
            {"id": ids["users"], "sortOrder": 0},
            {"id": ids["default"], "sortOrder": 1},
            {"id": ids["rollout"], "sortOrder": 2},
        ],
    )
    await send(
        source.client,
        "POST",
        f"{BASE}/pair/environments/production/strategies/set-sort-order",
        [{"id": pair[1], "sortOrder": 0}, {"id": pair[0], "sortOrder": 1}],
    )
    expected_events = await source_events(source, since_there)
    assert expected_events == [("pair", "StrategiesReordered"), ("rich", "StrategiesReordered")]
    since = await head(target)
    again = await target.run(either.source, only=with_flags())
    assert again.problems == 0, again.outcomes
    assert sorted(flags_of(again).updated) == ["pair", "rich"]
    assert await flag_events(target.conn, since) == expected_events
    if either.asked is not None:  # the re-order in the source's log: that order is read
        assert f"{BASE}/rich/environments/development/strategies" in either.asked
    assert await strategy_order(target.client, "rich", "development") == [
        ids["users"],
        ids["default"],
        ids["rollout"],
    ]
    assert await strategy_order(target.client, "pair", "production") == [pair[1], pair[0]]
    await assert_same(target, source)
    settled = await target.events()
    assert events_of(await target.run(either.source, only=with_flags())) == 0
    assert await target.events() == settled


async def test_a_sort_order_the_event_log_proves_is_not_read_and_one_it_does_not_is(
    source: Source, target: Target, aiohttp_server: AiohttpServer
) -> None:
    await seed(source.client)
    for flag, rollouts in (("pair", "12"), ("lone", "3"), ("lost", "45"), ("bare", "6")):
        await send(source.client, "POST", BASE, {"name": flag})
        for rollout in rollouts:
            body = {"name": "flexibleRollout", "parameters": {"rollout": rollout}}
            await strategy(source.client, flag, "production", body)
    asked: list[str] = []
    log = Log(forgotten={"lost"}, unsorted={"bare"})
    fake = await aiohttp_server(as_unleash(source, asked, log))
    via = type(source)(
        url=str(fake.make_url("")).rstrip("/"), token=source.token, client=source.client
    )
    report = await target.run(via, only=with_flags())
    assert report.problems == 0, report.outcomes
    # Read: `rich` in development (re-ordered: a re-order's event gives no sortOrder), `lost`
    # (no event names its strategies), `bare` (its strategy's event has no sortOrder). Not
    # read: `pair`, `lone`, the other environments: each strategy's latest event gives it.
    assert _order_reads(asked) == [
        f"{BASE}/bare/environments/production/strategies",
        f"{BASE}/lost/environments/production/strategies",
        f"{BASE}/rich/environments/development/strategies",
    ]
    await assert_same(target, source)


async def test_a_flag_made_here_with_other_content_is_a_conflict_unless_the_source_is_preferred(
    source: Source, target: Target
) -> None:
    await seed(source.client)
    await send(target.client, "POST", BASE, {"name": "rich", "description": "made here"})
    for side in (source, target):  # alike on both sides
        await send(side.client, "POST", BASE, {"name": "plain", "description": "the same"})
    before = await target.events()
    report = await target.run(source, only=with_flags())
    assert report.stopped_at == "flags"
    outcome = flags_of(report)
    assert not outcome.written
    (conflict,) = outcome.conflicts
    assert conflict[0] == "rich"
    assert "description" in conflict[1]
    assert "strategies in development" in conflict[1]
    assert outcome.unchanged == 1  # `plain`, alike
    # The kinds before it landed (the tag type, the segment); no flag event did.
    assert await target.events() > before
    assert await flag_events(target.conn, 0) == [
        ("plain", "FeatureCreated"),
        ("rich", "FeatureCreated"),
    ]
    mine = await get(target.client, f"{BASE}/rich")
    assert mine["description"] == "made here"
    # The command says so, by name, and exits 1.
    code, out, err = await run_command(target, "--url", source.url, "--token", source.token)
    assert code == 1, err
    assert "flags: conflict: rich: differs here in" in out
    assert "stopped at flags" in out
    assert await flag_events(target.conn, 0) == [
        ("plain", "FeatureCreated"),
        ("rich", "FeatureCreated"),
    ]
    preferred = await target.run(source, only=with_flags(), prefer_source=True)
    assert preferred.problems == 0, preferred.outcomes
    assert flags_of(preferred).updated == ["rich"]
    ours, theirs = await flag_state(target.client), await flag_state(source.client)
    # The flags made here keep their times: no change carries a created time.
    for state in (ours, theirs):
        for name in ("rich", "plain"):
            state[name].pop("createdAt")
            next(f for f in state["default list"] if f["name"] == name).pop("createdAt")
    assert not differences(ours, theirs), differences(ours, theirs)


async def test_a_flag_changed_here_after_its_import_is_a_conflict(
    source: Source, target: Target
) -> None:
    await seed(source.client)
    await target.run(source, only=with_flags())
    patch = [{"op": "replace", "path": "/description", "value": "ours"}]
    await send(target.client, "PATCH", f"{BASE}/kid", patch)
    await send(source.client, "PATCH", f"{BASE}/rich", patch)
    await send(source.client, "PATCH", f"{BASE}/kid", [patch[0] | {"value": "theirs"}])
    since = await head(target)
    report = await target.run(source, only=with_flags())
    outcome = flags_of(report)
    assert outcome.conflicts == [("kid", "differs here in description")]
    assert not outcome.written
    assert await flag_events(target.conn, since) == []  # not even `rich`'s change


async def test_a_dry_run_writes_nothing_and_says_what_a_run_would(
    source: Source, target: Target
) -> None:
    await seed(source.client)
    empty = await flag_state(target.client)
    before = await target.events()
    report = await target.run(source, only=with_flags(), dry_run=True)
    assert report.dry_run
    assert report.problems == 0, report.outcomes
    outcome = flags_of(report)
    assert sorted(outcome.created) == ["ancient", "child", "gone", "kid", "old", "parent", "rich"]
    assert outcome.events > 0
    assert await target.events() == before
    assert await flag_state(target.client) == empty
    # What it says is what a run then does.
    done = await target.run(source, only=with_flags())
    assert flags_of(done).created == outcome.created
    assert flags_of(done).events == outcome.events
    # A dry run after changes names them and writes nothing either.
    await send(source.client, "DELETE", f"{BASE}/old", None, 202)
    await send(source.client, "DELETE", "/api/admin/features/rich/tags/team/core")
    settled = await target.events()
    dry = await target.run(source, only=with_flags(), dry_run=True)
    assert sorted(flags_of(dry).updated) == ["old", "rich"]
    assert flags_of(dry).events == 2
    assert await target.events() == settled
    code, out, err = await run_command(
        target, "--url", source.url, "--token", source.token, "--dry-run"
    )
    assert code == 0, err
    assert out.startswith("dry run: nothing was written")
    assert await target.events() == settled
