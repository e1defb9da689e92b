"""Unleash's web UI, served by the service from the build `make install` fetched (.ui/), in
Debian's Chromium through Playwright: the sign-in page renders, sign-in from its form lands on
the dashboard, the welcome splash is dismissed once and for all, the page's security policy
refuses nothing the UI does, and sign-out from its HTML form leads back to the sign-in form.
Every answer of the operations this covers (service/admin_ui.py, the users' handlers) is 2xx
once signed in, and no answer of the service is a 5xx."""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING, Any

import pytest

from service.ui import DEFAULT_DIR
from tests.browser.test_page import CHROMIUM
from tests.factories import STRONG, create_user, settings_for

if TYPE_CHECKING:
    from pathlib import Path

    from aiohttp.test_utils import TestClient

    from service.settings import Settings

pytestmark = pytest.mark.browser

EMAIL = "browser@example.com"
NAME = "Browser Tester"
# What the UI calls at boot and sign-in that this covers: each must answer 2xx once signed in.
OURS = (
    "/api/admin/user",
    "/api/admin/ui-config",
    "/api/admin/splash/",
    "/api/admin/user/profile",
    "/auth/simple/login",
)


@pytest.fixture
def settings(dsn: str) -> Settings:
    """The real build (`make install`), not the tests' stand-in."""
    assert (DEFAULT_DIR / "build" / "index.html").is_file(), "run `make install` first"
    return settings_for(dsn, ui_dir=str(DEFAULT_DIR))


async def test_sign_in_boot_and_sign_out_in_chromium(
    client: TestClient[Any, Any], tmp_path: Path
) -> None:
    from playwright.async_api import async_playwright  # noqa: PLC0415 - the browser extra

    executable = shutil.which(CHROMIUM)
    assert executable is not None, "Chromium is needed: apt-get install chromium"
    await create_user(client, {"email": EMAIL, "name": NAME, "rootRole": 2, "password": STRONG})
    base = str(client.make_url("/")).rstrip("/")
    answers: list[tuple[str, str, int]] = []
    refused: list[str] = []  # what the page's security policy refused
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=executable, args=["--no-sandbox"]
        )
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 900})
            page.on(
                "response",
                lambda r: (
                    answers.append((r.request.method, r.url.removeprefix(base), r.status))
                    if r.url.startswith(base)
                    else None
                ),
            )
            page.on(
                "console",
                lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None,
            )
            await page.goto(base + "/")
            await page.wait_for_selector("#username", timeout=30_000)
            shot = tmp_path / "signin.png"
            await page.screenshot(path=str(shot))
            assert shot.stat().st_size > 20_000  # a rendered page, not a blank one
            assert await page.get_by_text("Log in to continue the great work").count() == 1
            signed_out = len(answers)

            await page.fill("#username", EMAIL)
            await page.fill("#password", STRONG)
            await page.click("button[type=submit]")
            await page.wait_for_url(base + "/personal", timeout=30_000)
            welcome = page.get_by_text("Got it, let's get started!")
            await welcome.wait_for(timeout=30_000)
            await welcome.click()
            await page.wait_for_timeout(1_000)
            await page.reload()
            await page.get_by_text("Dashboard").first.wait_for(timeout=30_000)
            await page.wait_for_timeout(2_000)
            assert await welcome.count() == 0  # dismissed for good: the splash was recorded

            await page.locator("[data-testid=HEADER_USER_AVATAR]").click()  # the user menu
            async with page.expect_navigation():
                await page.get_by_role("button", name="Log out").click()
            await page.wait_for_selector("#username", timeout=30_000)
            assert page.url == base + "/login"
        finally:
            await browser.close()
    assert refused == []
    check_answers(answers, signed_out)


def check_answers(answers: list[tuple[str, str, int]], signed_out: int) -> None:
    """No 5xx; signed out, the 401s that show the form; signed in, every answer of ours 2xx
    until the sign-out's 401."""
    assert all(status < 500 for *_, status in answers), answers
    before = {(m, p, s) for m, p, s in answers[:signed_out] if p.startswith("/api/")}
    assert {s for *_, s in before} == {401}  # signed out: the 401 that shows the form
    signed_in = [(m, p, s) for m, p, s in answers[signed_out:] if p.startswith(OURS)]
    assert ("POST", "/auth/simple/login", 200) in signed_in
    assert ("POST", "/api/admin/splash/personalDashboardKeyConcepts", 200) in signed_in
    after_sign_out = [a for a in signed_in if a[1] == "/api/admin/user"][-1]
    assert after_sign_out[2] == 401  # the user menu's form ended the session
    ours = signed_in[: signed_in.index(after_sign_out)]
    assert [a for a in ours if a[2] >= 300] == []
