"""What the SDK tests share: the service as a real process with flags worth evaluating, the
contexts they are evaluated for, the reference answers, admin calls and the service's log."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import aiohttp
import asyncpg
from yggdrasil_engine.engine import UnleashEngine

from tests.clientapi import PROJECT, env_path, rich_flags, strategy, switch
from tests.factories import ADMIN, ADMIN_TOKEN, api_token, flag, ok
from tests.harness import wait_ready

if TYPE_CHECKING:
    from tests.client.sdk.proxy import Connection, Proxy
    from tests.harness import Harness, Server

ENVIRONMENT = "development"
STREAMED_SECONDS = 1.0  # how soon a change must reach a streaming SDK (docs/client-api.md)
# Every flag the SDKs are asked about: rich_flags' (a gradual rollout with constraints, a
# segment and strategy variants, depending on a parent; environment variants; a disabled and a
# tagged flag), a second rollout, three more dependents, and one that does not exist.
FLAGS = [
    "checkout",
    "parent",
    "banner",
    "dormant",
    "tagged",
    "gate",  # a rollout of its own: 30% of users
    "ungated",  # needs gate off
    "wide-addon",  # needs banner's variant "wide"
    "orphan",  # on, but needs dormant (off everywhere)
    "no-such-flag",
]
# One client token per SDK and mode (and one for the tests' own reads): the service's request
# log tells who asked what. A frontend token asks /api/frontend.
CLIENTS = ("python-polling", "python-streaming", "node-polling", "node-streaming")
REFERENCE = "reference"
FRONTEND = "frontend"


def _contexts() -> list[dict[str, Any]]:
    """50 contexts: users in and out of the segment's regions, the legacy app (refused by a
    constraint), the two listed users, sessions without a user (the rollout is sticky on
    userId: off; banner's variants stick to the session), and a few with more fields."""
    regions = ["eu", "us", "asia", "eu", "us"]
    contexts: list[dict[str, Any]] = [
        {
            "userId": f"user-{n}",
            "appName": "legacy" if n % 7 == 3 else "shop",
            "properties": {"region": regions[n % len(regions)]},
        }
        for n in range(36)
    ]
    contexts += [
        {"userId": "vip-1", "appName": "legacy", "properties": {"region": "asia"}},
        {"userId": "vip-2", "appName": "shop"},
        {"userId": "vip-3", "appName": "shop", "properties": {"region": "eu"}},
    ]
    contexts += [
        {"sessionId": f"session-{n}", "appName": "shop", "properties": {"region": "eu"}}
        for n in range(6)
    ]
    contexts += [
        {"userId": "user-7", "sessionId": "s-77", "appName": "shop", "remoteAddress": "10.0.0.7"},
        {"userId": "user-8", "appName": "shop", "properties": {"region": "EU"}},  # case matters
        {"userId": "user-9", "appName": "shop", "properties": {"region": "us", "plan": "pro"}},
        {"userId": "user-100", "appName": "shop", "properties": {"region": "us"}},
        {"userId": "user-101", "appName": "shop", "properties": {"region": "eu"}},
    ]
    return contexts


CONTEXTS = _contexts()


@dataclass
class Service:
    """The service process, seeded; `tokens` and `token_ids` by client (CLIENTS)."""

    server: Server
    dsn: str
    tokens: dict[str, str] = field(default_factory=dict)
    token_ids: dict[str, int] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def api(self) -> str:
        """What an SDK is given: the base of /api/client."""
        return f"{self.server.url}/api"

    def requests(self, client: str) -> list[tuple[str, str, int]]:
        """(method, path, status) of every request the client's token made so far (each is
        logged once answered: a stream once it ends)."""
        who = f"api-token:{self.token_ids[client]}"
        found = []
        for line in self.server.stdout().splitlines():
            record = json.loads(line)
            if record.get("event") == "request" and record.get("principal") == who:
                found.append((record["method"], record["path"], record["status"]))
        return found


async def seed(server: Server, dsn: str) -> Service:
    await wait_ready(server)
    service = Service(server, dsn)
    async with aiohttp.ClientSession(base_url=server.url) as client:
        await rich_flags(client)
        await flag(client, "gate")
        rollout = {"rollout": "30", "stickiness": "userId", "groupId": "gate"}
        await strategy(client, "gate", {"name": "flexibleRollout", "parameters": rollout})
        await switch(client, "gate")
        await dependent(client, "ungated", {"feature": "gate", "enabled": False})
        await dependent(
            client, "wide-addon", {"feature": "banner", "enabled": True, "variants": ["wide"]}
        )
        await dependent(client, "orphan", {"feature": "dormant", "enabled": True})
        for name in (*CLIENTS, REFERENCE, FRONTEND):
            kind = "frontend" if name == FRONTEND else "client"
            made = await api_token(client, kind, name=name, environment=ENVIRONMENT)
            service.tokens[name] = made["secret"]
            service.token_ids[name] = made["id"]
    return service


async def dependent(client: Any, name: str, dependency: dict[str, Any]) -> None:
    """A flag on for everyone (a default strategy), but for its parent dependency."""
    await flag(client, name)
    await strategy(client, name, {"name": "default"})
    await switch(client, name)
    path = f"{PROJECT}/features/{name}/dependencies"
    await ok(await client.post(path, json=dependency, headers=ADMIN))


def watched_flag(service: Service, name: str) -> int:
    """A flag for one test of change propagation: off; once on, on for region eu only (by a
    segment of its own, which the test may change). Returns the segment's id."""
    body = {
        "name": name,
        "constraints": [{"contextName": "region", "operator": "IN", "values": ["eu"]}],
    }
    segment_id = int(admin_ok(service, "POST", "/api/admin/segments", body)["id"])
    admin_ok(service, "POST", f"{PROJECT}/features", {"name": name})
    strategy = {"name": "default", "segments": [segment_id]}
    admin_ok(service, "POST", f"{env_path(name)}/strategies", strategy)
    return segment_id


EU = {"userId": "u-1", "properties": {"region": "eu"}}
US = {"userId": "u-1", "properties": {"region": "us"}}


@dataclass(frozen=True)
class Step:
    """A change made through the admin API, and what an SDK answers once it knows of it:
    is_enabled(flag, context) becomes `enabled` (it was the other before)."""

    what: str
    method: str
    path: str
    body: Any
    context: dict[str, Any]
    enabled: bool


def changes(name: str, segment_id: int) -> list[Step]:
    """For a watched_flag: switched on (eu on), its segment changed to us (us on, eu off),
    archived (off): in streaming, a feature-updated, a segment-updated and a feature-removed."""
    us_only = [{"contextName": "region", "operator": "IN", "values": ["us"]}]
    return [
        Step("switched on", "POST", f"{env_path(name)}/on", None, EU, True),
        Step(
            "segment changed",
            "PUT",
            f"/api/admin/segments/{segment_id}",
            {"name": name, "constraints": us_only},
            US,
            True,
        ),
        Step("archived", "DELETE", f"{PROJECT}/features/{name}", None, US, False),
    ]


def assert_resumed(streams: list[Connection], name: str) -> None:
    """Three streams, each a resumption of the one before: it sent the id of that one's last
    event as Last-Event-ID. The second was told only what changed while it was away (the flag
    switched on), not everything again; the third, which missed nothing, an unleash-connected
    with no event, then the change made after it connected (the segment) as it happened."""
    first, second, third = streams
    assert first.header("Last-Event-ID") is None
    assert first.events()[0]["event"] == "unleash-connected"
    (hydration,) = json.loads(first.events()[0]["data"])["events"]
    assert hydration["type"] == "hydration"
    last_id = first.events()[-1]["id"]
    assert second.header("Last-Event-ID") == last_id
    (connected,) = second.events()
    assert connected["event"] == "unleash-connected"
    *segments, change = json.loads(connected["data"])["events"]
    # the segments the flag uses come first (the SDK may not have them)
    assert {s["type"] for s in segments} <= {"segment-updated"}
    assert (change["type"], change["feature"]["name"]) == ("feature-updated", name)
    assert change["feature"]["enabled"] is True
    assert int(connected["id"]) > int(last_id)
    assert third.header("Last-Event-ID") == connected["id"]
    again, updated = third.events()
    assert (again["event"], again["id"], again["data"]) == (
        "unleash-connected",
        connected["id"],
        '{"events":[]}',
    )
    assert updated["event"] == "unleash-updated"
    (change,) = json.loads(updated["data"])["events"]
    assert (change["type"], change["segment"]["name"]) == ("segment-updated", name)


class Watcher(Protocol):
    """An SDK under test, as the tests of change propagation drive it."""

    client: str

    def arm(self, flag: str, step: Step) -> None:
        """Before the step's change: the SDK answers the other way still."""

    def seen(self, flag: str, step: Step) -> None:
        """Returns once the SDK answers as the step says."""


def propagated(service: Service, sdk: Watcher, flag: str, steps: list[Step]) -> dict[str, float]:
    """Each step's change made through the admin API, and the seconds from its answer to
    the SDK answering the new value."""
    took = {}
    for step in steps:
        sdk.arm(flag, step)
        admin_ok(service, step.method, step.path, step.body)
        started = time.monotonic()
        sdk.seen(flag, step)
        took[step.what] = time.monotonic() - started
    return took


def resumed(service: Service, proxy: Proxy, sdk: Watcher, flag: str, segment_id: int) -> None:
    """The SDK's stream (through `proxy`) cut while the flag is switched on, then cut again
    while nothing changes, then the flag's segment changed: each reaches the SDK, and the
    three streams show how (assert_resumed)."""
    on, segment, _ = changes(flag, segment_id)
    sdk.arm(flag, on)
    proxy.hold()
    proxy.cut()
    admin_ok(service, on.method, on.path, on.body)
    proxy.release()
    started = time.monotonic()
    sdk.seen(flag, on)
    took = {"resumed after a cut": time.monotonic() - started}
    proxy.cut()
    wait_until("reconnected", lambda: len(proxy.streams()) == 3 and proxy.streams()[2].events())
    quiet = propagated(service, sdk, flag, [segment])[segment.what]
    took["then, after a quiet cut, " + segment.what] = quiet
    report(sdk.client, took)
    assert quiet < STREAMED_SECONDS, took
    assert_resumed(proxy.streams()[:3], flag)


def start_service(harness: Harness, dsn: str) -> Service:
    server = harness.start(harness.new_dir(), DATABASE_URL=dsn, INIT_ADMIN_API_TOKENS=ADMIN_TOKEN)
    return asyncio.run(seed(server, dsn))


def admin(service: Service, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """One admin API call, synchronously (the SDKs' tests are synchronous)."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        f"{service.url}{path}", data=data, method=method, headers={**ADMIN}
    )
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            raw = resp.read()
            return resp.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def admin_ok(service: Service, method: str, path: str, body: Any = None) -> Any:
    status, answer = admin(service, method, path, body)
    assert status in (200, 201, 202, 204), (method, path, status, answer)
    return answer


def wait_until(what: str, check: Any, timeout: float = 10.0, step: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(step)


def assert_reported(
    service: Service, client: str, app_name: str, results: list[list[dict[str, Any]]]
) -> Any:
    """The SDK's registration and metrics were taken (202 each), and the reporting views
    show exactly what it evaluated (`results`), once its reports arrived. Returns its row of
    reporting.client_instances."""
    expected = counted(results)
    deadline = time.monotonic() + 10
    while (found := asyncio.run(reported(service, app_name)))[1] != expected:
        if time.monotonic() > deadline:
            break
        time.sleep(0.1)
    instance, usage = found
    assert usage == expected
    assert instance is not None
    assert (instance["environment"], instance["instance_id"]) == (ENVIRONMENT, f"{app_name}-1")
    assert instance["registered_at"] is not None
    assert_accepted(service, client)
    return instance


def assert_accepted(service: Service, client: str) -> None:
    """The client registered and sent metrics, and the service took each (202)."""
    posts: dict[str, set[int]] = {}
    for method, path, status in service.requests(client):
        if method == "POST":
            posts.setdefault(path, set()).add(status)
    assert posts == {"/api/client/register": {202}, "/api/client/metrics": {202}}


def counted(results: list[list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """What an SDK reports of these answers: each is one is_enabled and one get_variant, and
    each counts the flag once (yes or no); get_variant counts its variant too. Flags that do
    not exist are not kept by the service."""
    usage: dict[str, dict[str, Any]] = {}
    for row in results:
        for name, got in zip(FLAGS, row, strict=True):
            if name == "no-such-flag":
                continue
            flag = usage.setdefault(name, {"yes": 0, "no": 0, "variants": {}})
            flag["yes" if got["enabled"] else "no"] += 2
            variant = got["variant"]["name"]
            flag["variants"][variant] = flag["variants"].get(variant, 0) + 1
    return usage


async def reported(service: Service, app_name: str) -> tuple[Any, dict[str, dict[str, Any]]]:
    """What the reporting views hold of an application: its instance, and its evaluations
    per flag (summed over hours)."""
    conn = await asyncpg.connect(service.dsn)
    try:
        instance = await conn.fetchrow(
            "SELECT * FROM reporting.client_instances WHERE app_name = $1", app_name
        )
        rows = await conn.fetch(
            "SELECT feature_name, yes, no, variants FROM reporting.flag_usage_hourly"
            " WHERE app_name = $1 AND environment = $2",
            app_name,
            ENVIRONMENT,
        )
    finally:
        await conn.close()
    usage: dict[str, dict[str, Any]] = {}
    for row in rows:
        flag = usage.setdefault(row["feature_name"], {"yes": 0, "no": 0, "variants": {}})
        flag["yes"] += row["yes"]
        flag["no"] += row["no"]
        for variant, times in json.loads(row["variants"]).items():
            flag["variants"][variant] = flag["variants"].get(variant, 0) + times
    return instance, usage


def assert_polled(service: Service, client: str, *, streaming: bool) -> None:
    """A streaming SDK never polled (nor fell back to polling); a polling one did, and was told
    304 when nothing moved."""
    reads = {(p, s) for _, p, s in service.requests(client) if p.startswith("/api/client/f")}
    if streaming:
        assert reads == set()
    else:
        assert reads == {("/api/client/features", 200), ("/api/client/features", 304)}


def report(client: str, took: dict[str, float]) -> None:
    """The measured propagation times, in the output of `pytest -s` (and on failure)."""
    print(client, " ".join(f"{what}: {s * 1000:.0f} ms" for what, s in took.items()))  # noqa: T201


# --- what the flags answer ---------------------------------------------------------------------


def answer(enabled: bool, variant: dict[str, Any]) -> dict[str, Any]:
    """One flag for one context, as every SDK and the service can say it: whether it is on,
    and its variant (name, enabled, payload: none and an empty one are one thing; whether the
    flag was on, which the SDKs repeat in the variant)."""
    return {
        "enabled": enabled,
        "variant": {
            "name": variant["name"],
            "enabled": variant["enabled"],
            "payload": variant.get("payload") or None,
            "feature_enabled": variant["feature_enabled"],
        },
    }


DISABLED = {"name": "disabled", "enabled": False, "feature_enabled": False}


def frontend_answers(service: Service, method: str) -> list[list[dict[str, Any]]]:
    """Every flag for every context, as /api/frontend answers it (GET: the context in the
    query, its properties as properties[name]=; POST: in the body). It lists the flags
    enabled for the context (the tests' watched flags too, left out here); the others are
    off, with the disabled variant."""
    results = []
    for context in CONTEXTS:
        headers = {"Authorization": service.tokens[FRONTEND]}
        if method == "POST":
            body = json.dumps({"context": context}).encode()
            url = f"{service.api}/frontend"
            headers["Content-Type"] = "application/json"
        else:
            body = None
            query = {k: v for k, v in context.items() if k != "properties"}
            query |= {f"properties[{k}]": v for k, v in context.get("properties", {}).items()}
            url = f"{service.api}/frontend?{urllib.parse.urlencode(query)}"
        request = urllib.request.Request(url, data=body, method=method, headers=headers)
        with urllib.request.urlopen(request, timeout=10) as resp:
            toggles = {t["name"]: t for t in json.loads(resp.read())["toggles"]}
        assert all(t["enabled"] is True for t in toggles.values())
        results.append(
            [
                answer(name in toggles, toggles[name]["variant"] if name in toggles else DISABLED)
                for name in FLAGS
            ]
        )
    return results


def client_features(service: Service) -> str:
    """GET /api/client/features as an SDK of spec 5.2.0 reads it (segments apart)."""
    request = urllib.request.Request(
        f"{service.api}/client/features",
        headers={"Authorization": service.tokens[REFERENCE], "Unleash-Client-Spec": "5.2.0"},
    )
    with urllib.request.urlopen(request, timeout=10) as resp:
        return str(resp.read().decode())


def engine_answers(state: str) -> list[list[dict[str, Any]]]:
    """Every flag for every context, evaluated by Unleash's engine (yggdrasil) on a client
    features body: what the service's client API means, as the engine reads it."""
    engine = UnleashEngine()
    assert engine.take_state(state) is None
    results = []
    for context in CONTEXTS:
        row = []
        for name in FLAGS:
            variant = engine.check_variant(name, context).variant
            row.append(
                answer(
                    engine.check_enabled(name, context).is_enabled,
                    {
                        "name": variant.name,
                        "enabled": variant.enabled,
                        "payload": variant.payload,
                        "feature_enabled": variant.feature_enabled,
                    },
                )
            )
        results.append(row)
    return results


def assert_meaningful(results: list[list[dict[str, Any]]]) -> None:
    """The contexts exercise every rule: the rollout answers both ways, with both variants;
    the dependents, the environment variants and the unknown flag do what they should."""
    by_flag = {name: [row[i] for row in results] for i, name in enumerate(FLAGS)}

    def variants(name: str) -> set[str]:
        return {a["variant"]["name"] for a in by_flag[name]}

    assert {a["enabled"] for a in by_flag["checkout"]} == {True, False}
    assert {a["enabled"] for a in by_flag["gate"]} == {True, False}
    assert variants("checkout") == {"red", "blue", "disabled"}
    assert variants("banner") == {"wide", "narrow"}
    assert all(a["enabled"] for a in by_flag["parent"])
    assert not any(a["enabled"] for a in by_flag["dormant"] + by_flag["orphan"])
    assert not any(a["enabled"] for a in by_flag["no-such-flag"])
    for row in results:
        got = dict(zip(FLAGS, row, strict=True))
        assert got["ungated"]["enabled"] == (not got["gate"]["enabled"])
        assert got["wide-addon"]["enabled"] == (got["banner"]["variant"]["name"] == "wide")
