"""The official Node SDK (npm unleash-client, its own evaluation in JavaScript) against the
service as a real process, run with the machine's node by tests/client/sdk/node/evaluate.js: in
polling and in streaming mode it answers isEnabled and getVariant for 50 contexts as
/api/frontend does; a change made through the admin API reaches it (next poll; within a second
when streaming); a cut stream resumes; its registration and metrics are taken."""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

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
    watched_flag,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tests.client.sdk.support import Step

pytestmark = pytest.mark.process

PACKAGE = Path(__file__).resolve().parent / "node"
SDK_VERSION = "6.12.1"  # package.json pins it; package-lock.json pins the rest
REPLY_SECONDS = 20.0  # the script's own waits are 15 s
POLL_MS = 1000
POLLED_SECONDS = POLL_MS / 1000 + 1.0


@pytest.fixture(scope="module")
def node_package() -> Path:
    """tests/client/sdk/node with its node_modules, installed from the lock file when absent."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.fail("the Node SDK tests need node (>= 20) and npm on the PATH")
    installed = PACKAGE / "node_modules" / "unleash-client" / "package.json"
    if not installed.exists() or json.loads(installed.read_text())["version"] != SDK_VERSION:
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=PACKAGE,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr
    return PACKAGE


class NodeSdk:
    """evaluate.js in a process of its own, spoken to in JSON lines."""

    def __init__(
        self,
        package: Path,
        service: Service,
        client: str,
        app_name: str,
        url: str | None = None,
    ) -> None:
        self.client = client
        self.app_name = app_name
        self.streaming = client.endswith("-streaming")
        self.proc = subprocess.Popen(
            ["node", str(package / "evaluate.js")],
            cwd=package,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain, daemon=True).start()
        self.send(
            {
                "url": url or f"{service.api}/",
                "token": service.tokens[client],
                "appName": app_name,
                "instanceId": f"{app_name}-1",
                "environment": ENVIRONMENT,
                "mode": "streaming" if self.streaming else "polling",
                "refreshMs": POLL_MS,
                "metricsMs": 1000,
                "flags": FLAGS,
                "contexts": CONTEXTS,
            }
        )

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        self.stderr.extend(self.proc.stderr)

    def send(self, message: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def expect(self, event: str) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=REPLY_SECONDS)
        except queue.Empty:
            pytest.fail(f"no {event} from evaluate.js within {REPLY_SECONDS} s: {self.stderr}")
        message: dict[str, Any] = json.loads(line)
        assert message["event"] == event, (message, self.stderr)
        return message

    def start(self) -> None:
        synchronized = self.expect("synchronized")
        assert synchronized["mode"] == ("streaming" if self.streaming else "polling")

    def arm(self, flag: str, step: Step) -> None:
        self.send({"wait": {"flag": flag, "context": step.context, "enabled": step.enabled}})
        assert self.expect("waiting")["enabled"] is not step.enabled

    def seen(self, flag: str, step: Step) -> None:
        self.expect("seen")

    def answers(self) -> list[list[dict[str, Any]]]:
        self.send({"evaluate": True})
        results = self.expect("evaluated")["results"]
        return [[answer(a["enabled"], a["variant"]) for a in row] for row in results]

    def finish(self, *, metrics: bool = False) -> dict[str, Any]:
        """What the SDK saw of the service (once it sent its metrics, with `metrics`)."""
        self.send({"finish": {"metrics": metrics}})
        done = self.expect("done")
        assert self.proc.wait(timeout=10) == 0
        return done

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()


@pytest.fixture(params=["node-polling", "node-streaming"])
def sdk(request: pytest.FixtureRequest, service: Service, node_package: Path) -> Iterator[NodeSdk]:
    test = request.node.originalname.removeprefix("test_")
    sdk = NodeSdk(node_package, service, request.param, f"{request.param}-{test}")
    try:
        yield sdk
    finally:
        sdk.stop()


def assert_mode(service: Service, sdk: NodeSdk, done: dict[str, Any]) -> None:
    """A streaming SDK never polled (nor fell back to polling); a polling one did, and was
    told 304 when nothing moved. No SDK saw an error or a warning."""
    assert done["mode"] == ("streaming" if sdk.streaming else "polling"), done
    assert (done["errors"], done["warnings"]) == ([], []), done
    assert_polled(service, sdk.client, streaming=sdk.streaming)


def test_answers_as_the_frontend_api(
    service: Service, frontend: list[list[dict[str, Any]]], sdk: NodeSdk
) -> None:
    sdk.start()
    for context, want, got in zip(CONTEXTS, frontend, sdk.answers(), strict=True):
        assert got == want, context
    time.sleep(POLL_MS / 1000 * 1.5)  # a poll with nothing changed
    assert_mode(service, sdk, sdk.finish())


def test_a_change_reaches_it(service: Service, sdk: NodeSdk) -> None:
    """Switched on, its segment changed, archived: each reaches the SDK by its next poll, or
    within a second when it streams."""
    name = f"watch-{sdk.client}"
    steps = changes(name, watched_flag(service, name))
    sdk.start()
    took = propagated(service, sdk, name, steps)
    report(sdk.client, took)
    assert max(took.values()) < (STREAMED_SECONDS if sdk.streaming else POLLED_SECONDS), took
    assert_mode(service, sdk, sdk.finish())


def test_registration_and_metrics_are_accepted(service: Service, sdk: NodeSdk) -> None:
    """Registered at start and its evaluations reported every second: the service takes both
    (202), and its reporting views show the instance and exactly what it evaluated."""
    sdk.start()
    results = sdk.answers()
    done = sdk.finish(metrics=True)
    assert done["registered"] == 1, done
    assert done["warnings"] == [], done
    instance = assert_reported(service, sdk.client, sdk.app_name, results)
    assert instance["sdk_version"] == f"unleash-node-sdk:{SDK_VERSION}"
    assert instance["platform_name"] == "node"


def test_a_stream_cut_resumes_where_it_left_off(service: Service, node_package: Path) -> None:
    """Its stream cut while the flag is switched on, then cut while nothing changes: the SDK
    reconnects each time with the Last-Event-ID of the last event it had, and is sent only
    what it missed (support.resumed); it stays in streaming mode, with no warning."""
    name = "resume-node-streaming"
    segment_id = watched_flag(service, name)
    with Proxy(service.server.port) as proxy:
        sdk = NodeSdk(node_package, service, "node-streaming", name, url=f"{proxy.url}/api/")
        try:
            sdk.start()
            resumed(service, proxy, sdk, name, segment_id)
            assert_mode(service, sdk, sdk.finish())
        finally:
            sdk.stop()
