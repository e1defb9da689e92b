"""Every page of the open-source UI's menus, opened one after another by a signed-in admin:
none of them may get an answer >= 400 or log a console error (issue 43: nothing a person
clicks hits a missing route). The journeys of each page's actions are the other
test_journeys_*.py files; this one holds the whole menu to the rule, on ours and on the
reference (`make browser-test-reference`), so that a page the reference serves cleanly is one
we serve cleanly.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

import pytest

from tests.browser.ui import PROJECT, unique

if TYPE_CHECKING:
    from tests.browser.ui import Journey

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

# The menus' pages (Unleash 6.10.1's routes, as its sidebar and admin menu link them). Left out:
# /admin/admin-invoices (hosted Unleash only: the reference answers its GET /api/admin/invoices
# 404 too). /insights and /environments are Enterprise pages: the open-source build shows its
# not-found page for them.
PAGES = (
    "/personal",
    "/projects",
    f"/projects/{PROJECT}",
    f"/projects/{PROJECT}/health",
    f"/projects/{PROJECT}/logs",
    f"/projects/{PROJECT}/archive",
    f"/projects/{PROJECT}/settings/environments",
    f"/projects/{PROJECT}/settings/api-access",
    f"/projects/{PROJECT}/settings/default-strategy",
    "/search",
    "/playground",
    "/applications",
    "/context",
    "/strategies",
    "/segments",
    "/tag-types",
    "/integrations",
    "/history",
    "/profile",
    "/profile/personal-api-tokens",
    "/admin/users",
    "/admin/invite-link",
    "/admin/service-accounts",
    "/admin/api",
    "/admin/roles",
    "/admin/groups",
    "/admin/auth",
    "/admin/instance",
    "/admin/network",
    "/admin/maintenance",
    "/admin/cors",
    "/admin/banners",
    "/admin/logins",
    "/admin/instance-privacy",
    "/admin/license",
)

# A flag's page and its tabs.
FLAG_TABS = ("", "/metrics", "/variants", "/logs", "/settings")

NOT_FOUND = "Ooops. That's a page we haven't toggled on yet."  # the UI's page for no route
RENDER_MS = 600
SETTLE_MS = 10_000  # the most a page waits for its calls to end (the UI then polls)


def _settle(journey: Journey) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError  # noqa: PLC0415

    # A page that keeps polling never idles: what it asked so far is what the watch judges.
    with contextlib.suppress(PlaywrightTimeoutError):
        journey.page.wait_for_load_state("networkidle", timeout=SETTLE_MS)


def _open(journey: Journey, path: str) -> None:
    """The page as a click on a menu link opens it: the UI's router moves, the app stays
    loaded (a reload per page would spend its seconds parsing the same bundle again)."""
    journey.page.evaluate(
        "path => { history.pushState({}, '', path);"
        " window.dispatchEvent(new PopStateEvent('popstate')); }",
        path,
    )
    # The router renders the page, which then asks for its data: give it that moment before
    # waiting for the network to be idle.
    journey.page.wait_for_timeout(RENDER_MS)


def test_every_menu_page_loads_without_an_error(journey: Journey) -> None:
    flag = unique("pages")
    journey.api.flag(flag)
    try:
        seen: dict[str, list[str]] = {}
        journey.goto("/personal")
        _settle(journey)
        for path in (*PAGES, *(f"/projects/{PROJECT}/features/{flag}{tab}" for tab in FLAG_TABS)):
            _open(journey, path)
            _settle(journey)
            if journey.page.get_by_text(NOT_FOUND).count():
                seen[path] = ["the UI's own not-found page (the path is not one of its pages)"]
            if wrong := journey.watch.unexpected():
                seen.setdefault(path, []).extend(wrong)
            for heard in (journey.watch.answers, journey.watch.failed, journey.watch.console):
                heard.clear()
        assert seen == {}, "pages that got an error:\n" + "\n".join(
            f"  {path}: {wrong}" for path, wrong in seen.items()
        )
    finally:
        journey.api.remove(flag)
