"""The page at /docs/openapi/ in a real browser: Debian's Chromium, driven by Playwright.

`make browser-test` runs it (.ci/run installs Chromium when it is missing). With
SCREENSHOT=docs/openapi-page.png the screenshot is kept there (the one in docs/ was made so).
"""

from __future__ import annotations

import os
import shutil
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import msgspec
import pytest

if TYPE_CHECKING:
    from pathlib import Path

    from aiohttp.test_utils import TestClient

pytestmark = pytest.mark.browser

CHROMIUM = os.environ.get("CHROMIUM", "chromium")
PAGE = "/docs/openapi/"


async def test_the_page_lists_every_operation_with_nothing_from_elsewhere(
    client: TestClient[Any, Any], tmp_path: Path
) -> None:
    # Imported here: `make test` collects this module too (and deselects it), without the
    # browser extra installed.
    from playwright.async_api import async_playwright  # noqa: PLC0415

    executable = shutil.which(CHROMIUM)
    assert executable is not None, "Chromium is needed: apt-get install chromium"
    document = msgspec.json.decode(await (await client.get("/docs/openapi.json")).read())
    operations = [
        (method.upper(), path) for path, methods in document["paths"].items() for method in methods
    ]
    origin = urlsplit(str(client.make_url("/"))).netloc
    requested: list[str] = []
    problems: list[str] = []
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=executable, args=["--no-sandbox"]
        )
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 1400})
            page.on("request", lambda request: requested.append(request.url))
            page.on(
                "console",
                lambda message: problems.append(message.text) if message.type == "error" else None,
            )
            page.on("pageerror", lambda error: problems.append(str(error)))
            await page.goto(str(client.make_url(PAGE)))
            await page.wait_for_selector(".opblock", timeout=20_000)
            shot = tmp_path / "openapi-page.png"
            await page.screenshot(path=str(shot))  # the top: title, Authorize, first operations
            assert shot.stat().st_size > 20_000  # a rendered page, not a blank one
            if os.environ.get("SCREENSHOT"):
                shutil.copyfile(shot, os.environ["SCREENSHOT"])
            blocks = page.locator(".opblock")
            assert await blocks.count() == len(operations)
            shown = set()
            for i in range(await blocks.count()):
                block = blocks.nth(i)
                method = (await block.locator(".opblock-summary-method").inner_text()).strip()
                path = await block.locator(".opblock-summary-path").get_attribute("data-path")
                shown.add((method, path))
            assert shown == set(operations)
            # One operation opened: its answers, errors included, with their schemas.
            create = page.locator("#operations-Features-createFeature")
            await create.locator(".opblock-summary").click()
            await create.locator(".responses-table").first.wait_for(timeout=10_000)
            codes = await create.locator(".response-col_status").all_inner_texts()
            assert {"200", "400", "401", "403", "409", "503"} <= {c.strip() for c in codes}
            assert "CREATE_FEATURE" in await create.inner_text()
        finally:
            await browser.close()
    assert requested
    elsewhere = [url for url in requested if urlsplit(url).netloc != origin]
    assert elsewhere == []
    assert problems == []
