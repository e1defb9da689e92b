"""Journeys of issue 43's invite links and API tokens pages: an admin makes an invite link on
the users page, a new person opens it in a browser of their own, signs up and signs in; and an
API token made, listed and deleted on the API access page. Each checked through the API, on
ours and on the reference (tests/browser/ui.py's rules)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest

from tests.browser.ui import icon_button, unique
from tests.factories import STRONG

if TYPE_CHECKING:
    from tests.browser.ui import Journey

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

LINKS = "/api/admin/invite-link/tokens"
INVITE_URL = re.compile(r"https?://\S+/new-user\?invite=[0-9a-f]+")


def test_an_invite_link_signs_a_new_person_up(journey: Journey, fresh: Journey) -> None:
    page = journey.page
    # The UI offers to make a link when no enabled one is there: links other runs left (the
    # reference is shared) are disabled first, as the UI's "Delete link" does.
    for link in journey.api.ok("GET", LINKS)["tokens"]:
        if link["enabled"]:
            journey.api.ok("PUT", f"{LINKS}/{link['secret']}", {"enabled": False})
    journey.goto("/admin/users")
    page.get_by_role("button", name="Create invite link").click()
    page.wait_for_url(re.compile(r".*/admin/invite-link$"))
    with page.expect_response(journey.answered("POST", r"/api/admin/invite-link/tokens$")):
        page.locator("form").get_by_role("button", name="Create invite link").click()
    dialog = page.get_by_role("dialog", name="Invite link created")
    dialog.wait_for()
    shown = dialog.inner_text() + " ".join(
        dialog.locator("input").evaluate_all("e => e.map(i => i.value)")
    )
    found = INVITE_URL.search(shown)
    assert found is not None, shown
    url = found[0]
    page.screenshot(path="/work/wt/invites-shot.png")
    dialog.get_by_role("button", name="Close").click()
    page.wait_for_url(re.compile(r".*/admin/users$"))
    journey.watch.assert_clean()

    # The new person, in a browser of their own.
    email = f"{unique('invited')}@example.com"
    new = fresh.page
    new.goto(url.replace(re.match(r"https?://[^/]+", url)[0], fresh.target.url))  # type: ignore[index]
    new.locator("#email").fill(email)
    new.locator("#username").fill("Invited Person")
    new.get_by_placeholder("Password", exact=True).fill(STRONG)
    new.get_by_placeholder("Confirm password").fill(STRONG)
    submit = new.get_by_role("button", name="Submit")
    new.wait_for_function("b => !b.disabled", arg=submit.element_handle())
    with new.expect_response(fresh.answered("POST", r"/invite/[0-9a-f]+/signup$")) as answer:
        submit.click()
    assert answer.value.status == 201
    new.wait_for_url(re.compile(r".*/login\?invited=true$"))
    # Then signs in through the form.
    new.get_by_label("Username or email").fill(email)
    new.get_by_label("Password", exact=True).fill(STRONG)
    new.get_by_role("button", name="Sign in").click()
    new.wait_for_url(re.compile(r".*/personal$"))
    # Signed out at first, the sign-in page's first calls answer 401: provoked.
    for path in ("/api/admin/user", "/api/admin/ui-config", "/api/admin/projects"):
        fresh.watch.allow("GET", path, 401)
    fresh.watch.assert_clean()

    users = journey.api.ok("GET", "/api/admin/user-admin")["users"]
    (person,) = [u for u in users if u.get("email") == email]
    assert person["rootRole"] == 3  # a Viewer, as the link invites
    (link,) = [t for t in journey.api.ok("GET", LINKS)["tokens"] if t["enabled"]]
    assert [u["id"] for u in link["users"]] == [person["id"]]
    journey.api.ok("PUT", f"{LINKS}/{link['secret']}", {"enabled": False})
    journey.api.ok("DELETE", f"/api/admin/user-admin/{person['id']}")


def test_an_api_token_made_listed_and_deleted(journey: Journey) -> None:
    page = journey.page
    name = unique("tok")
    journey.goto("/admin/api")
    page.get_by_role("button", name="New API token").click()
    page.get_by_label("Token name").fill(name)
    with page.expect_response(journey.answered("POST", r"/api/admin/api-tokens$")):
        page.get_by_role("button", name="Create token").click()
    dialog = page.get_by_role("dialog", name="New token created")
    dialog.get_by_text("Your new token has been created successfully.").wait_for()
    dialog.get_by_role("button", name="Close").click()
    (made,) = journey.api.ok("GET", f"/api/admin/api-tokens/{name}")["tokens"]
    assert made["type"] == "client"
    row = page.locator("tbody tr").filter(has_text=name)
    row.wait_for()
    icon_button(row, "DeleteIcon").click()
    confirm = page.get_by_role("dialog", name="Confirm deletion")
    with page.expect_response(journey.answered("DELETE", r"/api/admin/api-tokens/")):
        confirm.get_by_role("button", name="Yes, I'm sure").click()
    row.wait_for(state="detached")
    journey.watch.assert_clean()
    assert journey.api.ok("GET", f"/api/admin/api-tokens/{name}") == {"tokens": []}
