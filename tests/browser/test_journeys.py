"""Journeys through Unleash's own UI in Chromium, one per part of the flag workflow (issue 42,
point 3), each checked afterwards through the admin API. Each fails on an answer >= 400 it did
not provoke and on a console error (tests/browser/ui.py's Watch). `make browser-test` runs them
against the service; `make browser-test-reference` against the reference, so that they
describe Unleash's UI and not a guess of it. /work/ui-calls.md lists the calls behind them.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import TYPE_CHECKING

import pytest

from tests.browser.ui import PROJECT, hover_name, icon_button, row_names, unique

if TYPE_CHECKING:
    from tests.browser.ui import Journey

pytestmark = pytest.mark.browser


def test_sign_in_through_the_form_and_sign_out(fresh: Journey) -> None:
    page, watch = fresh.page, fresh.watch
    # Signed out, the UI's first calls answer 401 (it then shows the form): provoked.
    for path in ("/api/admin/user", "/api/admin/ui-config", "/api/admin/projects"):
        watch.allow("GET", path, 401)
    fresh.goto("/")
    page.get_by_label("Username or email").fill(fresh.target.username)
    page.get_by_label("Password", exact=True).fill(fresh.target.password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r".*/personal$"))
    got_it = page.get_by_role("button", name="Got it, let's get started!")
    page.get_by_role("link", name="Projects").first.wait_for()
    if got_it.is_visible():  # the splash, until the user dismissed it once
        got_it.click()
    # The user menu holds an HTML form that posts /logout.
    page.get_by_role("button", name=re.compile(fresh.target.username)).first.click()
    with page.expect_navigation():
        page.locator("form[action='/logout']").get_by_role("button", name="Log out").click()
    page.get_by_label("Username or email").wait_for()
    assert urlpath(page.url) == "/login"
    watch.assert_clean()


def test_projects_list_and_a_favourite(journey: Journey) -> None:
    page = journey.page

    def favourite() -> bool:
        (default,) = [
            p for p in journey.session.ok("GET", "/api/admin/projects")["projects"]
            if p["id"] == PROJECT
        ]
        return bool(default["favorite"])

    was = favourite()
    journey.goto("/projects")
    page.get_by_role("heading", name=re.compile(r"Projects \(\d+\)")).wait_for()
    card = page.locator("a[href='/projects/default']").first
    card.wait_for()
    first, then = ("Remove from favorites", "Add to favorites") if was else (
        "Add to favorites",
        "Remove from favorites",
    )
    with page.expect_response(journey.answered("POST" if not was else "DELETE", r"/favorites$")):
        page.get_by_role("button", name=first).first.click()
    assert favourite() is not was
    page.get_by_role("button", name=then).first.wait_for()
    with page.expect_response(journey.answered("DELETE" if not was else "POST", r"/favorites$")):
        page.get_by_role("button", name=then).first.click()
    assert favourite() is was
    journey.watch.assert_clean()


def urlpath(url: str) -> str:
    return re.sub(r"^https?://[^/]+", "", url).split("?")[0]
