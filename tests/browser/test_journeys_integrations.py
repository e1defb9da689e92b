"""The journey of issue 45's integrations (Unleash's addons) in Unleash's own UI, at
/integrations: the providers listed, a webhook created to a receiver on this machine, edited,
switched off and on again, its delivery of a flag's creation seen in its events view, and
deleted. Each step checked through the admin API, with the rules of
tests/browser/test_journeys.py (no unprovoked answer >= 400, no console error), on ours and on
the reference. Ours runs with INTEGRATION_ALLOWED_NETWORKS=127.0.0.0/8 (conftest.py), or it
would refuse a receiver on 127.0.0.1."""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import pytest

from tests.browser.ui import unique

if TYPE_CHECKING:
    from collections.abc import Iterator

    from playwright.sync_api import FloatRect, Locator, Page

    from tests.browser.ui import Journey

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

ADDONS = "/api/admin/addons"
# The five providers ours offers (docs/integrations.md); the reference has slack-app besides.
PROVIDERS = ("webhook", "slack", "teams", "datadog", "new-relic")
# INTEGRATIONS_SHOT=page.png keeps the page with the configured webhook,
# INTEGRATION_EVENTS_SHOT=events.png its events view.
PAGE_SHOT = os.environ.get("INTEGRATIONS_SHOT")
EVENTS_SHOT = os.environ.get("INTEGRATION_EVENTS_SHOT")
REFERENCE_CACHE_SECONDS = 61  # Unleash's addon service memoizes the enabled ones for 60 s
SHOT_CLIP: FloatRect = {"x": 0, "y": 0, "width": 1400, "height": 900}  # the size of docs/ui-*.png


@dataclass
class Receiver:
    """A webhook receiver on 127.0.0.1: it answers 200 and keeps each body."""

    url: str
    bodies: list[Any] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def received(self) -> list[Any]:
        with self.lock:
            return list(self.bodies)


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    found = Receiver(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with found.lock:
                found.bodies.append(json.loads(raw))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
            return  # the test's output stays quiet

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    found.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def pick_event(page: Page, event: str) -> None:
    """Ticks one more event in the form's events selector (an autocomplete)."""
    box = page.get_by_test_id("select-event-input").locator("input")
    box.click()
    box.fill(event)
    page.get_by_role("option", name=event, exact=True).click()
    page.keyboard.press("Escape")


def card(page: Page, addon_id: int) -> Locator:
    """The configured integration's card on /integrations (a link to its edit page)."""
    return page.locator(f"a[href='/integrations/edit/{addon_id}']")


def card_menu(page: Page, addon_id: int, item: str) -> None:
    """The card's menu ("More actions"), then one of its items."""
    card(page, addon_id).get_by_role("button", name="More actions").click()
    page.get_by_role("menuitem", name=item).click()


def edit_page(journey: Journey, addon_id: int) -> None:
    journey.page.goto(f"{journey.target.url}/integrations/edit/{addon_id}")
    journey.page.get_by_role("heading", name="Update Webhook integration").wait_for()


def back_at_the_list(journey: Journey) -> None:
    """After a save the UI goes back to /integrations, where its list may still be what the
    form's page loaded: the UI asks again only when its last ask is 2 s old (SWR's
    deduplication; so on both targets). Loaded anew, the list shows the change."""
    journey.page.wait_for_url(f"{journey.target.url}/integrations")
    journey.goto("/integrations")
    journey.page.get_by_role("heading", name="Configured integrations").wait_for()


def update(journey: Journey, addon_id: int) -> dict[str, Any]:
    """Submits the edit form; the integration as the API shows it afterwards."""
    page = journey.page
    with page.expect_response(journey.answered("PUT", rf"{ADDONS}/{addon_id}$")) as put:
        page.get_by_role("button", name="Update", exact=True).click()
    assert put.value.status < 300, put.value.text()
    back_at_the_list(journey)
    found: dict[str, Any] = journey.api.ok("GET", f"{ADDONS}/{addon_id}")
    return found


def see_the_providers(journey: Journey) -> None:
    """Each of ours a card of the page's "Unleash crafted" section, opening its form."""
    page = journey.page
    providers = {p["name"]: p["displayName"] for p in journey.api.ok("GET", ADDONS)["providers"]}
    journey.goto("/integrations")
    page.get_by_role("heading", name="Unleash crafted").wait_for()
    for name in PROVIDERS:
        offered = page.locator(f"a[href='/integrations/create/{name}']")
        offered.get_by_text(providers[name], exact=True).wait_for()


def create_a_webhook(journey: Journey, url: str, description: str) -> int:
    """From its provider's card, for flags created. The new integration's id."""
    page = journey.page
    page.locator("a[href='/integrations/create/webhook']").click()
    page.get_by_role("heading", name="Create Webhook integration").wait_for()
    page.get_by_label("Webhook URL").fill(url)
    page.get_by_label("Description", exact=True).fill(description)
    pick_event(page, "feature-created")
    with page.expect_response(journey.answered("POST", rf"{ADDONS}$")) as posted:
        page.get_by_role("button", name="Create", exact=True).click()
    assert posted.value.status < 300, posted.value.text()
    addon_id = int(posted.value.json()["id"])
    back_at_the_list(journey)
    card(page, addon_id).get_by_text(description).wait_for()
    card(page, addon_id).get_by_text("Enabled", exact=True).wait_for()
    saved = journey.api.ok("GET", f"{ADDONS}/{addon_id}")
    assert (saved["provider"], saved["enabled"], saved["events"]) == (
        "webhook",
        True,
        ["feature-created"],
    )
    assert saved["parameters"]["url"] == "*****"  # the webhook's URL is a secret
    return addon_id


def edit(journey: Journey, addon_id: int, description: str) -> None:
    """From its card: another description and one more event."""
    page = journey.page
    card(page, addon_id).click()
    page.get_by_role("heading", name="Update Webhook integration").wait_for()
    page.get_by_label("Description", exact=True).fill(description)
    pick_event(page, "feature-archived")
    saved = update(journey, addon_id)
    assert saved["description"] == description
    assert sorted(saved["events"]) == ["feature-archived", "feature-created"]
    card(page, addon_id).get_by_text(description).wait_for()


def switch_off_and_on(journey: Journey, addon_id: int) -> None:
    """Off with the switch of its page, on again from its card's menu."""
    page = journey.page
    edit_page(journey, addon_id)
    page.get_by_role("checkbox", name="Enabled").click()
    page.get_by_text("Disabled", exact=True).wait_for()
    assert update(journey, addon_id)["enabled"] is False
    card(page, addon_id).get_by_text("Disabled", exact=True).wait_for()
    before = journey.api.ok("GET", f"{ADDONS}/{addon_id}")
    card_menu(page, addon_id, "Enable")
    dialog = page.get_by_role("dialog").filter(has_text="Enable integration?")
    with page.expect_response(journey.answered("PUT", rf"{ADDONS}/{addon_id}$")) as put:
        dialog.get_by_role("button", name="Yes, I'm sure").click()
    assert put.value.status < 300, put.value.text()
    card(page, addon_id).get_by_text("Enabled", exact=True).wait_for()
    # The menu saves the integration as the list showed it: all else as it was.
    assert journey.api.ok("GET", f"{ADDONS}/{addon_id}") == before | {"enabled": True}


def see_the_delivery(journey: Journey, addon_id: int, description: str, flag: str) -> None:
    """The delivery of the flag's creation: its state on the card, and the events view."""
    page = journey.page
    journey.wait_until(
        "the delivery is recorded",
        lambda: bool(journey.api.ok("GET", f"{ADDONS}/{addon_id}/events")["integrationEvents"]),
    )
    (delivery,) = journey.api.ok("GET", f"{ADDONS}/{addon_id}/events")["integrationEvents"]
    assert (delivery["state"], delivery["event"]["type"]) == ("success", "feature-created")
    assert delivery["event"]["featureName"] == flag
    # The card shows its last event's state (the UI asks every 5 s). Loaded anew: no toast.
    journey.goto("/integrations")
    card(page, addon_id).locator("[data-testid=CheckCircleOutlineIcon]").wait_for()
    if PAGE_SHOT:
        page.mouse.move(0, 0)  # no card lit by the pointer
        page.screenshot(path=PAGE_SHOT, clip=SHOT_CLIP)
    card_menu(page, addon_id, "View events")
    title = f"Events: webhook - {description} (id: {addon_id})"
    events = page.get_by_test_id("SIDEBAR_MODAL_ID")  # Unleash's side panel
    events.get_by_role("heading", name=title).wait_for()
    events.get_by_text(delivery["stateDetails"], exact=True).wait_for()
    events.get_by_role("link", name="feature-created").wait_for()
    events.get_by_text('"contentType"').wait_for()  # the request, in a JSON viewer
    if EVENTS_SHOT:
        page.screenshot(path=EVENTS_SHOT, clip=SHOT_CLIP)
    events.get_by_role("button", name="Close", exact=True).click()
    events.wait_for(state="hidden")


def delete(journey: Journey, addon_id: int) -> None:
    """From its page; the list shows it no more."""
    page = journey.page
    edit_page(journey, addon_id)
    page.get_by_role("button", name="Delete integration").click()
    dialog = page.get_by_role("dialog").filter(has_text="Confirm deletion")
    with page.expect_response(journey.answered("DELETE", rf"{ADDONS}/{addon_id}$")) as gone:
        dialog.get_by_role("button", name="Yes, I'm sure").click()
    assert gone.value.status < 300, gone.value.text()
    page.get_by_role("heading", name="Unleash crafted").wait_for()
    card(page, addon_id).wait_for(state="detached")
    assert journey.api.call("GET", f"{ADDONS}/{addon_id}")[0] == 404


def test_a_webhook_created_edited_switched_delivering_and_deleted(
    journey: Journey, receiver: Receiver
) -> None:
    description, flag = unique("hook"), unique("hooked")
    made: list[int] = []
    try:
        see_the_providers(journey)
        addon_id = create_a_webhook(journey, receiver.url, description)
        made.append(addon_id)
        description = f"{description} (edited)"
        edit(journey, addon_id, description)
        switch_off_and_on(journey, addon_id)
        # A change it delivers: the receiver is told of the flag.
        if journey.target.name == "reference":
            # The reference reads its enabled integrations through a cache kept a minute and
            # sends an event only to those the cache holds: one taken while this one was off
            # must be gone first. Ours follows the log.
            time.sleep(REFERENCE_CACHE_SECONDS)
        journey.api.flag(flag)
        journey.wait_until(
            "the receiver is told of the flag",
            lambda: any(flag in json.dumps(body) for body in receiver.received()),
            timeout=30,
        )
        see_the_delivery(journey, addon_id, description, flag)
        delete(journey, addon_id)
        made.remove(addon_id)
        journey.watch.assert_clean()
    finally:
        for addon in made:
            journey.api.call("DELETE", f"{ADDONS}/{addon}")
        journey.api.remove(flag)
