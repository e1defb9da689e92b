"""Journeys through Unleash's UI for the instance's settings (issue 43): maintenance mode
switched on in Admin > Maintenance (the banner shows, a change is refused), then off again;
the frontend API's CORS origins in Admin > CORS origins; the statistics downloaded and the
privacy page. Each checked through the admin API; each leaves the shared reference as it
found it."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

import pytest

from tests.browser.ui import PROJECT, unique

if TYPE_CHECKING:
    from tests.browser.ui import Journey

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

MAINTENANCE = "/api/admin/maintenance"
BANNER = "Maintenance Mode!"
SHOT = os.environ.get("BROWSER_SHOT")  # a path: the maintenance page is saved there (on)


def test_maintenance_mode_on_refuses_changes_and_off_again(journey: Journey) -> None:
    page, api = journey.page, journey.api
    assert api.ok("GET", MAINTENANCE) == {"enabled": False}
    try:
        journey.goto("/admin/maintenance")
        switch = page.get_by_role("checkbox")
        page.get_by_text("Disabled", exact=True).wait_for()
        with page.expect_response(journey.answered("POST", MAINTENANCE + "$")) as posted:
            switch.click()
        assert posted.value.status == 204
        page.get_by_text(BANNER).wait_for()
        page.get_by_text("Enabled", exact=True).wait_for()
        if SHOT:
            page.screenshot(path=SHOT)
        assert api.ok("GET", MAINTENANCE) == {"enabled": True}
        assert api.ok("GET", "/api/admin/ui-config")["maintenanceMode"] is True
        # A change, by the signed-in user as by the admin token, is refused as Unleash does.
        name = unique("maint")
        for caller in (journey.session, api):
            status, answer = caller.call(
                "POST", f"/api/admin/projects/{PROJECT}/features", {"name": name}
            )
            assert (status, answer["message"]) == (503, "Unleash is currently in maintenance mode.")
        assert api.call("GET", f"/api/admin/projects/{PROJECT}/features/{name}")[0] == 404
        with page.expect_response(journey.answered("POST", MAINTENANCE + "$")) as posted:
            switch.click()
        assert posted.value.status == 204
        page.get_by_text("Disabled", exact=True).wait_for()
        page.get_by_text(BANNER).wait_for(state="detached")
        assert api.ok("GET", MAINTENANCE) == {"enabled": False}
    finally:  # others share the reference: never leave it in maintenance
        api.call("POST", MAINTENANCE, {"enabled": False})
    journey.watch.assert_clean()


def test_cors_origins_saved_from_the_admin_page(journey: Journey) -> None:
    page, api = journey.page, journey.api
    before = api.ok("GET", "/api/admin/ui-config")["frontendApiOrigins"]
    origin = f"https://{unique('cors')}.example.com"
    try:
        journey.goto("/admin/cors")
        field = page.get_by_role("textbox", name=re.compile("^Which origins should be"))
        field.wait_for()
        field.fill(f"{origin}\n*")
        with page.expect_response(
            journey.answered("POST", r"/api/admin/ui-config/cors$")
        ) as posted:
            page.get_by_role("button", name=re.compile("^Save$")).click()
        assert posted.value.status == 204
        shown = api.ok("GET", "/api/admin/ui-config")["frontendApiOrigins"]
        assert shown == [origin, "*"]
    finally:
        api.call("POST", "/api/admin/ui-config/cors", {"frontendApiOrigins": before})
    journey.watch.assert_clean()


def test_instance_statistics_downloaded_and_privacy_shown(journey: Journey) -> None:
    page = journey.page
    stats = r"/api/admin/instance-admin/statistics$"
    with page.expect_response(journey.answered("GET", stats)) as answered:
        journey.goto("/admin/instance")
    assert answered.value.status == 200
    instance_id = journey.api.ok("GET", "/api/admin/instance-admin/statistics")["instanceId"]
    page.get_by_role("cell", name=instance_id, exact=True).wait_for()
    with page.expect_download() as download:
        page.get_by_text("Download").first.click()
    assert re.fullmatch(rf"unleash-{instance_id}-\d{{13}}\.csv", download.value.suggested_filename)
    with page.expect_response(journey.answered("GET", r"/api/admin/telemetry/settings$")):
        journey.goto("/admin/instance-privacy")
    # Nothing is collected: both sections say so.
    none = page.get_by_text("No data is collected")
    none.nth(1).wait_for()
    assert none.count() == 2
    journey.watch.assert_clean()
