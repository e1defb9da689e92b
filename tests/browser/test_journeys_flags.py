"""Journeys of a flag's page beyond issue 42 (issue 43, "Flags"): its lifecycle, completed from
the page's lifecycle tooltip, and its links, checked through the admin API.

Unleash 6.10.1's UI shows no links (they sit behind its `featureLinks` flag, off there, and the
reference answers 404 for them): the journey adds one through our API only and checks that the
page shows the flag as before.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import urllib.request
from typing import TYPE_CHECKING, Any

import pytest

from tests.browser.ui import PROJECT, unique

if TYPE_CHECKING:
    from tests.browser.ui import Journey

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]
SHOT = os.environ.get("FLAGS_SHOT")  # where the page's screenshot goes, when set


def _stages(journey: Journey, name: str) -> list[str]:
    found = journey.api.ok("GET", f"/api/admin/projects/{PROJECT}/features/{name}/lifecycle")
    return [s["stage"] for s in found]


def _live(journey: Journey, name: str) -> None:
    """The flag on in production; the reference moves a flag to `live` when an SDK reports it
    there (docs/behavior.md, "A flag's lifecycle"), so it is told of an evaluation too."""
    flag = f"/api/admin/projects/{PROJECT}/features/{name}"
    journey.api.ok("POST", f"{flag}/environments/production/on")
    if journey.target.name == "reference":
        token: dict[str, Any] = journey.api.ok(
            "POST",
            "/api/admin/api-tokens",
            {"tokenName": unique("lc"), "type": "client", "environment": "production"},
        )
        now = dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z")
        bucket = {"start": now, "stop": now, "toggles": {name: {"yes": 1, "no": 0}}}
        body = {"appName": "journeys", "instanceId": "journeys", "bucket": bucket}
        request = urllib.request.Request(
            f"{journey.target.url}/api/client/metrics",
            data=json.dumps(body).encode(),
            method="POST",
            headers={"Authorization": token["secret"], "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=20) as resp:
            assert resp.status == 202
    journey.wait_until("live", lambda: "live" in _stages(journey, name), timeout=60)


def test_complete_a_flag_from_its_lifecycle_and_its_links(journey: Journey) -> None:
    page, api = journey.page, journey.api
    name = unique("lc")
    api.flag(name)
    flag = f"/api/admin/projects/{PROJECT}/features/{name}"
    try:
        _live(journey, name)
        if journey.target.name == "ours":
            api.ok("POST", f"{flag}/link", {"url": "https://example.com/pr/1", "title": "PR"})
        journey.flag_page(name)
        # The lifecycle's icon in the page's side panel: its tooltip offers to complete.
        page.get_by_text("Lifecycle:").first.wait_for()
        page.get_by_text("Lifecycle:").first.locator("..").locator("svg").first.hover()
        page.get_by_role("button", name="Mark completed").click()
        dialog = page.get_by_role("dialog")
        dialog.get_by_text("We decided to discard the feature").click()
        with page.expect_response(
            journey.answered("POST", rf"/features/{name}/lifecycle/complete$")
        ):
            dialog.get_by_role("button", name="Mark completed").click()
        journey.wait_until("completed", lambda: _stages(journey, name)[-1] == "completed")
        (completed,) = [s for s in api.ok("GET", f"{flag}/lifecycle") if s["stage"] == "completed"]
        assert completed["status"] == "discarded"
        shown = api.feature(name)
        assert shown["lifecycle"]["stage"] == "completed"
        if journey.target.name == "ours":
            assert [(x["url"], x["title"]) for x in shown["links"]] == [
                ("https://example.com/pr/1", "PR")
            ]
        if SHOT and journey.target.name == "ours":
            page.mouse.move(0, 0)
            page.evaluate("window.scrollTo(0, 0)")
            page.screenshot(path=SHOT)
        journey.watch.assert_clean()
    finally:
        api.remove(name)
