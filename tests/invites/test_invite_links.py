"""Invite links (Unleash's public signup tokens): the admin routes, the public routes of the
new-user page, their events, and a sign-in by the person who signed up."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from projections.verify import verify
from service.appkeys import POOL
from service.auth import hash_secret
from service.invites import domain
from service.invites.commands import CreateInviteLink, UpdateInviteLink
from tests.factories import ADMIN, STRONG, api_token, create_user, error, event_count, ok, sign_in

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

LINKS = "/api/admin/invite-link/tokens"
NOW = datetime(2026, 12, 2, 17, 0, tzinfo=UTC)


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


async def create_link(client: Client, name: str = "default", days: float = 2) -> dict[str, Any]:
    expires = datetime.now(UTC) + timedelta(days=days)
    body = {"name": name, "expiresAt": iso(expires)}
    created: dict[str, Any] = await ok(await client.post(LINKS, json=body, headers=ADMIN), 201)
    return created


async def sign_up(client: Client, secret: str, email: str = "new@example.com") -> Any:
    body = {"name": "New Person", "email": email, "password": STRONG}
    return await client.post(f"/invite/{secret}/signup", json=body)


async def test_a_link_is_made_listed_and_shown_once(client: Client, app: web.Application) -> None:
    link = await create_link(client)
    secret = link["secret"]
    assert len(secret) == 64
    assert link["url"].endswith(f"/new-user?invite={secret}")
    assert link["name"] == "default"
    assert link["enabled"] is True
    assert link["role"] == {"id": 3, "name": "Viewer", "type": "root"}
    assert link["users"] == []
    assert link["createdBy"] == "admin"  # the admin token's name
    assert await event_count(app, "InviteLinkCreated") == 1
    # The list names the link by its secret's hash; the url shows only its first characters.
    listed = (await ok(await client.get(LINKS, headers=ADMIN)))["tokens"]
    assert [t["secret"] for t in listed] == [hash_secret(secret)]
    assert listed[0]["url"].endswith(f"/new-user?invite={secret[:4]}********")
    assert {k: v for k, v in listed[0].items() if k not in {"secret", "url"}} == {
        k: v for k, v in link.items() if k not in {"secret", "url"}
    }
    # Either name finds it on the admin routes.
    for key in (secret, hash_secret(secret)):
        found = await ok(await client.get(f"{LINKS}/{key}", headers=ADMIN))
        assert found["secret"] == hash_secret(secret)
    # No event holds the secret.
    async with app[POOL].acquire() as conn:
        data = await conn.fetch("SELECT data::text FROM events")
    assert all(secret not in row[0] for row in data)


async def test_expiry_is_capped_at_a_month(client: Client) -> None:
    link = await create_link(client, days=400)
    expires = datetime.fromisoformat(link["expiresAt"])
    assert expires - datetime.now(UTC) < timedelta(days=32)


async def test_create_validation(client: Client) -> None:
    await error(await client.post(LINKS, json={"name": "x"}, headers=ADMIN), 400, "ValidationError")
    body = {"expiresAt": iso(NOW)}
    await error(await client.post(LINKS, json=body, headers=ADMIN), 400, "ValidationError")
    body = {"name": "  ", "expiresAt": iso(NOW)}
    await error(await client.post(LINKS, json=body, headers=ADMIN), 400, "ValidationError")
    body = {"name": "x", "expiresAt": "2030-01-01T00:00:00"}  # no time zone
    await error(await client.post(LINKS, json=body, headers=ADMIN), 400, "ValidationError")


async def test_admin_routes_need_admin(client: Client) -> None:
    viewer = await create_user(client, {"email": "v@example.com", "password": STRONG})
    _, cookie = await sign_in(client, viewer["email"])
    headers = {"Cookie": f"unleash-session={cookie}"}
    await error(await client.get(LINKS, headers=headers), 403, "NoAccessError")
    body = {"name": "x", "expiresAt": iso(NOW)}
    await error(await client.post(LINKS, json=body, headers=headers), 403, "NoAccessError")
    client_token = await api_token(client)
    headers = {"Authorization": client_token["secret"]}
    await error(await client.get(LINKS, headers=headers), 403, "NoAccessError")


async def test_update_and_expire(client: Client, app: web.Application) -> None:
    link = await create_link(client)
    url = f"{LINKS}/{hash_secret(link['secret'])}"  # as the UI names it: from the list
    later = iso(datetime.now(UTC) + timedelta(days=5))
    updated = await ok(await client.put(url, json={"expiresAt": later}, headers=ADMIN))
    assert datetime.fromisoformat(updated["expiresAt"]) == datetime.fromisoformat(later)
    assert await event_count(app, "InviteLinkUpdated") == 1
    # The same again changes nothing and writes nothing.
    await ok(await client.put(url, json={"expiresAt": later}, headers=ADMIN))
    assert await event_count(app, "InviteLinkUpdated") == 1
    assert (await client.get(f"/invite/{link['secret']}/validate")).status == 200
    # Expiring it (the UI's "Delete link"): the new-user page no longer accepts it.
    now = iso(datetime.now(UTC))
    await ok(await client.put(url, json={"expiresAt": now}, headers=ADMIN))
    await error(await client.get(f"/invite/{link['secret']}/validate"), 400, "ValidationError")
    await error(await sign_up(client, link["secret"]), 400, "ValidationError")
    # Disabled likewise.
    other = await create_link(client, "other")
    await ok(await client.put(f"{LINKS}/{other['secret']}", json={"enabled": False}, headers=ADMIN))
    await error(await client.get(f"/invite/{other['secret']}/validate"), 400, "ValidationError")
    assert await event_count(app, "InviteLinkUpdated") == 3
    await error(await client.put(url, json={}, headers=ADMIN), 400, "ValidationError")
    missing = f"{LINKS}/nope"
    await error(
        await client.put(missing, json={"enabled": True}, headers=ADMIN), 404, "NotFoundError"
    )
    await error(await client.get(missing, headers=ADMIN), 404, "NotFoundError")


async def test_sign_up_then_sign_in(client: Client, app: web.Application) -> None:
    link = await create_link(client)
    assert (await client.get(f"/invite/{link['secret']}/validate")).status == 200
    user = await ok(await sign_up(client, link["secret"]), 201)
    assert user["email"] == "new@example.com"
    assert user["name"] == "New Person"
    assert user["rootRole"] == 3
    assert await event_count(app, "InviteLinkUsed") == 1
    assert await event_count(app, "UserCreated") == 1
    resp, cookie = await sign_in(client, "new@example.com")
    assert resp.status == 200
    assert cookie
    found = await ok(await client.get(f"{LINKS}/{link['secret']}", headers=ADMIN))
    assert [u["email"] for u in found["users"]] == ["new@example.com"]
    # The same e-mail again is taken; a weak password is refused; neither writes anything.
    await error(await sign_up(client, link["secret"]), 409, "NameExistsError")
    body = {"name": "W", "email": "weak@example.com", "password": "weak"}
    resp = await client.post(f"/invite/{link['secret']}/signup", json=body)
    assert resp.status == 400
    body = {"name": "W", "email": "not-an-email", "password": STRONG}
    await error(
        await client.post(f"/invite/{link['secret']}/signup", json=body), 400, "ValidationError"
    )
    await error(
        await client.post(f"/invite/{link['secret']}/signup", json={"email": "a@b.co"}),
        400,
        "ValidationError",
    )
    assert await event_count(app, "InviteLinkUsed") == 1
    # Only the secret signs up: the hash the list shows does not.
    await error(
        await sign_up(client, hash_secret(link["secret"]), "x@example.com"), 400, "ValidationError"
    )
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok


async def test_unknown_links_are_refused(client: Client) -> None:
    await error(await client.get("/invite/nope/validate"), 400, "ValidationError")
    await error(await sign_up(client, "nope"), 400, "ValidationError")


@given(days=st.floats(min_value=-3650, max_value=3650, allow_nan=False))
def test_created_links_expire_within_a_month(days: float) -> None:
    cmd = CreateInviteLink(name="x", expires_at=NOW + timedelta(days=days))
    event = domain.create_invite_link(cmd, link_id=1, secret="ab" * 32, now=NOW)
    assert event.expires_at <= NOW + timedelta(days=31)
    assert event.expires_at == min(cmd.expires_at, domain.a_month_after(NOW))
    assert event.root_role == domain.VIEWER
    assert event.secret_hash == hash_secret("ab" * 32)


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        (datetime(2026, 1, 31, tzinfo=UTC), datetime(2026, 2, 28, tzinfo=UTC)),
        (datetime(2026, 12, 15, tzinfo=UTC), datetime(2027, 1, 15, tzinfo=UTC)),
    ],
)
def test_a_month_after(moment: datetime, expected: datetime) -> None:
    assert domain.a_month_after(moment) == expected


def test_update_decisions() -> None:
    link = domain.Link(id=1, root_role=3, enabled=True, expires_at=NOW)
    assert domain.update_invite_link(link, UpdateInviteLink(enabled=True)) is None
    event = domain.update_invite_link(link, UpdateInviteLink(enabled=False))
    assert event is not None
    assert (event.enabled, event.expires_at) == (False, NOW)
