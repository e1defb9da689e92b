"""The applications journey through Unleash's UI (issue 43, point 3): an SDK registers and
reports through the client API, someone describes the application through the admin API; the
applications page lists it with its description, its page shows the environment it reports
from, its instances there and its outdated SDK, and deleting it there leaves it gone (checked
through the admin API). Runs against ours and the reference alike."""

from __future__ import annotations

import datetime as dt
import os
import re
from typing import TYPE_CHECKING

import pytest

from tests.browser.ui import STEP_TIMEOUT_MS, Api, unique

if TYPE_CHECKING:
    from tests.browser.ui import Journey

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]
APPS = "/api/admin/metrics/applications"


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z")


class _Sdk(Api):
    """The client API with a client token, as an SDK calls it."""

    def __init__(self, journey: Journey, secret: str) -> None:
        super().__init__(journey.target)
        self.headers = {"Authorization": secret}


def _sdk_reports(journey: Journey, app: str, flag: str) -> None:
    """Two instances of `app` register in production (one with an outdated Node SDK) and one
    reports evaluating `flag`, as SDKs do."""
    token = journey.api.ok(
        "POST",
        "/api/admin/api-tokens",
        {
            "tokenName": unique("sdk"),
            "type": "client",
            "environment": "production",
            "projects": ["*"],
        },
    )
    sdk = _Sdk(journey, token["secret"])
    for instance, version in (
        ("i-1", "unleash-client-python:5.11.0"),
        ("i-2", "unleash-client-node:3.2.0"),
    ):
        sdk.ok(
            "POST",
            "/api/client/register",
            {
                "appName": app,
                "instanceId": instance,
                "sdkVersion": version,
                "strategies": ["default"],
                "started": _now(),
                "interval": 15000,
            },
        )
    bucket = {"start": _now(), "stop": _now(), "toggles": {flag: {"yes": 3, "no": 1}}}
    sdk.ok("POST", "/api/client/metrics", {"appName": app, "instanceId": "i-1", "bucket": bucket})


def test_applications_list_an_application_s_page_and_deleting_it(journey: Journey) -> None:
    page, api = journey.page, journey.api
    app, flag = unique("app"), unique("appflag")
    api.flag(flag)
    _sdk_reports(journey, app, flag)
    api.ok("POST", f"{APPS}/{app}", {"description": "Takes the payments"})

    def overview_ready() -> bool:
        # Unleash writes registrations and counts in batches, seconds later.
        status, found = api.call("GET", f"{APPS}/{app}/overview")
        environments = found["environments"] if status == 200 else []
        return [e.get("instanceCount") for e in environments] == [2]

    journey.wait_until("the SDK's reports are stored", overview_ready, timeout=60)
    try:
        journey.goto("/applications")
        page.get_by_role("heading", name=re.compile(r"Applications \(\d+\)")).wait_for()
        link = page.get_by_role("link", name=app)
        link.wait_for()
        page.get_by_text("Takes the payments").wait_for()
        link.click()
        page.wait_for_url(re.compile(rf".*/applications/{app}$"))
        page.get_by_text("production environment").wait_for()
        page.get_by_text("unleash-client-node:3.2.0").first.wait_for()  # an outdated SDK
        page.get_by_text("We detected the following outdated SDKs").wait_for()
        if shot := os.environ.get("APPS_SCREENSHOT"):
            page.screenshot(path=shot)
        page.get_by_role("tab", name="Last seen instances (24h)").click()
        page.get_by_text("i-2").first.wait_for()
        # Its delete button, then the dialog's.
        page.locator("main").get_by_role("button").filter(
            has=page.locator("[data-testid='DeleteIcon']")
        ).first.click()
        dialog = page.get_by_role("dialog")
        dialog.get_by_text("Are you sure you want to delete this application?").wait_for()
        with page.expect_response(journey.answered("DELETE", rf"{APPS}/{app}$")) as deleted:
            dialog.get_by_role("button", name=re.compile("^(Delete|Yes|Ok)", re.IGNORECASE)).click()
        # The UI opens the list only after a 2xx; any other answer is a toast and no navigation,
        # so the answer is what a failure here must say.
        answer = deleted.value
        assert answer.status < 300, f"DELETE answered {answer.status}: {answer.text()}"
        page.get_by_text("Deleted Successfully").wait_for()
        # The list opens after the UI's follow-up requests: on a loaded machine, longer than a
        # step may take. The list writes its table state into the query string at once.
        page.wait_for_url(re.compile(r".*/applications(\?[^/]*)?$"), timeout=3 * STEP_TIMEOUT_MS)
        journey.wait_until(
            "the application is gone", lambda: api.call("GET", f"{APPS}/{app}")[0] == 404
        )
        journey.watch.assert_clean()
    finally:
        api.call("DELETE", f"{APPS}/{app}")
        api.remove(flag)
