"""Delivery from the log, in one process: a real receiver on loopback, the service's own
background delivery, and what the integration's events list says."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

from eventlog.events.base import SYSTEM
from eventlog.events.features import FeatureCreated
from service.addons import delivery
from service.app import create_app
from service.appkeys import POOL, WORK
from tests import conformance
from tests.addons.receiver import Arrival, Receiver
from tests.conftest import ServiceTestServer, resolve_with_test_principals
from tests.factories import (
    ADMIN,
    STRONG,
    create_user,
    ok,
    seed_database,
    settings_for,
    sign_in,
)

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    from service.settings import Settings

    Client = TestClient[Any, Any]

ADDONS = "/api/admin/addons"
FEATURES = "/api/admin/projects/default/features"


@pytest.fixture
async def receiver(aiohttp_server: Any) -> tuple[Receiver, str]:
    hooked = Receiver()
    server = await aiohttp_server(hooked.app())
    return hooked, f"http://127.0.0.1:{server.port}/hook"


async def integrate(client: Client, url: str, **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "provider": "webhook",
        "enabled": True,
        "parameters": {"url": url},
        "events": ["feature-created", "feature-archived"],
    } | overrides
    made: dict[str, Any] = await ok(await client.post(ADDONS, json=body, headers=ADMIN), 201)
    return made


async def flags(client: Client, *names: str) -> None:
    for name in names:
        await ok(await client.post(FEATURES, json={"name": name}, headers=ADMIN))


async def deliveries(
    client: Client, addon_id: int, count: int, newest: str | None = None
) -> list[dict[str, Any]]:
    """The integration's events list once it has `count` rows, the newest in state `newest`
    when given (deliveries are recorded once answered, in batches of up to 250 ms)."""
    async with asyncio.timeout(20):
        while True:
            listed = await ok(await client.get(f"{ADDONS}/{addon_id}/events", headers=ADMIN))
            shown: list[dict[str, Any]] = listed["integrationEvents"]
            if len(shown) >= count and (newest is None or shown[0]["state"] == newest):
                return shown
            await asyncio.sleep(0.05)


def names(arrivals: list[Arrival]) -> list[str]:
    return [a.json()["featureName"] for a in arrivals]


async def test_each_event_arrives_once_in_order_signed_and_listed(
    client: Client, receiver: tuple[Receiver, str]
) -> None:
    hooked, url = receiver
    made = await integrate(client, url)
    await flags(client, "one", "two", "three")
    arrived = await hooked.wait_for(3)
    assert names(arrived) == ["one", "two", "three"]
    ids = [a.event_id for a in arrived]
    assert ids == sorted(ids)
    assert len(set(ids)) == 3
    secret = made["parameters"]["signingSecret"]
    assert all(a.signed_by(secret) for a in arrived)
    assert not arrived[0].signed_by("another secret")
    first = arrived[0]
    assert first.headers["Content-Type"] == "application/json"
    assert first.json()["type"] == "feature-created"
    assert first.json()["id"] == first.event_id  # the event log's id: its position
    shown = await deliveries(client, made["id"], 3)
    assert [d["state"] for d in shown] == ["success"] * 3
    assert [d["event"]["featureName"] for d in shown] == ["three", "two", "one"]  # newest first
    assert shown[0]["integrationId"] == made["id"]
    assert shown[0]["details"]["eventId"] == ids[-1]
    assert "status code: 200" in shown[0]["stateDetails"]
    # The webhook's URL is a secret: what is kept of the request masks it.
    assert shown[0]["details"]["url"] == "*****"
    assert url not in str(shown)
    # Deleting the integration deletes what delivery kept of it.
    await ok(await client.delete(f"{ADDONS}/{made['id']}", headers=ADMIN))
    assert await deliveries(client, made["id"], 0) == []


async def test_events_before_the_integration_and_of_other_types_are_not_sent(
    client: Client, receiver: tuple[Receiver, str]
) -> None:
    hooked, url = receiver
    await flags(client, "before")
    await integrate(client, url, events=["feature-archived"])
    await flags(client, "after")
    await ok(await client.delete(f"{FEATURES}/after", headers=ADMIN), 202)
    arrived = await hooked.wait_for(1)
    assert [a.json()["type"] for a in arrived] == ["feature-archived"]
    assert names(arrived) == ["after"]


async def test_failures_are_retried_in_order_until_the_receiver_answers(
    client: Client, receiver: tuple[Receiver, str]
) -> None:
    hooked, url = receiver
    failures = {"left": 3}

    def flaky(_arrival: Arrival) -> tuple[int, dict[str, str]]:
        if failures["left"] > 0:
            failures["left"] -= 1
            return 503, {"Retry-After": "1"}
        return 200, {}

    hooked.answer = flaky
    made = await integrate(client, url)
    await flags(client, "a", "b")
    arrived = await hooked.wait_for(2)
    assert names(arrived) == ["a", "b"]
    attempts = [a.event_id for a in hooked.arrivals]
    assert attempts == [arrived[0].event_id] * 4 + [arrived[1].event_id]  # one key per event
    assert hooked.arrivals[3].headers["Flagstore-Delivery-Attempt"] == "4"
    states = [d["state"] for d in reversed(await deliveries(client, made["id"], 5))]
    assert states == ["failed", "failed", "failed", "success", "success"]


async def test_a_client_error_is_recorded_and_not_retried(
    client: Client, receiver: tuple[Receiver, str]
) -> None:
    hooked, url = receiver
    hooked.answer = lambda a: (400, {}) if a.json()["featureName"] == "bad" else (200, {})
    made = await integrate(client, url)
    await flags(client, "bad", "good")
    arrived = await hooked.wait_for(1)
    assert names(arrived) == ["good"]
    assert [a.json()["featureName"] for a in hooked.arrivals] == ["bad", "good"]
    shown = await deliveries(client, made["id"], 2)
    assert [d["state"] for d in shown] == ["success", "failed"]
    assert "status code: 400" in shown[1]["stateDetails"]


async def test_a_change_that_rolled_back_is_never_delivered(
    client: Client, app: web.Application, receiver: tuple[Receiver, str]
) -> None:
    hooked, url = receiver
    await integrate(client, url)

    class Abandoned(Exception):
        pass

    async def abandoned() -> None:
        async with app[WORK].on(app[POOL]) as uow:
            event = FeatureCreated(
                name="rolled-back",
                project="default",
                description=None,
                feature_type="release",
                impression_data=False,
                created_at=datetime.now(UTC),
            )
            await uow.append(("feature", "rolled-back"), [event], SYSTEM, new=True)
            raise Abandoned

    with pytest.raises(Abandoned):
        await abandoned()
    await flags(client, "committed")
    arrived = await hooked.wait_for(1)
    assert names(arrived) == ["committed"]


async def test_a_disabled_integration_skips_what_happens_meanwhile(
    client: Client, receiver: tuple[Receiver, str]
) -> None:
    hooked, url = receiver
    made = await integrate(client, url)
    body = {
        "provider": "webhook",
        "enabled": True,
        "parameters": {"url": "*****"},
        "events": ["feature-created", "feature-archived"],
    }
    path = f"{ADDONS}/{made['id']}"
    await ok(await client.put(path, json=body | {"enabled": False}, headers=ADMIN))
    await flags(client, "while-off")
    await ok(await client.put(path, json=body | {"enabled": True}, headers=ADMIN))
    await flags(client, "back-on")
    arrived = await hooked.wait_for(1)
    assert names(arrived) == ["back-on"]


async def test_an_erased_persons_data_is_never_delivered(
    client: Client, receiver: tuple[Receiver, str]
) -> None:
    hooked, url = receiver
    hooked.answer = lambda _a: (503, {})
    made_addon = await integrate(client, url)
    person = {"email": "ada@example.com", "name": "Ada Lovelace", "username": "adalove77"}
    user = await create_user(client, {**person, "password": STRONG, "rootRole": 1})
    _resp, cookie = await sign_in(client, "adalove77")
    made = await client.post(
        FEATURES, json={"name": "erasure-probe"}, headers={"Cookie": f"unleash-session={cookie}"}
    )
    assert made.status == 200
    await hooked_wait_attempt(hooked)
    assert (await client.delete(f"/api/admin/user-admin/{user['id']}", headers=ADMIN)).status == 200
    # The attempt under way may have read the event before the erasure; the one after it read
    # it after (each attempt reads the log anew, once the one before was answered).
    erased_at = len(hooked.arrivals)
    await hooked_wait_attempt(hooked, erased_at + 2)
    before = erased_at + 1
    hooked.answer = lambda _a: (200, {})
    (arrival,) = await hooked.wait_for(1)
    assert arrival.json()["createdBy"] == "[erased]"
    for attempt in hooked.arrivals[before:]:
        for value in person.values():
            assert value not in attempt.body.decode()
    # Nor does what delivery kept of its attempts, the earlier ones included: their event is
    # read from the log when shown.
    shown = await deliveries(client, made_addon["id"], before + 1)
    assert {d["event"]["createdBy"] for d in shown} == {"[erased]"}
    for value in person.values():
        assert value not in str(shown)


async def hooked_wait_attempt(hooked: Receiver, count: int = 1) -> None:
    """Until `count` requests have arrived, answered as they were."""
    async with asyncio.timeout(20):
        while len(hooked.arrivals) < count:
            hooked.arrived.clear()
            await hooked.arrived.wait()


async def test_a_receiver_that_never_recovers_is_given_up_and_the_next_event_goes(
    dsn: str, aiohttp_client: Any, aiohttp_server: Any
) -> None:
    """(The database is asked for first, so that it outlives the service made here.)"""
    quick: Settings = settings_for(
        dsn,
        integration_allowed_networks="127.0.0.0/8",
        integration_time_scale=1000.0,
        integration_give_up_hours=0.05,  # 180 s of the delivery's clock: 0.18 s here
    )
    hooked = Receiver(answer=lambda a: (500, {}) if a.json()["featureName"] == "x" else (200, {}))
    server = await aiohttp_server(hooked.app())
    await seed_database(dsn)
    app = create_app(quick, dsn, resolver=resolve_with_test_principals)
    conformance.install(app)
    service = await aiohttp_client(ServiceTestServer(app))
    made = await integrate(service, f"http://127.0.0.1:{server.port}/hook")
    await flags(service, "x", "y")
    arrived = await hooked.wait_for(1)
    assert names(arrived) == ["y"]
    shown = await deliveries(service, made["id"], 2, newest="success")
    assert shown[0]["event"]["featureName"] == "y"
    assert "Given up after" in shown[1]["stateDetails"]


def test_the_backoff_grows_capped_and_jittered() -> None:
    timing = delivery.Timing(
        give_up_seconds=3600, retry_max_seconds=60, request_timeout_seconds=5, scale=1
    )
    for attempts, ceiling in [(1, 1), (2, 2), (3, 4), (7, 60), (40, 60)]:
        delays = {timing.backoff(attempts) for _ in range(50)}
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(delays) > 1


@pytest.mark.parametrize(
    ("status", "state", "retry"),
    [
        (200, "success", False),
        (204, "success", False),
        (302, "failed", False),
        (400, "failed", False),
        (404, "failed", False),
        (408, "failed", True),
        (429, "failed", True),
        (500, "failed", True),
        (503, "failed", True),
    ],
)
def test_what_an_answer_means(status: int, state: str, retry: bool) -> None:
    outcome = delivery.judge(status, "", "7", [])
    assert (outcome.state, outcome.retry) == (state, retry)
    if retry:
        assert outcome.retry_after == 7.0


def test_warnings_make_a_success_with_errors() -> None:
    outcome = delivery.judge(200, "", None, ["Could not parse the JSON in the customHeaders."])
    assert outcome.state == "successWithErrors"
    assert "customHeaders" in outcome.details


async def test_a_template_that_never_ends_sends_the_default_body_and_the_api_goes_on(
    client: Client, receiver: tuple[Receiver, str]
) -> None:
    """Five sections deep over a strategy's 100 constraint values is 10^10 renderings: the
    worker that renders it is stopped after its time, and the event goes with its JSON."""
    hooked, url = receiver
    bomb = "{{#event.data.constraints}}" + "{{#values}}" * 5 + "x" + "{{/values}}" * 5
    bomb += "{{/event.data.constraints}}"
    params = {"url": url, "bodyTemplate": bomb}
    made = await integrate(client, url, parameters=params, events=["feature-strategy-add"])
    await flags(client, "bombed")
    strategy = {
        "name": "flexibleRollout",
        "constraints": [
            {"contextName": "userId", "operator": "IN", "values": [str(i) for i in range(100)]}
        ],
        "parameters": {"rollout": "50", "stickiness": "default", "groupId": "bombed"},
    }
    path = f"{FEATURES}/bombed/environments/development/strategies"
    await ok(await client.post(path, json=strategy, headers=ADMIN))
    # The API answers meanwhile.
    async with asyncio.timeout(1.0):
        await ok(await client.get("/health"))
    (arrival,) = await hooked.wait_for(1)
    assert arrival.json()["type"] == "feature-strategy-add"
    (shown,) = await deliveries(client, made["id"], 1)
    assert shown["state"] == "successWithErrors"
    assert "did not render within" in shown["stateDetails"]


async def test_integrations_at_one_checkpoint_share_one_read_of_the_log(
    client: Client, app: web.Application, receiver: tuple[Receiver, str]
) -> None:
    """Three couriers asking for the same page at once get one read's answer; one asking for
    another position gets its own."""
    _hooked, url = receiver
    await integrate(client, url)
    await flags(client, "shared-1", "shared-2")
    pages = delivery._Pages(app[POOL])
    kinds = ["feature-created", "feature-archived"]
    first, second, third = await asyncio.gather(
        pages.read(0, kinds), pages.read(0, list(reversed(kinds))), pages.read(0, kinds)
    )
    assert first is second is third
    made = [e.recorded.event for e in first.entries]
    assert [e.name for e in made if isinstance(e, FeatureCreated)][-2:] == ["shared-1", "shared-2"]
    assert first.addons_at > 0
    later = await pages.read(first.entries[-1].recorded.position or 0, kinds)
    assert later is not first
    assert later.entries == []
    assert pages.reading == {}
