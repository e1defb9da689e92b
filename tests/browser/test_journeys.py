"""Journeys through Unleash's own UI in Chromium, one per part of the flag workflow (issue 42,
point 3), each checked afterwards through the admin API. Each fails on an answer >= 400 it did
not provoke and on a console error (tests/browser/ui.py's Watch). `make browser-test` runs them
against the service; `make browser-test-reference` against the reference, so that they
describe Unleash's UI and not a guess of it.
"""

from __future__ import annotations

import datetime as dt
import re
import threading
from typing import TYPE_CHECKING

import pytest

from tests.browser.ui import (
    PROJECT,
    STEP_TIMEOUT_MS,
    click_until,
    flag_link,
    flag_row,
    hover_name,
    icon_button,
    row_names,
    unique,
)

if TYPE_CHECKING:
    from pathlib import Path

    from tests.browser.ui import Journey

# A journey takes seconds alone, minutes on a loaded 2-core machine.
pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]


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
    # The key-concepts splash shows until the user dismissed it once (user.splash).
    got_it = page.get_by_role("button", name="Got it, let's get started!")
    projects = page.get_by_role("link", name="Projects").first
    got_it.or_(projects).first.wait_for()
    if got_it.is_visible():
        with page.expect_response(fresh.answered("POST", r"/api/admin/splash/")):
            got_it.click()
    projects.wait_for()
    # The user menu holds an HTML form that posts /logout.
    page.get_by_role("button", name=re.compile(fresh.target.username, re.IGNORECASE)).first.click()
    with page.expect_navigation():
        page.locator("form[action='/logout']").get_by_role("button", name="Log out").click()
    page.get_by_label("Username or email").wait_for()
    assert urlpath(page.url) == "/login"
    watch.assert_clean()


def test_projects_list_and_a_favourite(journey: Journey) -> None:
    page = journey.page

    def favourite() -> bool:
        (default,) = [
            p
            for p in journey.session.ok("GET", "/api/admin/projects")["projects"]
            if p["id"] == PROJECT
        ]
        return bool(default["favorite"])

    was = favourite()
    journey.goto("/projects")
    page.get_by_role("heading", name=re.compile(r"Projects \(\d+\)")).wait_for()
    card = page.locator("a[href='/projects/default']").first
    card.wait_for()
    first, then = (
        ("Remove from favorites", "Add to favorites")
        if was
        else (
            "Add to favorites",
            "Remove from favorites",
        )
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


def creator_name(journey: Journey) -> tuple[int, str]:
    """The signed-in user's id and the name the flag creators list gives them."""
    me = journey.session.ok("GET", "/api/admin/user")["user"]
    creators = journey.session.ok("GET", f"/api/admin/projects/{PROJECT}/flag-creators")
    (name,) = [c["name"] for c in creators if c["id"] == me["id"]]
    return int(me["id"]), str(name)


def test_project_overview_status_and_flag_creators(journey: Journey) -> None:
    page, api = journey.page, journey.api
    name = unique()
    journey.session.flag(name)  # created by the signed-in user: one of the flag creators
    try:
        journey.goto(f"/projects/{PROJECT}")
        flag_link(page, name).wait_for()
        # The status dialog, with the health the API gives.
        health = api.ok("GET", f"/api/admin/projects/{PROJECT}/status")["health"]["current"]
        page.get_by_role("button", name="Project status").click()
        page.get_by_text(f"Your current project health rating is {health}%").wait_for()
        page.get_by_role("button", name="Close").last.click()
        # The creators filter: the user is offered, and choosing them keeps the flag.
        user_id, creator = creator_name(journey)
        page.get_by_role("button", name="Filter", exact=True).click()
        with page.expect_response(journey.answered("GET", r"/search/features$")) as searched:
            page.get_by_role("menuitem", name=re.compile("Created by")).click()
            page.get_by_text(creator, exact=True).last.click()
        assert f"createdBy=IS%3A{user_id}" in searched.value.url
        page.keyboard.press("Escape")
        flag_link(page, name).wait_for()
        journey.watch.assert_clean()
    finally:
        api.remove(name)


def test_flag_table_search_sort_favourite_paging_filters(journey: Journey) -> None:
    page, api = journey.page, journey.api
    prefix = unique()
    names = [f"{prefix}-{n:02d}" for n in range(27)]
    experiments = [n for i, n in enumerate(names) if i % 3 == 0]
    for i, name in enumerate(names):
        journey.session.flag(name, type="experiment" if i % 3 == 0 else "release")

    def shows(expected: list[str]) -> None:
        journey.wait_until(
            f"the table shows {expected}", lambda: row_names(page, prefix) == expected
        )

    try:
        journey.goto(f"/projects/{PROJECT}")
        page.get_by_role("button", name="New feature flag").wait_for()
        with page.expect_response(journey.answered("GET", r"/search/features$")):
            page.get_by_placeholder("Search and Filter").fill(prefix)
        shows(names[::-1][:25])  # newest first, a page of 25
        page.get_by_role("button", name="Name", exact=True).click()
        shows(names[:25])
        # A favourite comes first (favoritesFirst=true), whatever the sort.
        row = flag_row(page, names[20])
        row.hover()
        with page.expect_response(journey.answered("POST", r"/favorites$")):
            row.locator("td").nth(1).get_by_role("button").click()
        shows([names[20], *names[:20], *names[21:25]])
        # The favourite is the user's: their search puts it first too.
        mine = journey.session.search(
            query=prefix, sortBy="name", sortOrder="asc", favoritesFirst="true", limit="25"
        )
        assert [f["name"] for f in mine["features"]] == row_names(page, prefix)
        # The next page.
        page.get_by_text(re.compile(r"^Page 1 of 2")).locator("..").get_by_role(
            "button"
        ).last.click()
        shows(names[25:])
        # Filters: flag type (IS_ANY_OF), then created on or after today (IS_ON_OR_AFTER).
        page.get_by_role("button", name="Filter", exact=True).click()
        page.get_by_role("menuitem", name=re.compile("Flag type")).click()
        with page.expect_response(journey.answered("GET", r"/search/features$")) as searched:
            page.get_by_text("Experiment", exact=True).last.click()
        page.keyboard.press("Escape")
        assert "type=IS_ANY_OF%3Aexperiment" in searched.value.url or "type=IS%3Aexperiment" in (
            searched.value.url
        )
        shows(experiments)
        today = dt.datetime.now(dt.UTC).date()
        page.get_by_role("button", name="Filter", exact=True).click()
        page.get_by_role("menuitem", name=re.compile("Created date")).click()
        with page.expect_response(journey.answered("GET", r"/search/features$")) as searched:
            page.get_by_role("gridcell", name=str(today.day), exact=True).first.click()
        page.keyboard.press("Escape")
        assert f"createdAt=IS_ON_OR_AFTER%3A{today.isoformat()}" in searched.value.url
        shows(experiments)
        journey.watch.assert_clean()
    finally:
        api.remove(*names)


def test_create_a_flag_from_the_dialog_with_validate(journey: Journey) -> None:
    page, api = journey.page, journey.api
    name, tag = unique(), unique("tag")
    api.ok("POST", "/api/admin/tags", {"type": "simple", "value": tag})
    try:
        journey.goto(f"/projects/{PROJECT}")
        page.get_by_role("button", name="New feature flag").click()
        dialog = page.get_by_role("dialog")
        page.get_by_label("Feature flag name").fill(name)
        with page.expect_response(journey.answered("POST", r"/features/validate$")) as checked:
            page.get_by_label("Description (optional)").fill("made in the dialog")
        assert checked.value.status == 200
        # Its type (the feature types), and a tag.
        dialog.get_by_role("button", name="Release").click()
        page.get_by_text("Experiment", exact=True).last.click()
        dialog.get_by_role("button", name="Tags").click()
        page.get_by_text(f"simple:{tag}", exact=True).last.click()
        page.keyboard.press("Escape")
        with page.expect_response(journey.answered("POST", rf"/projects/{PROJECT}/features$")):
            dialog.get_by_role("button", name="Create feature flag").click()
        page.wait_for_url(re.compile(rf".*/projects/{PROJECT}/features/{name}$"))
        page.get_by_text("Experiment flag").wait_for()
        made = api.feature(name)
        assert (made["type"], made["description"], made["project"]) == (
            "experiment",
            "made in the dialog",
            PROJECT,
        )
        assert [(t["type"], t["value"]) for t in api.tags(name)] == [("simple", tag)]
        journey.watch.assert_clean()
    finally:
        api.remove(name)
        api.call("DELETE", f"/api/admin/tags/simple/{tag}")


def test_the_dialog_says_a_name_is_taken(journey: Journey) -> None:
    page, api = journey.page, journey.api
    taken = unique()
    api.flag(taken)
    try:
        journey.goto(f"/projects/{PROJECT}")
        page.get_by_role("button", name="New feature flag").click()
        # A name in use: validate answers 409 (provoked) and the dialog says so.
        journey.watch.allow("POST", r"/api/admin/features/validate", 409)
        page.get_by_label("Feature flag name").fill(taken)
        with page.expect_response(journey.answered("POST", r"/features/validate$")) as checked:
            page.get_by_label("Description (optional)").click()
        assert checked.value.status == 409
        message = page.get_by_role("dialog").get_by_text("A flag with that name already exists")
        message.wait_for(timeout=STEP_TIMEOUT_MS / 3)  # at once with the answer, when it shows
        journey.watch.assert_clean()
    finally:
        api.remove(taken)


def switch(journey: Journey, environment: str, on: bool) -> None:
    """The environment's switch on the flag page; production asks to confirm."""
    page = journey.page
    with page.expect_response(journey.answered("POST", rf"/environments/{environment}/o(n|ff)$")):
        page.get_by_role("checkbox", name=environment).click()
        if environment == "production":
            page.get_by_role("dialog").get_by_role(
                "button", name="Enable Environment" if on else "Disable Environment"
            ).click()


def test_flag_page_enable_disable_edit_and_stale(journey: Journey) -> None:
    page, api = journey.page, journey.api
    name = unique()
    api.flag(name, description="before")
    try:
        journey.flag_page(name)
        switch(journey, "development", on=True)
        assert api.environment(name, "development")["enabled"] is True
        switch(journey, "production", on=True)
        assert api.environment(name, "production")["enabled"] is True
        switch(journey, "development", on=False)
        assert api.environment(name, "development")["enabled"] is False
        assert api.environment(name, "production")["enabled"] is True
        # Edit (a JSON Patch of type and description) from the Settings tab.
        page.get_by_role("tab", name="Settings").click()
        page.get_by_text("Feature information").locator("..").get_by_role("button").click()
        page.wait_for_url(re.compile(r".*/edit$"))
        page.get_by_label("Description").fill("after")
        page.get_by_role("combobox").filter(has_text="Release").click()
        page.get_by_role("option").filter(has_text="Operational").first.click()
        with page.expect_response(journey.answered("PATCH", rf"/features/{name}$")):
            page.get_by_role("button", name="Save").click()
        page.wait_for_url(re.compile(rf".*/features/{name}$"))
        made = api.feature(name)
        assert (made["type"], made["description"], made["stale"]) == ("operational", "after", False)
        # Stale: the clock icon, confirmed.
        stale = icon_button(page, "WatchLaterOutlinedIcon")
        assert hover_name(page, stale) == "Toggle stale state"
        stale.click()
        with page.expect_response(journey.answered("PATCH", rf"/features/{name}$")):
            page.get_by_role("button", name="Flip to stale").click()
        page.get_by_text("Stale", exact=True).first.wait_for()
        assert api.feature(name)["stale"] is True
        journey.watch.assert_clean()
    finally:
        api.remove(name)


def test_switching_on_without_a_strategy_adds_the_default_one(journey: Journey) -> None:
    page, api = journey.page, journey.api
    name = unique()
    api.flag(name)
    try:
        journey.flag_page(name)
        switch(journey, "development", on=True)
        (added,) = api.strategies(name, "development")
        assert (added["name"], added["parameters"]["rollout"]) == ("flexibleRollout", "100")
        expand(journey, "development")
        page.get_by_text("1 strategy added").first.wait_for()
        journey.watch.assert_clean()
    finally:
        api.remove(name)


def expand(journey: Journey, environment: str) -> None:
    """The environment's panel on the flag page, open (it shows the strategies)."""
    page = journey.page
    panel = page.get_by_role("button", name=re.compile(rf"^Environment\s+{environment}"))
    if panel.get_attribute("aria-expanded") != "true":
        panel.click()


def test_strategies_add_edit_reorder_delete(journey: Journey) -> None:
    """A gradual rollout with a title, a segment, a constraint (validated) and a strategy
    variant; a second strategy; the first edited; the two reordered by dragging; one removed."""
    page, api = journey.page, journey.api
    name, app = unique(), unique("app")
    segment = api.segment(
        unique("seg"), [{"contextName": "userId", "operator": "IN", "values": ["a"]}]
    )
    api.flag(name)
    segment_name = api.ok("GET", f"/api/admin/segments/{segment}")["name"]
    try:
        journey.flag_page(name)
        add_rollout(journey, name, segment_name, app)
        (first,) = api.strategies(name, "development")
        assert (first["name"], first["title"], first["parameters"]["rollout"]) == (
            "flexibleRollout",
            "half",
            "50",
        )
        assert first["segments"] == [segment]
        assert [(c["contextName"], c["operator"], c["values"]) for c in first["constraints"]] == [
            ("appName", "IN", [app])
        ]
        assert [(v["name"], v["payload"]) for v in first["variants"]] == [
            ("blue", {"type": "string", "value": "b"})
        ]
        # A second strategy: Standard, from the strategy menu.
        expand(journey, "development")
        standard = page.get_by_text("Standard", exact=True)
        click_until(page.get_by_role("button", name="More strategies").first, standard)
        standard.click()
        page.wait_for_url(re.compile(r".*/strategies/create\?.*strategyName=default"))
        with page.expect_response(
            journey.answered("POST", r"/environments/development/strategies$")
        ):
            page.get_by_role("button", name="Save strategy").click()
        page.wait_for_url(re.compile(rf".*/features/{name}$"))
        assert [s["name"] for s in api.strategies(name, "development")] == [
            "flexibleRollout",
            "default",
        ]
        # The first edited: rollout 60.
        expand(journey, "development")
        page.locator(f"a[href*='strategyId={first['id']}']:visible").click()
        page.wait_for_url(re.compile(r".*/strategies/edit\?"))
        slider = page.get_by_role("slider")
        slider.focus()
        page.keyboard.press("PageUp")
        with page.expect_response(journey.answered("PUT", rf"/strategies/{first['id']}$")):
            page.get_by_role("button", name="Save strategy").click()
        page.wait_for_url(re.compile(rf".*/features/{name}$"))
        assert api.strategies(name, "development")[0]["parameters"]["rollout"] == "60"
        # Reordered: the second dragged above the first.
        expand(journey, "development")
        handles = page.locator("button:has([data-testid=DragIndicatorIcon]):visible")
        with page.expect_response(journey.answered("POST", r"/strategies/set-sort-order$")):
            handles.nth(1).drag_to(handles.nth(0))
        journey.wait_until(
            "the new order",
            lambda: (
                [s["name"] for s in api.strategies(name, "development")]
                == ["default", "flexibleRollout"]
            ),
        )
        # The Standard one (now first) removed.
        page.get_by_role("button", name="More actions").first.click()
        page.get_by_role("menuitem", name="Remove").click()
        with page.expect_response(journey.answered("DELETE", r"/strategies/[^/]+$")):
            page.get_by_role("dialog").get_by_role("button", name="Remove strategy").click()
        journey.wait_until(
            "the strategy removed",
            lambda: [s["id"] for s in api.strategies(name, "development")] == [first["id"]],
        )
        journey.watch.assert_clean()
    finally:
        api.remove(name)
        api.remove_segment(segment)


def add_rollout(journey: Journey, name: str, segment_name: str, app: str) -> None:
    """From the flag page: development's 'Add strategy' (a gradual rollout), titled, at 50%,
    with a segment, a constraint appName IN [app] and a strategy variant, saved."""
    page = journey.page
    page.get_by_role("button", name="Add strategy", exact=True).first.click()  # development
    page.wait_for_url(re.compile(r".*/strategies/create\?.*environmentId=development"))
    page.get_by_label("Strategy title").fill("half")
    slider = page.get_by_role("slider")
    slider.focus()
    page.keyboard.press("Home")
    for _ in range(5):
        page.keyboard.press("PageUp")  # +10 each
    assert slider.get_attribute("aria-valuenow") == "50"
    add_targeting(journey, segment_name, app)
    page.get_by_role("tab", name=re.compile("Variants")).click()
    page.get_by_role("button", name="Add variant").click()
    page.get_by_label("Variant name").fill("blue")
    page.get_by_role("textbox", name="Value").fill("b")
    with page.expect_response(journey.answered("POST", r"/environments/development/strategies$")):
        page.get_by_role("button", name="Save strategy").click()
    page.wait_for_url(re.compile(rf".*/features/{name}$"))


def add_targeting(journey: Journey, segment_name: str, value: str, field: str = "appName") -> None:
    """On the strategy form: its Targeting tab, a segment and a constraint field IN [value]
    (the UI validates it with POST /api/admin/constraints/validate)."""
    page = journey.page
    page.get_by_role("tab", name=re.compile("Targeting")).click()
    page.get_by_placeholder("Select segments").click()
    page.get_by_placeholder("Select segments").fill(segment_name)
    page.get_by_role("option", name=segment_name).click()
    page.get_by_role("button", name="Add constraint").click()
    if field != "appName":  # the context field a new constraint starts with
        page.get_by_role("combobox").filter(has_text="appName").click()
        page.get_by_role("option", name=field, exact=True).click()
    page.get_by_placeholder("value1, value2, value3...").fill(value)
    with page.expect_response(journey.answered("POST", r"/constraints/validate$")):
        page.get_by_role("button", name="Add values").click()
    page.get_by_role("button", name="Done").click()


def test_environment_variants(journey: Journey) -> None:
    """Unleash 6.10.1 takes new environment variants only on a flag that has some (otherwise:
    403, 'use strategy variants'), so the flag gets its first through variants-batch; the page
    then edits one environment's (PATCH) and copies them to another (variants-batch)."""
    page, api = journey.page, journey.api
    name = unique()
    api.flag(name)
    green = {
        "name": "green",
        "weightType": "variable",
        "weight": 1000,
        "stickiness": "default",
        "payload": {"type": "string", "value": "g"},
    }
    base = f"/api/admin/projects/{PROJECT}/features/{name}"
    api.ok("PUT", f"{base}/variants-batch", {"variants": [green], "environments": ["development"]})
    try:
        journey.goto(f"/projects/{PROJECT}/features/{name}/variants")
        page.get_by_role("tab", name="Variants").wait_for()
        icon_button(page.locator("main"), "EditIcon").click()
        page.get_by_role("button", name="Add variant").last.click()
        page.get_by_label("Variant name").last.fill("yellow")
        with page.expect_response(
            journey.answered("PATCH", r"/environments/development/variants$")
        ):
            page.get_by_role("button", name="Save variants").click()
        assert [
            (v["name"], v["weight"]) for v in api.environment(name, "development")["variants"]
        ] == [
            ("green", 500),
            ("yellow", 500),
        ]
        page.get_by_role("button", name="Copy to environment").first.click()
        page.get_by_role("menuitem", name="production").click()
        with page.expect_response(journey.answered("PUT", r"/variants-batch$")):
            page.get_by_role("button", name=re.compile("Push to selected")).click()
        assert [v["name"] for v in api.environment(name, "production")["variants"]] == [
            "green",
            "yellow",
        ]
        journey.watch.assert_clean()
    finally:
        api.remove(name)


def test_tags_added_and_removed(journey: Journey) -> None:
    page, api = journey.page, journey.api
    name, tag = unique(), unique("tag")
    api.flag(name)
    try:
        journey.flag_page(name)
        page.get_by_role("button", name="Add tag").click()
        dialog = page.get_by_role("dialog")
        values = page.get_by_placeholder("Select values")
        values.click()
        values.fill(tag)
        with page.expect_response(journey.answered("POST", r"/api/admin/tags$")):
            page.get_by_role("option", name=f'Create new value "{tag}"').click()
        dialog.get_by_text("Update feature flag tags").click()  # closes the list
        with page.expect_response(journey.answered("PUT", rf"/features/{name}/tags$")):
            dialog.get_by_role("button", name="Save tags").click()
        assert [(t["type"], t["value"]) for t in api.tags(name)] == [("simple", tag)]
        chip = page.get_by_role("button", name=f"simple:{tag}")
        chip.locator("svg").click()
        with page.expect_response(journey.answered("DELETE", rf"/tags/simple/{tag}$")):
            page.get_by_role("dialog").get_by_role("button", name="Remove tag").click()
        assert api.tags(name) == []
        journey.watch.assert_clean()
    finally:
        api.remove(name)
        api.call("DELETE", f"/api/admin/tags/simple/{tag}")


def test_dependency_clone_and_event_log(journey: Journey) -> None:
    """The open-source UI offers no 'Add parent' (dependent features are Pro/Enterprise
    there), but shows a dependency made through the API and edits and deletes it."""
    page, api = journey.page, journey.api
    parent, child, clone = unique(), unique(), unique()
    api.flag(parent)
    api.flag(child)
    base = f"/api/admin/projects/{PROJECT}/features"
    api.ok("POST", f"{base}/{child}/dependencies", {"feature": parent, "enabled": True})
    try:
        journey.flag_page(child)
        page.locator(f"a[href$='/features/{parent}']").first.wait_for()  # Dependency: parent
        page.locator(f"#dependency-{child}-actions").click()
        page.get_by_role("menuitem", name="Edit").click()
        dialog = page.get_by_role("dialog")
        dialog.get_by_text("Add parent flag dependency").wait_for()
        dialog.get_by_role("combobox").filter(has_text="enabled").click()
        page.get_by_role("option", name="disabled", exact=True).click()
        with page.expect_response(journey.answered("POST", rf"/features/{child}/dependencies$")):
            dialog.get_by_role("button", name="Add").click()
        assert api.feature(child)["dependencies"] == [
            {"feature": parent, "enabled": False, "variants": []}
        ]
        page.locator(f"#dependency-{child}-actions").click()
        with page.expect_response(journey.answered("DELETE", rf"/features/{child}/dependencies$")):
            page.get_by_role("menuitem", name="Delete").click()
        assert api.feature(child)["dependencies"] == []
        # Clone: the copy page, validate, create.
        journey.flag_page(parent)
        page.locator("a[href$='/copy']:visible").first.click()
        page.wait_for_url(re.compile(r".*/copy$"))
        page.locator("main").get_by_label("Name").fill(clone)
        with page.expect_response(journey.answered("POST", rf"/features/{parent}/clone$")):
            page.get_by_role("button", name="Create from copy").click()
        page.wait_for_url(re.compile(rf".*/features/{clone}$"))
        assert api.feature(clone)["name"] == clone
        # The event log tab: this flag's events, as the event search gives them.
        with page.expect_response(journey.answered("GET", r"/api/admin/search/events$")) as found:
            page.get_by_role("tab", name="Event log").click()
        page.wait_for_url(re.compile(r".*/logs$"))
        assert f"feature=IS%3A{clone}" in found.value.url
        total = api.ok("GET", f"/api/admin/search/events?feature=IS%3A{clone}")["total"]
        assert total >= 1
        page.get_by_role("heading", name=f"Event log ({total})").wait_for()
        page.get_by_text("feature-created", exact=True).first.wait_for()
        journey.watch.assert_clean()
    finally:
        api.remove(child, parent, clone)


def test_archive_revive_and_delete(journey: Journey) -> None:
    page, api = journey.page, journey.api
    one, two, three = unique(), unique(), unique()
    for name in (one, two, three):
        api.flag(name)

    def archived() -> set[str]:
        found = api.ok("GET", f"/api/admin/archive/features/{PROJECT}")["features"]
        return {f["name"] for f in found} & {one, two, three}

    try:
        # Archived from its page (validated first: archive/validate).
        journey.flag_page(one)
        icon_button(page, "ArchiveOutlinedIcon").click()
        with page.expect_response(journey.answered("DELETE", rf"/features/{one}$")):
            page.get_by_role("dialog").get_by_role("button", name="Archive flag").click()
        page.wait_for_url(re.compile(rf".*/projects/{PROJECT}$"))
        assert archived() == {one}
        # Two more from the flag table, selected (bulk archive).
        page.get_by_placeholder("Search and Filter").fill(two[:3])
        for name in (two, three):
            flag_row(page, name).get_by_role("checkbox").first.check()
        page.get_by_role("button", name="Archive", exact=True).click()
        with page.expect_response(journey.answered("POST", rf"/projects/{PROJECT}/archive$")):
            page.get_by_role("dialog").get_by_role("button", name="Archive flags").click()
        journey.wait_until("three archived", lambda: archived() == {one, two, three})
        # The project's archive: one revived from its row.
        journey.goto(f"/projects/{PROJECT}/archive")
        row = flag_row(page, one)
        icon_button(row, "UndoIcon").click()
        with page.expect_response(journey.answered("POST", rf"/projects/{PROJECT}/revive$")):
            page.get_by_role("dialog").get_by_role("button", name="Revive feature flag").click()
        assert archived() == {two, three}
        assert api.feature(one)["archived"] is False
        # Two deleted at once, confirmed by typing.
        for name in (two, three):
            flag_row(page, name).get_by_role("checkbox").first.check()
        page.get_by_role("button", name="Delete", exact=True).click()
        dialog = page.get_by_role("dialog")
        dialog.get_by_placeholder("<deletion confirmation>").fill("I want to delete")
        with page.expect_response(journey.answered("POST", rf"/projects/{PROJECT}/delete$")):
            dialog.get_by_role("button", name=re.compile("Delete feature flag")).click()
        assert archived() == set()
        for name in (two, three):
            assert api.call("GET", f"/api/admin/projects/{PROJECT}/features/{name}")[0] == 404
        # The global archive page: the first archived again and deleted from its row.
        api.ok("DELETE", f"/api/admin/projects/{PROJECT}/features/{one}")
        journey.goto("/archive")
        icon_button(flag_row(page, one), "DeleteIcon").click()
        dialog = page.get_by_role("dialog")
        dialog.get_by_placeholder("<deletion confirmation>").fill("I want to delete")
        with page.expect_response(journey.answered("POST", rf"/projects/{PROJECT}/delete$")):
            dialog.get_by_role("button", name=re.compile("Delete feature flag")).click()
        assert api.call("GET", f"/api/admin/projects/{PROJECT}/features/{one}")[0] == 404
        assert archived() == set()
        journey.watch.assert_clean()
    finally:
        api.remove(one, two, three)


def create_in_dialog(journey: Journey, name: str) -> None:
    page = journey.page
    journey.goto(f"/projects/{PROJECT}")
    page.get_by_role("button", name="New feature flag").click()
    page.get_by_label("Feature flag name").fill(name)
    with page.expect_response(journey.answered("POST", r"/features/validate$")):
        page.get_by_label("Description (optional)").fill("the SDK's")
    with page.expect_response(journey.answered("POST", rf"/projects/{PROJECT}/features$")):
        page.get_by_role("dialog").get_by_role("button", name="Create feature flag").click()
    page.wait_for_url(re.compile(rf".*/projects/{PROJECT}/features/{name}$"))


def test_the_official_python_sdk_answers_as_configured_in_the_ui(
    journey: Journey, tmp_path: Path
) -> None:
    """Issue 42's example: a flag made in the dialog, a gradual rollout with a constraint
    (sessionId IN s-1) and a segment (userId IN alice, bob), enabled in development only;
    UnleashClient (the official Python SDK, with a development client token) then answers
    is_enabled as configured."""
    page, api = journey.page, journey.api
    name = unique()
    segment = api.segment(
        unique("seg"), [{"contextName": "userId", "operator": "IN", "values": ["alice", "bob"]}]
    )
    segment_name = api.ok("GET", f"/api/admin/segments/{segment}")["name"]
    token = api.ok(
        "POST",
        "/api/admin/api-tokens",
        {
            "tokenName": unique("sdk"),
            "type": "client",
            "environment": "development",
            "projects": ["*"],
        },
    )["secret"]
    try:
        create_in_dialog(journey, name)
        journey.flag_page(name)
        page.get_by_role("button", name="Add strategy", exact=True).first.click()  # development
        page.wait_for_url(re.compile(r".*/strategies/create\?.*environmentId=development"))
        add_targeting(journey, segment_name, "s-1", field="sessionId")
        with page.expect_response(
            journey.answered("POST", r"/environments/development/strategies$")
        ):
            page.get_by_role("button", name="Save strategy").click()
        page.wait_for_url(re.compile(rf".*/features/{name}$"))
        switch(journey, "development", on=True)
        assert api.environment(name, "development")["enabled"] is True
        assert api.environment(name, "production")["enabled"] is False
        journey.watch.assert_clean()
        answers = sdk_answers(journey, token, name, tmp_path)
        assert answers == {
            ("alice", "s-1"): True,  # in the segment, the constraint holds: 100% rollout
            ("bob", "s-1"): True,
            ("alice", "s-2"): False,  # the constraint fails
            ("carol", "s-1"): False,  # not in the segment
        }
    finally:
        api.remove(name)
        api.remove_segment(segment)
        api.call("DELETE", f"/api/admin/api-tokens/{token}")


def sdk_answers(
    journey: Journey, token: str, name: str, cache: Path
) -> dict[tuple[str, str], bool]:
    # Imported here, as the SDK tests' Sdk does it (its threads start only in this journey).
    from UnleashClient.clients.unleash_client import UnleashClient  # noqa: PLC0415
    from UnleashClient.events import BaseEvent, UnleashEventType  # noqa: PLC0415

    ready = threading.Event()

    def event(event: BaseEvent) -> None:
        if event.event_type == UnleashEventType.READY:
            ready.set()

    client = UnleashClient(
        url=f"{journey.target.url}/api",
        app_name=unique("browser-sdk"),
        environment="development",
        refresh_interval=1,
        disable_metrics=True,
        disable_registration=True,
        custom_headers={"Authorization": token},
        cache_directory=str(cache),
        event_callback=event,
    )
    client.initialize_client()
    try:
        assert ready.wait(20), "the SDK had no flags within 20 s"
        return {
            (user, session): bool(client.is_enabled(name, {"userId": user, "sessionId": session}))
            for user, session in [
                ("alice", "s-1"),
                ("bob", "s-1"),
                ("alice", "s-2"),
                ("carol", "s-1"),
            ]
        }
    finally:
        client.destroy()
