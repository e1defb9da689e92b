"""The browser journeys' fixtures: the target (BROWSER_TARGET=ours, the default: the service
started here serving the UI; or reference: ../shared/reference/setup.sh's Unleash at :4242),
one Chromium for the session, a user signed in once, and for each journey a fresh browser
context (no localStorage: the flag table keeps its filters there) with its watch."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from service.ui import DEFAULT_DIR
from tests.browser.ui import GAP, OUTSIDE_HOSTS, STEP_TIMEOUT_MS, Api, Journey, Target, Watch
from tests.factories import ADMIN_TOKEN, STRONG
from tests.harness import Harness, wait_ready

if TYPE_CHECKING:
    from collections.abc import Iterator

    from playwright.sync_api import Browser, Playwright

    from tests.pg import PgServer

CHROMIUM = os.environ.get("CHROMIUM", "chromium")
REFERENCE_URL = os.environ.get("BROWSER_REFERENCE_URL", "http://127.0.0.1:4242")
REFERENCE_TOKEN = "*:*.unleash-insecure-admin-api-token"  # ../shared/reference/setup.sh's
USERNAME = "admin"
VIEWPORT = {"width": 1400, "height": 1000}
OUTSIDE = re.compile("|".join(rf"^https?://{re.escape(host)}/" for host in OUTSIDE_HOSTS))


def _index(url: str) -> str:
    with urllib.request.urlopen(f"{url}/", timeout=10) as resp:
        return str(resp.read().decode())


def _ours(pg18: PgServer) -> Iterator[Target]:
    harness = Harness()
    dsn = asyncio.run(pg18.new_database())
    try:
        server = harness.start(
            harness.new_dir(),
            DATABASE_URL=dsn,
            INIT_ADMIN_API_TOKENS=ADMIN_TOKEN,
            # The UI `make install` fetched (the service's default folder), or another.
            UI_DIR=os.environ.get("UI_DIR", str(DEFAULT_DIR)),
            # The integrations journey's webhook receiver listens on this machine.
            INTEGRATION_ALLOWED_NETWORKS="127.0.0.0/8",
        )
        asyncio.run(wait_ready(server))
        target = Target("ours", server.url, USERNAME, STRONG, ADMIN_TOKEN)
        api = Api(target)
        api.ok(
            "POST",
            "/api/admin/user-admin",
            {"username": USERNAME, "password": STRONG, "rootRole": 1},
        )
        assert 'id="app"' in _index(server.url), (
            "the service does not serve Unleash's UI at / (make install fetches it)"
        )
        yield target
    finally:
        harness.cleanup()
        asyncio.run(pg18.drop_database(dsn))


@pytest.fixture(scope="session")
def target(request: pytest.FixtureRequest) -> Iterator[Target]:
    which = os.environ.get("BROWSER_TARGET", "ours")
    if which == "reference":
        # Never skipped: a reference that is not running fails the run (setup.sh starts it).
        assert 'id="app"' in _index(REFERENCE_URL), f"no Unleash UI at {REFERENCE_URL}"
        yield Target("reference", REFERENCE_URL, USERNAME, "unleash4all", REFERENCE_TOKEN)
        return
    assert which == "ours", f"BROWSER_TARGET is ours or reference, not {which!r}"
    yield from _ours(request.getfixturevalue("pg18"))


@pytest.fixture(scope="module")
def playwright(target: Target) -> Iterator[Playwright]:
    """After the target: the sync API runs its event loop in this thread while it is open, and
    the target's set-up calls asyncio.run (which a running loop forbids). Per module: it stops
    before the async tests of the other modules (test_page.py) need the thread's loop."""
    # Imported here: `make test` collects this folder too (and deselects it), without the
    # browser extra installed.
    from playwright.sync_api import sync_playwright  # noqa: PLC0415

    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="module")
def chromium(playwright: Playwright) -> Iterator[Browser]:
    executable = shutil.which(CHROMIUM)
    assert executable is not None, "Chromium is needed: apt-get install chromium"
    browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
    yield browser
    browser.close()


@pytest.fixture(scope="module")
def signed_in(chromium: Browser, target: Target) -> dict[str, Any]:
    """The browser state of one sign-in (its session cookie), shared by the journeys: each
    sign-in counts against the limits, and Unleash keeps few sessions per user."""
    context = chromium.new_context()
    try:
        answer = context.request.post(
            f"{target.url}/auth/simple/login",
            data={"username": target.username, "password": target.password},
        )
        assert answer.status == 200, answer.text()
        state: dict[str, Any] = dict(context.storage_state())
        return state
    finally:
        context.close()


def _cookie(state: dict[str, Any], target: Target) -> str:
    host = target.host.split(":")[0]
    return "; ".join(f"{c['name']}={c['value']}" for c in state["cookies"] if c["domain"] == host)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A journey marked gap_on_ours is a strict expected failure on ours (never skipped)."""
    if os.environ.get("BROWSER_TARGET", "ours") == "reference":
        return
    for item in items:
        reason = getattr(getattr(item, "function", None), GAP, None)
        if reason is not None:
            item.add_marker(pytest.mark.xfail(reason=f"ours: {reason}", strict=True))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.stash[FAILED] = report.failed
    return report


FAILED = pytest.StashKey[bool]()


def _journey(
    request: pytest.FixtureRequest, browser: Browser, target: Target, state: dict[str, Any] | None
) -> Iterator[Journey]:
    context = browser.new_context(storage_state=state, viewport=VIEWPORT)  # type: ignore[arg-type, unused-ignore]
    context.set_default_timeout(STEP_TIMEOUT_MS)
    # No internet here: the outside hosts fail at once rather than after a DNS timeout.
    context.route(OUTSIDE, lambda route: route.abort("namenotresolved"))
    page = context.new_page()
    watch = Watch(target.host)
    watch.attach(page)
    session = Api(target, _cookie(state, target)) if state else Api(target)
    try:
        yield Journey(target, page, watch, Api(target), session)
    finally:
        # A failed journey leaves its last screen (and what its watch saw) behind.
        if request.node.stash.get(FAILED, False) and (folder := os.environ.get("BROWSER_FAILURES")):
            base = Path(folder) / request.node.name
            base.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(Exception):  # a screenshot that fails changes nothing
                text = page.inner_text("body", timeout=5000)
                base.with_suffix(".txt").write_text(f"{page.url}\n{watch}\n\n{text}")
                page.screenshot(path=base.with_suffix(".png"), timeout=5000)
        context.close()


@pytest.fixture
def journey(
    request: pytest.FixtureRequest, chromium: Browser, target: Target, signed_in: dict[str, Any]
) -> Iterator[Journey]:
    yield from _journey(request, chromium, target, signed_in)


@pytest.fixture
def fresh(request: pytest.FixtureRequest, chromium: Browser, target: Target) -> Iterator[Journey]:
    """A journey that starts signed out (the sign-in journey)."""
    yield from _journey(request, chromium, target, None)
