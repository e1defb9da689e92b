"""Delivery from the log, in one process: a real receiver on loopback, the service's own
background delivery, and what the integration's events list says."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

from eventlog import connections
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
        "parameters": {"url": url},
        "events": ["feature-created", "feature-archived"],
    } | overrides
    made: dict[str, Any] = await ok(await client.post(ADDONS, json=body, headers=ADMIN), 201)
    return made


async def flags(client: Client, *names: str) -> None:
    for name in names:
        await ok(await client.post(FEATURES, json={"name": name}, headers=ADMIN))


async def deliveries(client: Client, addon_id: int, count: int) -> list[dict[str, Any]]:
    """The integration's events list once it has `count` rows (deliveries are recorded once
    answered, in batches)."""
    async with asyncio.timeout(20):
        while True:
            listed = await ok(await client.get(f"{ADDONS}/{addon_id}/events", headers=ADMIN))
            shown: list[dict[str, Any]] = listed["integrationEvents"]
            if len(shown) >= count:
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
    await integrate(client, url)
    person = {"email": "ada@example.com", "name": "Ada Lovelace", "username": "adalove77"}
    user = await create_user(client, {**person, "password": STRONG, "rootRole": 1})
    _resp, cookie = await sign_in(client, "adalove77")
    made = await client.post(
        FEATURES, json={"name": "erasure-probe"}, headers={"Cookie": f"unleash-session={cookie}"}
    )
    assert made.status == 200
    await hooked_wait_attempt(hooked)
    assert (await client.delete(f"/api/admin/user-admin/{user['id']}", headers=ADMIN)).status == 200
    hooked.answer = lambda _a: (200, {})
    (arrival,) = await hooked.wait_for(1)
    assert arrival.json()["createdBy"] == "[erased]"
    body = arrival.body.decode()
    for value in person.values():
        assert value not in body
    assert all(
        value not in a.body.decode() for a in hooked.arrivals[1:] for value in person.values()
    )


async def test_a_stop_sends_nothing_more_and_records_every_answer(
    client: Client, dsn: str, aiohttp_server: Any
) -> None:
    """A graceful stop in the middle of a page of events: the next event is not sent, and each
    answered one is recorded (a delivery cut off by the stop's 1 s would be sent again after
    the restart). Each answer takes 20 ms, so the page's rest takes longer than that second."""
    hooked = Receiver(answer=lambda _a: (503, {}), delay=0.02)
    server = await aiohttp_server(hooked.app())
    made = await integrate(client, f"http://127.0.0.1:{server.port}/hook")
    await flags(client, *(f"waiting-{n}" for n in range(100)))
    hooked.answer = lambda _a: (200, {})
    await hooked.wait_for(20)
    before = len(hooked.arrivals)
    await client.close()
    after = len(hooked.arrivals)
    sent = [a.event_id for a in hooked.delivered]
    conn = await connections.connect(dsn)
    try:
        checkpoint = await conn.fetchval(
            "SELECT position FROM addon_checkpoints WHERE addon_id = $1", made["id"]
        )
    finally:
        await conn.close()
    assert len(sent) < 100  # stopped mid-page
    assert after - before <= 10  # the one in flight, those while the app closes: not 1 s's
    assert checkpoint == max(sent)


async def hooked_wait_attempt(hooked: Receiver) -> None:
    while not hooked.arrivals:
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
    shown = await deliveries(service, made["id"], 2)
    assert shown[0]["state"] == "success"
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
