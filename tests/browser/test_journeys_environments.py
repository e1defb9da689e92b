"""The environments journey (issue 43, point 3) through Unleash's own UI, checked afterwards
through the admin API, against ours and the reference alike.

What the open-source UI of 6.10.1 offers: its admin page of environments (/environments) is an
Enterprise route (the open-source build shows "a page we haven't toggled on yet"), and its
create and edit forms post routes the open-source server does not have (404 on the
reference), so no journey creates, reorders or switches an environment there. It does show a
project's environments (project settings, Environments: GET
/api/admin/environments/project/:id) and lets one edit each one's default strategy (project
settings, Default strategy), which a flag switched on there without a strategy then gets.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

import pytest

from tests.browser.ui import PROJECT, unique

if TYPE_CHECKING:
    from tests.browser.ui import Api, Journey

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

ENVIRONMENT = "production"
DEFAULT = f"/api/admin/projects/{PROJECT}/environments/{ENVIRONMENT}/default-strategy"
# What a project environment behaves like without a default of its own; the journey leaves
# this behind (the reference is shared: other journeys switch flags on there).
BUILT_IN = {
    "name": "flexibleRollout",
    "constraints": [],
    "parameters": {"rollout": "100", "stickiness": "default", "groupId": ""},
}
# ENVIRONMENTS_SCREENSHOT=file.png keeps a screenshot of the page on ours.
SHOT = os.environ.get("ENVIRONMENTS_SCREENSHOT")


def _default_strategy(api: Api) -> dict[str, object]:
    overview = api.ok("GET", f"/api/admin/projects/{PROJECT}/overview")
    (found,) = [e for e in overview["environments"] if e["environment"] == ENVIRONMENT]
    return dict(found.get("defaultStrategy") or {})


def test_project_environments_and_a_default_strategy(journey: Journey) -> None:
    page, api = journey.page, journey.api
    title, name = unique("default"), unique()
    try:
        # The admin page of environments is an Enterprise route in this build, on both targets.
        journey.goto("/environments")
        page.get_by_text("That's a page we haven't toggled on yet.").wait_for()

        # The project's environments, each with its count of API tokens (the count itself
        # is left out: on the shared reference others make tokens meanwhile).
        journey.goto(f"/projects/{PROJECT}/settings/environments")
        page.get_by_text(re.compile(r"Environments \(\d+\)")).first.wait_for()
        listed = api.ok("GET", f"/api/admin/environments/project/{PROJECT}")["environments"]
        for environment in listed:
            if environment["visible"]:
                first = page.locator(
                    "td:first-child", has_text=re.compile(rf"^{environment['name']}$")
                )
                row = page.locator("tbody tr").filter(has=first)
                row.get_by_text(re.compile(r"^\d+ tokens?$")).wait_for()
        if SHOT and journey.target.name == "ours":
            page.screenshot(path=SHOT)

        # The environment's default strategy: a title and a smaller rollout.
        page.get_by_role("button", name="Default strategy").click()
        edit = page.locator(
            f"a[href='/projects/{PROJECT}/settings/default-strategy/edit?environmentId={ENVIRONMENT}']"
        )
        edit.click()
        page.locator("#title-input").fill(title)
        page.locator("input[type=range]").focus()
        for _ in range(3):
            page.keyboard.press("ArrowLeft")
        page.get_by_text("97", exact=True).first.wait_for()  # the slider's label
        with page.expect_response(journey.answered("POST", r"/default-strategy$")) as saved:
            page.get_by_role("button", name="Save strategy").click()
        assert saved.value.status == 200
        journey.wait_until(
            "the default strategy", lambda: _default_strategy(api).get("title") == title
        )
        assert _default_strategy(api)["parameters"] == {
            "rollout": "97",
            "stickiness": "default",
            "groupId": "",
        }
        page.get_by_text(title).first.wait_for()  # the list of defaults shows it

        # A new flag switched on there without a strategy gets that one.
        api.flag(name)
        api.ok(
            "POST", f"/api/admin/projects/{PROJECT}/features/{name}/environments/{ENVIRONMENT}/on"
        )
        (strategy,) = api.strategies(name, ENVIRONMENT)
        assert strategy["name"] == "flexibleRollout"
        assert strategy["title"] == title
        assert strategy["parameters"] == {"rollout": "97", "stickiness": "default", "groupId": name}
        journey.watch.assert_clean()
    finally:
        api.call("POST", DEFAULT, BUILT_IN)
        api.remove(name)
