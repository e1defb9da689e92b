"""What the journeys through Unleash's UI share: the target they run against (ours or the
reference), the admin API beside the browser, and the watch on every page that fails a journey
on an answer >= 400 it did not provoke, or on a console error our answers cause.

The selectors are the roles, labels and texts the UI shows: ours and the reference serve the
same build (unleash-server@6.10.1's frontend/build), so they hold on both.
"""

from __future__ import annotations

import json
import os
import re
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote, urlsplit

if TYPE_CHECKING:
    from collections.abc import Callable

    from playwright.sync_api import ConsoleMessage, Locator, Page, Request, Response

T = TypeVar("T")
PROJECT = "default"  # the open-source edition has this one project (no "New project")
# One step's limit: the UI keeps Chromium's main thread busy for seconds at a time on a loaded
# machine (2 cores shared with the service); BROWSER_STEP_TIMEOUT_MS raises it.
STEP_TIMEOUT_MS = int(os.environ.get("BROWSER_STEP_TIMEOUT_MS", "30000"))

# Hosts the UI calls that are not the target: index.html's stylesheets (Google Fonts) and the
# avatars (gravatar.com, the users' imageUrl). There is no internet here, so each fails with
# net::ERR_NAME_NOT_RESOLVED and Chromium logs "Failed to load resource"; that is neither our
# answer nor caused by one, so the watch leaves out every request to another host and every
# console message about one.
OUTSIDE_HOSTS = ("fonts.googleapis.com", "fonts.gstatic.com", "gravatar.com")


@dataclass(frozen=True)
class Allowed:
    """An answer >= 400 a journey provokes on purpose (method, path pattern, status)."""

    method: str
    path: str  # a regular expression matched against the whole path, query included
    status: int

    def matches(self, method: str, path: str, status: int) -> bool:
        return (
            method == self.method and status == self.status and re.fullmatch(self.path, path)
        ) is not None


# The UI's own quirk, on both targets: the global archive page (/archive) asks for the
# overview of the project "undefined", and the reference answers it 404 too.
UI_QUIRKS = (Allowed("GET", r"/api/admin/projects/undefined/overview", 404),)


@dataclass(frozen=True)
class Target:
    """Where the journeys run: a base URL serving the UI, a user who signs in through its form,
    and an admin API token for the checks."""

    name: str  # "ours" or "reference"
    url: str
    username: str
    password: str
    token: str

    @property
    def host(self) -> str:
        return urlsplit(self.url).netloc


GAP = "ours_gap"  # the attribute gap_on_ours sets on a journey


def gap_on_ours(reason: str) -> Callable[[T], T]:
    """A journey the reference passes and ours cannot yet, with what ours lacks: on ours it is
    an expected failure, strictly (the day it passes, it fails until the mark goes)."""

    def mark(test: T) -> T:
        setattr(test, GAP, reason)
        return test

    return mark


def unique(prefix: str = "br") -> str:
    """A name no other run (nor another helper on the shared reference) uses."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


class Api:
    """The admin API, outside the browser: with the target's admin token, or with a signed-in
    user's session cookie (favourites and creators are the user's)."""

    def __init__(self, target: Target, cookie: str | None = None) -> None:
        self.target = target
        self.headers = {"Cookie": cookie} if cookie else {"Authorization": target.token}

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"{self.target.url}{path}", data=data, method=method, headers=dict(self.headers)
        )
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=20) as resp:
                raw = resp.read()
                return resp.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as error:
            raw = error.read()
            return error.code, json.loads(raw) if raw else None

    def ok(self, method: str, path: str, body: Any = None) -> Any:
        status, answer = self.call(method, path, body)
        assert status in (200, 201, 202, 204), (method, path, status, answer)
        return answer

    # --- the calls the journeys prepare and check with --------------------------------------

    def flag(self, name: str, **fields: Any) -> dict[str, Any]:
        created: dict[str, Any] = self.ok(
            "POST", f"/api/admin/projects/{PROJECT}/features", {"name": name, **fields}
        )
        return created

    def feature(self, name: str) -> dict[str, Any]:
        found: dict[str, Any] = self.ok("GET", f"/api/admin/projects/{PROJECT}/features/{name}")
        return found

    def environment(self, name: str, environment: str) -> dict[str, Any]:
        flag = self.ok(
            "GET", f"/api/admin/projects/{PROJECT}/features/{name}?variantEnvironments=true"
        )
        (found,) = [e for e in flag["environments"] if e["name"] == environment]
        return dict(found)

    def strategies(self, name: str, environment: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.ok(
            "GET",
            f"/api/admin/projects/{PROJECT}/features/{name}/environments/{environment}/strategies",
        )
        return found

    def segment(self, name: str, constraints: list[dict[str, Any]]) -> int:
        made = self.ok("POST", "/api/admin/segments", {"name": name, "constraints": constraints})
        return int(made["id"])

    def tags(self, name: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.ok("GET", f"/api/admin/features/{name}/tags")["tags"]
        return found

    def search(self, **query: str) -> dict[str, Any]:
        qs = "&".join(f"{k}={quote(v, safe='')}" for k, v in query.items())
        found: dict[str, Any] = self.ok("GET", f"/api/admin/search/features?{qs}")
        return found

    def remove(self, *names: str) -> None:
        """Archives then deletes the flags (the journeys' own, so that the shared reference
        does not grow run after run); a flag already gone is fine."""
        base = f"/api/admin/projects/{PROJECT}"
        for name in names:
            self.call("DELETE", f"{base}/features/{name}")
        self.call("POST", f"{base}/delete", {"features": list(names)})

    def remove_segment(self, segment_id: int) -> None:
        self.call("DELETE", f"/api/admin/segments/{segment_id}")


@dataclass
class Watch:
    """Everything a page did that a journey must answer for: the target's answers >= 400, the
    requests to the target that failed, and console errors and uncaught exceptions, except
    what OUTSIDE_HOSTS explains and what the journey allowed."""

    host: str
    allowed: list[Allowed] = field(default_factory=lambda: list(UI_QUIRKS))
    answers: list[tuple[str, str, int]] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)

    def attach(self, page: Page) -> None:
        page.on("response", self._response)
        page.on("requestfailed", self._failed)
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.console.append(f"pageerror: {error}"))

    def allow(self, method: str, path: str, status: int) -> None:
        self.allowed.append(Allowed(method, path, status))

    def ours(self, url: str) -> bool:
        return urlsplit(url).netloc == self.host

    def _response(self, response: Response) -> None:
        if not self.ours(response.url) or response.status < 400:
            return
        parts = urlsplit(response.url)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        self.answers.append((response.request.method, path, response.status))

    def _failed(self, request: Request) -> None:
        # ERR_ABORTED: the UI navigated (or React unmounted) while a call was under way, and
        # Chromium dropped the answer; the call itself was answered (the server logs it).
        failure = request.failure or ""
        if not self.ours(request.url):
            self.ignored.append(f"{request.method} {request.url}: {failure}")
        elif "ERR_ABORTED" not in failure:
            self.failed.append(f"{request.method} {request.url}: {failure}")

    def _console(self, message: ConsoleMessage) -> None:
        if message.type != "error":
            return
        where = message.location.get("url", "") if message.location else ""
        if where and not self.ours(where):
            self.ignored.append(f"console: {message.text} ({where})")
        elif message.text.startswith("Failed to load resource: the server responded with"):
            # Chromium's line for an answer >= 400 from the target: _response judges it.
            return
        else:
            self.console.append(message.text)

    def unexpected(self) -> list[str]:
        wrong = [
            f"{method} {path} -> {status}"
            for method, path, status in self.answers
            if not any(a.matches(method, path, status) for a in self.allowed)
        ]
        return wrong + self.failed + [f"console: {text}" for text in self.console]

    def assert_clean(self) -> None:
        wrong = self.unexpected()
        assert wrong == [], f"unprovoked answers or errors: {wrong}"


@dataclass
class Journey:
    """One journey's browser page, its watch, and the admin API (token and session)."""

    target: Target
    page: Page
    watch: Watch
    api: Api
    session: Api  # as the signed-in user

    def goto(self, path: str) -> None:
        self.page.goto(f"{self.target.url}{path}")

    def flag_page(self, name: str) -> None:
        """The flag's page, loaded (its environments' switches shown)."""
        self.goto(f"/projects/{PROJECT}/features/{name}")
        self.page.get_by_role("heading", name=name).first.wait_for()
        self.page.get_by_role("checkbox", name="development").wait_for()

    def answered(self, method: str, pattern: str) -> Callable[[Response], bool]:
        """A predicate for page.expect_response: the target's answer to method + path."""

        def match(response: Response) -> bool:
            return (
                response.request.method == method
                and self.watch.ours(response.url)
                and re.search(pattern, urlsplit(response.url).path) is not None
            )

        return match

    def wait_until(self, what: str, check: Callable[[], bool], timeout: float = 10.0) -> None:
        """For the API's view of what the UI just did (its write is answered by then, but the
        UI may send it after its own confirmation animation)."""
        deadline = time.monotonic() + timeout
        while not check():
            assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
            time.sleep(0.1)


def hover_name(page: Page, button: Locator) -> str:
    """The tooltip an icon button shows on hover (its accessible name only then)."""
    button.hover()
    tip = page.get_by_role("tooltip").last
    tip.wait_for()
    return str(tip.inner_text()).strip()


def click_until(button: Locator, shown: Locator, tries: int = 3) -> None:
    """Clicks until `shown` shows: right after the page settles the UI may render a button
    anew (a refetch), and a click that lands on the old one opens nothing."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError  # noqa: PLC0415

    for attempt in range(1, tries + 1):
        button.click()
        try:
            shown.wait_for(timeout=STEP_TIMEOUT_MS / tries)
        except PlaywrightTimeoutError:
            if attempt == tries:
                raise
        else:
            return


def icon_button(scope: Page | Locator, icon: str) -> Locator:
    """An icon-only button by its icon (the UI names these only through a hover tooltip)."""
    return scope.locator(f"button:has([data-testid={icon}]):visible").first


def flag_link(page: Page, name: str) -> Locator:
    """The flag's name in the flag table, in its link to the flag's page (the link itself has
    no box of its own for Playwright: its text is a clamped block)."""
    return page.locator(f"tbody a[href$='/features/{name}'] span").first


def flag_row(page: Page, name: str) -> Locator:
    """The table row that shows the flag (the names here are unique: no name is part of
    another)."""
    return page.locator("tbody tr").filter(has_text=name)


def row_names(page: Page, prefix: str) -> list[str]:
    """The flag names the table shows, in order, those starting with prefix."""
    found = []
    for text in page.locator("tbody tr a[href*='/features/']").all_inner_texts():
        name = text.strip()
        if name.startswith(prefix):
            found.append(name)
    return found
