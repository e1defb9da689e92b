"""The official Python SDK (PyPI UnleashClient) against the service as a real process: in
polling and in streaming mode it answers is_enabled and get_variant for 50 contexts as
/api/frontend does; a change made through the admin API reaches it (next poll; within a second
when streaming); a cut stream resumes; its registration and metrics are taken."""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any

import pytest
from UnleashClient.clients.unleash_client import UnleashClient
from UnleashClient.events import BaseEvent, UnleashEventType

from tests.client.sdk.proxy import Proxy
from tests.client.sdk.support import (
    CONTEXTS,
    ENVIRONMENT,
    FLAGS,
    STREAMED_SECONDS,
    Service,
    answer,
    assert_polled,
    assert_reported,
    changes,
    propagated,
    report,
    resumed,
    wait_until,
    watched_flag,
)

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from tests.client.sdk.support import Step

pytestmark = pytest.mark.process

SDK_VERSION = "6.9.1"  # pyproject.toml pins it
READY_SECONDS = 10.0
POLL_SECONDS = 1  # the SDK's refresh interval (its least: whole seconds)
POLLED_SECONDS = POLL_SECONDS + 1.0  # the next poll, and the time it takes


class Sdk:
    """One UnleashClient with the token of `client` (support.CLIENTS), its mode in the name."""

    def __init__(
        self, service: Service, client: str, cache: Path, app_name: str, url: str | None = None
    ) -> None:
        self.client = client
        self.app_name = app_name
        self.streaming = client.endswith("-streaming")
        self.ready = threading.Event()
        self.unleash = UnleashClient(
            url=url or service.api,
            app_name=app_name,
            instance_id=f"{app_name}-1",
            environment=ENVIRONMENT,
            refresh_interval=POLL_SECONDS,
            metrics_interval=1,
            custom_headers={"Authorization": service.tokens[client]},
            cache_directory=str(cache),
            event_callback=self._event,
            experimental_mode={"type": "streaming" if self.streaming else "polling"},
            verbose_log_level=logging.DEBUG,  # an unknown flag is asked for on purpose
        )

    def _event(self, event: BaseEvent) -> None:
        if event.event_type == UnleashEventType.READY:
            self.ready.set()

    def arm(self, flag: str, step: Step) -> None:
        assert self.unleash.is_enabled(flag, step.context) is not step.enabled

    def seen(self, flag: str, step: Step) -> None:
        wait_until(
            f"{flag} {step.what}",
            lambda: self.unleash.is_enabled(flag, step.context) is step.enabled,
            step=0.001,
        )

    def start(self) -> None:
        self.unleash.initialize_client()
        assert self.ready.wait(READY_SECONDS), "the SDK had no flags within 10 s"

    def answers(self) -> list[list[dict[str, Any]]]:
        return [
            [
                answer(
                    self.unleash.is_enabled(name, context),
                    self.unleash.get_variant(name, context),
                )
                for name in FLAGS
            ]
            for context in CONTEXTS
        ]


@pytest.fixture(params=["python-polling", "python-streaming"])
def sdk(request: pytest.FixtureRequest, service: Service, tmp_path: Path) -> Iterator[Sdk]:
    test = request.node.originalname.removeprefix("test_")
    sdk = Sdk(service, request.param, tmp_path, f"{request.param}-{test}")
    try:
        yield sdk
    finally:
        sdk.unleash.destroy()


def assert_mode(service: Service, sdk: Sdk) -> None:
    """A streaming SDK never polled; a polling one did, and was told 304 when nothing moved.
    Every report the SDK posted (registration, metrics) was taken."""
    assert_polled(service, sdk.client, streaming=sdk.streaming)
    assert {s for m, _, s in service.requests(sdk.client) if m == "POST"} <= {202}


def test_answers_as_the_frontend_api(
    service: Service, frontend: list[list[dict[str, Any]]], sdk: Sdk
) -> None:
    sdk.start()
    for context, want, got in zip(CONTEXTS, frontend, sdk.answers(), strict=True):
        assert got == want, context
    time.sleep(POLL_SECONDS * 1.5)  # a poll with nothing changed
    assert_mode(service, sdk)


def test_a_change_reaches_it(service: Service, sdk: Sdk) -> None:
    """Switched on, its segment changed, archived: each reaches the SDK by its next poll, or
    within a second when it streams."""
    name = f"watch-{sdk.client}"
    steps = changes(name, watched_flag(service, name))
    sdk.start()
    took = propagated(service, sdk, name, steps)
    report(sdk.client, took)
    assert max(took.values()) < (STREAMED_SECONDS if sdk.streaming else POLLED_SECONDS), took
    assert_mode(service, sdk)


def test_registration_and_metrics_are_accepted(service: Service, sdk: Sdk) -> None:
    """Registered at start and its evaluations reported every second: the service takes both
    (202), and its reporting views show the instance and exactly what it evaluated."""
    sdk.start()
    instance = assert_reported(service, sdk.client, sdk.app_name, sdk.answers())
    assert instance["sdk_version"] == f"unleash-python-sdk:{SDK_VERSION}"
    assert instance["platform_name"] == "CPython"
    assert instance["yggdrasil_version"]


def test_a_stream_cut_resumes_where_it_left_off(service: Service, tmp_path: Path) -> None:
    """Its stream cut while the flag is switched on, then cut while nothing changes: the SDK
    reconnects each time with the Last-Event-ID of the last event it had, and is sent only
    what it missed (support.resumed)."""
    name = "resume-python-streaming"
    segment_id = watched_flag(service, name)
    with Proxy(service.server.port) as proxy:
        sdk = Sdk(service, "python-streaming", tmp_path, name, url=f"{proxy.url}/api")
        try:
            sdk.start()
            resumed(service, proxy, sdk, name, segment_id)
        finally:
            stop_streaming(sdk)


def stop_streaming(sdk: Sdk) -> None:
    """destroy(), and the end of the SDK's stream thread, while the proxy still relays: after a
    reconnect, launchdarkly-eventsource (1.7.4) takes the stream closed by destroy() for one
    that ended, sleeps its retry delay and connects once more before it sees the stop (so
    destroy() may return, after its 5 s join, before the thread ends)."""
    sdk.unleash.destroy()
    wait_until(
        "the SDK's stream thread ended",
        lambda: not any(t.name == "UnleashStreaming" for t in threading.enumerate()),
        timeout=20,
    )
