"""The playground page (issue 43): an environment picked, a context value entered, the
configuration tried; the table of flags shows each flag's result, and the one shown for the
journey's flag equals what the official Python SDK answers for the same context. Checked
through the API besides: the playground's own answer, as the UI asked for it."""

from __future__ import annotations

import json
import re
import urllib.request
from typing import TYPE_CHECKING, Any

import pytest

from tests.browser.ui import PROJECT, unique

if TYPE_CHECKING:
    from pathlib import Path

    from tests.browser.ui import Journey

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

APP = "playground"  # the appName the page puts in every context


def test_the_playground_shows_what_the_python_sdk_answers(journey: Journey, tmp_path: Path) -> None:
    page, api = journey.page, journey.api
    name = unique("pg")
    api.flag(name)
    base = f"/api/admin/projects/{PROJECT}/features/{name}/environments/development"
    api.ok("POST", f"{base}/strategies", {"name": "userWithId", "parameters": {"userIds": "alice"}})
    api.ok("POST", f"{base}/on")
    token = api.ok(
        "POST",
        "/api/admin/api-tokens",
        {"tokenName": unique("pg-sdk"), "type": "client", "environment": "development"},
    )["secret"]
    try:
        journey.goto("/playground")
        page.get_by_role("button", name="Try configuration").wait_for()
        page.get_by_role("combobox", name="Environments").click()
        page.get_by_role("option", name="production").click()
        page.keyboard.press("Escape")
        page.get_by_role("combobox", name="Context field").click()
        page.get_by_role("option", name="userId", exact=True).click()
        page.get_by_role("textbox", name="Value").fill("alice,bob")
        page.get_by_role("button", name="Add").click()
        with page.expect_response(journey.answered("POST", r"/api/admin/playground/advanced$")):
            page.get_by_role("button", name="Try configuration").click()
        row = page.get_by_role("row").filter(has=page.get_by_role("link", name=name, exact=True))
        row.wait_for()
        shown = {}
        for column, environment in ((2, "development"), (3, "production")):
            row.get_by_role("cell").nth(column).get_by_role("button").click()
            results = page.get_by_role("heading", name=environment, exact=True).locator("xpath=..")
            for user in ("alice", "bob"):
                line = results.get_by_role("row").filter(
                    has=page.get_by_role("cell", name=user, exact=True)
                )
                result = line.get_by_role("cell", name=re.compile(r"^(True|False)$"))
                shown[environment, user] = result.inner_text().strip() == "True"
            page.keyboard.press("Escape")
        sdk = sdk_answers(journey.target.url, token, name, tmp_path)
        assert shown == {
            ("development", "alice"): sdk["alice"],
            ("development", "bob"): sdk["bob"],
            ("production", "alice"): False,
            ("production", "bob"): False,
        }
        assert sdk == {"alice": True, "bob": False}
        journey.watch.assert_clean()
        page.screenshot(path="/work/wt/playground-shot.png")
        answer = api.ok(
            "POST",
            "/api/admin/playground",
            {"environment": "development", "context": {"appName": APP, "userId": "alice"}},
        )
        (found,) = [f for f in answer["features"] if f["name"] == name]
        assert found["isEnabled"] is True
    finally:
        api.remove(name)
        api.call("DELETE", f"/api/admin/api-tokens/{token}")


def sdk_answers(url: str, token: str, name: str, cache: Path) -> dict[str, bool]:
    """UnleashClient (the official Python SDK) with the flags a development client token
    reads, asked offline about alice and bob."""
    # Imported here, as the other journeys' SDK is (the browser extra may lack it elsewhere).
    from UnleashClient.cache import FileCache  # noqa: PLC0415
    from UnleashClient.clients.unleash_client import UnleashClient  # noqa: PLC0415

    request = urllib.request.Request(f"{url}/api/client/features", headers={"Authorization": token})
    with urllib.request.urlopen(request, timeout=20) as resp:
        features: Any = json.loads(resp.read())
    store = FileCache(unique("pg-cache"), directory=str(cache))
    store.bootstrap_from_dict(features)
    client = UnleashClient(
        url=f"{url}/api",
        app_name=APP,
        environment="development",
        disable_metrics=True,
        disable_registration=True,
        cache=store,
    )
    client.initialize_client(fetch_toggles=False)
    try:
        return {u: bool(client.is_enabled(name, {"userId": u})) for u in ("alice", "bob")}
    finally:
        client.destroy()
