"""Journeys of issue 43's event log and reference-data admin pages in Unleash's own UI: the
event log page (/history) searched by a flag and by a tag, a flag's event log tab, and the
segments, context fields, strategy types and tag types pages, each creating one and seeing it
listed. Each is checked through the admin API, with the rules of tests/browser/test_journeys.py
(no unprovoked answer >= 400, no console error), on ours and on the reference."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

import pytest

from tests.browser.ui import PROJECT, unique

if TYPE_CHECKING:
    from collections.abc import Callable

    from playwright.sync_api import Locator, Response

    from tests.browser.ui import Journey

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]
SHOT = Path(__file__).resolve().parents[3] / "events-shot.png"


def searching(journey: Journey, part: str) -> Callable[[Response], bool]:
    """The target's answer to an event search whose query string has this part."""
    answered = journey.answered("GET", r"/search/events$")
    return lambda response: answered(response) and part in response.url


def shows(where: Locator, text: str, *, end: bool = False) -> Callable[[], bool]:
    """Whether the element's text holds (or ends with) the text, asked when called."""
    if end:
        return lambda: str(where.inner_text()).endswith(text)
    return lambda: text in str(where.inner_text())


def test_the_event_log_page_searched_by_flag_and_tag_and_a_flag_s_tab(journey: Journey) -> None:
    page, api = journey.page, journey.api
    name, tag = unique("ev"), unique("evtag")
    api.flag(name)
    api.ok("POST", f"/api/admin/features/{name}/tags", {"type": "simple", "value": tag})
    base = f"/api/admin/projects/{PROJECT}/features/{name}/environments/development"
    api.ok("POST", f"{base}/strategies", {"name": "default"})
    try:
        with page.expect_response(journey.answered("GET", r"/search/events$")):
            journey.goto("/history")
        heading = page.get_by_text(re.compile(r"^Event log \(\d+\)$")).first
        heading.wait_for()
        rows = page.locator("main")
        for text, kind in ((name, "feature-created"), (tag, "feature-tagged")):
            with page.expect_response(searching(journey, f"query={quote(text)}")) as searched:
                page.get_by_placeholder("Search").first.fill(text)
            total = int(searched.value.json()["total"])
            checked = api.ok("GET", f"/api/admin/search/events?query={quote(text)}&limit=1")
            assert total == checked["total"] >= 1
            journey.wait_until(
                f"the heading counts {total}", shows(heading, f"({total})", end=True)
            )
            journey.wait_until(f"a {kind} row", shows(rows, kind))
            assert name in rows.inner_text()  # the rows' flag
        if journey.target.name == "ours":
            page.screenshot(path=os.environ.get("EVENTS_SHOT", str(SHOT)))
        # A flag's event log tab: that flag's events only.
        journey.goto(f"/projects/{PROJECT}/features/{name}")
        page.get_by_role("heading", name=name).first.wait_for()
        with page.expect_response(searching(journey, f"feature=IS%3A{name}")) as searched:
            page.get_by_role("tab", name="Event log").click()
        mine = api.ok("GET", f"/api/admin/search/events?feature=IS:{name}")
        assert {e["featureName"] for e in mine["events"]} == {name}
        assert int(searched.value.json()["total"]) == mine["total"] == 3
        tab = page.locator("main")
        for kind in ("feature-created", "feature-tagged", "feature-strategy-add"):
            journey.wait_until(f"a {kind} row", shows(tab, kind))
        journey.watch.assert_clean()
    finally:
        api.remove(name)


def test_segments_context_fields_strategy_types_and_tag_types_admin(journey: Journey) -> None:
    page, api = journey.page, journey.api
    segment, field, strategy, tag_type = (
        unique("seg"),
        unique("ctx"),
        unique("strat"),
        unique("tagtype"),
    )
    try:
        journey.goto("/segments/create")
        page.get_by_label("Segment name").fill(segment)
        page.get_by_role("button", name="Next").click()
        with page.expect_response(journey.answered("POST", r"/api/admin/segments$")):
            page.get_by_role("button", name="Create segment").click()
        page.get_by_text(segment, exact=True).first.wait_for()  # the segments list
        segments = api.ok("GET", "/api/admin/segments")["segments"]
        assert segment in [s["name"] for s in segments]

        journey.goto("/context/create")
        page.get_by_label("Context name").fill(field)
        with page.expect_response(journey.answered("POST", r"/api/admin/context$")):
            page.get_by_role("button", name="Create context").click()
        page.get_by_text(field, exact=True).first.wait_for()
        assert api.ok("GET", f"/api/admin/context/{field}")["name"] == field

        journey.goto("/strategies/create")
        page.get_by_label("Strategy name").fill(strategy)
        with page.expect_response(journey.answered("POST", r"/api/admin/strategies$")):
            page.get_by_role("button", name="Create strategy").click()
        page.get_by_text(strategy, exact=True).first.wait_for()
        assert api.ok("GET", f"/api/admin/strategies/{strategy}")["name"] == strategy

        journey.goto("/tag-types/create")
        page.get_by_label("Tag name").fill(tag_type)
        with page.expect_response(journey.answered("POST", r"/api/admin/tag-types$")):
            page.get_by_role("button", name="Create type").click()
        page.get_by_text(tag_type, exact=True).first.wait_for()
        assert api.ok("GET", f"/api/admin/tag-types/{tag_type}")["tagType"]["name"] == tag_type
        journey.watch.assert_clean()
    finally:
        for made in api.ok("GET", "/api/admin/segments")["segments"]:
            if made["name"] == segment:
                api.remove_segment(int(made["id"]))
        api.call("DELETE", f"/api/admin/context/{field}")
        api.call("DELETE", f"/api/admin/strategies/{strategy}")
        api.call("DELETE", f"/api/admin/tag-types/{tag_type}")
