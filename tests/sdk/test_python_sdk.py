"""The official Python SDK (PyPI UnleashClient) against the service as a real process: it
answers as Unleash's engine reads the service's flags, in polling and in streaming mode; a
change made through the admin API reaches it (next poll; within a second when streaming)."""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any

import pytest
from UnleashClient.clients.unleash_client import UnleashClient
from UnleashClient.events import BaseEvent, UnleashEventType

from tests.sdk.support import (
    CONTEXTS,
    ENVIRONMENT,
    FLAGS,
    Service,
    admin_ok,
    answer,
    assert_meaningful,
    changes,
    client_features,
    engine_answers,
    report,
    wait_until,
    watched_flag,
)

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.process

READY_SECONDS = 10.0
POLL_SECONDS = 1  # the SDK's refresh interval (its least: whole seconds)
STREAMED_SECONDS = 1.0  # what the issue asks of streaming
POLLED_SECONDS = POLL_SECONDS + 1.0  # the next poll, and the time it takes


class Sdk:
    """One UnleashClient with the token of `client` (support.CLIENTS), its mode in the name."""

    def __init__(self, service: Service, client: str, cache: Path, app_name: str) -> None:
        self.client = client
        self.streaming = client.endswith("-streaming")
        self.ready = threading.Event()
        self.unleash = UnleashClient(
            url=service.api,
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
    """A streaming SDK never polled; a polling one did, and was told 304 when nothing moved."""
    reads = {
        route for _, route, _ in service.requests(sdk.client) if route.startswith("/api/client/f")
    }
    if sdk.streaming:
        assert reads == set()
    else:
        statuses = {s for _, route, s in service.requests(sdk.client) if route in reads}
        assert reads == {"/api/client/features"}
        assert statuses == {200, 304}


def test_answers_as_the_engine_reads_the_service(service: Service, sdk: Sdk) -> None:
    sdk.start()
    expected = engine_answers(client_features(service))
    assert_meaningful(expected)
    for context, want, got in zip(CONTEXTS, expected, sdk.answers(), strict=True):
        assert got == want, context
    time.sleep(POLL_SECONDS * 1.5)  # a poll with nothing changed
    assert_mode(service, sdk)


def test_a_change_reaches_it(service: Service, sdk: Sdk) -> None:
    """Switched on, its segment changed, archived: each reaches the SDK by its next poll, or
    within a second when it streams."""
    name = f"watch-{sdk.client}"
    steps = changes(name, watched_flag(service, name))
    sdk.start()
    bound = STREAMED_SECONDS if sdk.streaming else POLLED_SECONDS
    took: dict[str, float] = {}
    for step in steps:
        assert sdk.unleash.is_enabled(name, step.context) is not step.enabled
        admin_ok(service, step.method, step.path, step.body)
        started = time.monotonic()
        wait_until(
            f"{step.what}: {step.enabled}",
            lambda s=step: sdk.unleash.is_enabled(name, s.context) is s.enabled,
            step=0.001,
        )
        took[step.what] = time.monotonic() - started
    report(sdk.client, took)
    assert max(took.values()) < bound, took
    assert_mode(service, sdk)
