"""Integrations over Unleash's API (/api/admin/addons): configured, shown with their secrets
masked, changed, deleted with their key; their receivers' addresses checked."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec
import pytest

from eventlog.privacy import master
from eventlog.privacy.crypto import MasterKey
from eventlog.privacy.keys import Masters
from projections.verify import verify
from service.addons import secrets
from service.app import create_app
from service.appkeys import POOL
from service.privacy.admin import rotate_master_key
from tests.conftest import ServiceTestServer, resolve_with_test_principals
from tests.factories import ADMIN, error, event_count, ok, settings_for

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    from tests.conftest import AiohttpClient

    Client = TestClient[Any, Any]

ADDONS = "/api/admin/addons"
HOOK = "http://127.0.0.1:9/hook"
SECRET_AUTH = "Bearer do-not-show-me-4711"


def webhook(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "provider": "webhook",
        "enabled": True,
        "description": "the deploy bot",
        "parameters": {"url": HOOK, "authorization": SECRET_AUTH},
        "events": ["feature-created"],
        "projects": [],
        "environments": [],
    }
    return body | overrides


async def create(client: Client, body: dict[str, Any] | None = None) -> dict[str, Any]:
    made: dict[str, Any] = await ok(
        await client.post(ADDONS, json=body or webhook(), headers=ADMIN), 201
    )
    return made


async def test_the_list_has_the_providers_and_no_integration_at_first(client: Client) -> None:
    listed = await ok(await client.get(ADDONS, headers=ADMIN))
    assert listed["addons"] == []
    names = [p["name"] for p in listed["providers"]]
    assert names == ["webhook", "slack", "teams", "datadog", "new-relic"]
    webhook_def = listed["providers"][0]
    assert {p["name"] for p in webhook_def["parameters"]} >= {"url", "authorization"}


async def test_secrets_are_masked_everywhere_and_the_signing_secret_shown_once(
    client: Client, app: web.Application
) -> None:
    made = await create(client)
    assert made["parameters"]["url"] == "*****"
    assert made["parameters"]["authorization"] == "*****"
    signing = made["parameters"]["signingSecret"]
    assert len(signing) >= 32
    assert signing != "*****"
    shown = await ok(await client.get(f"{ADDONS}/{made['id']}", headers=ADMIN))
    assert shown["parameters"] == {
        "authorization": "*****",
        "signingSecret": "*****",
        "url": "*****",
    }
    assert shown["events"] == ["feature-created"]
    listed = (await ok(await client.get(ADDONS, headers=ADMIN)))["addons"]
    assert listed == [shown]
    # Not in the log, nor in the read model, nor in the event log's answers.
    async with app[POOL].acquire() as conn:
        stored = "\n".join(
            r["t"] for r in await conn.fetch("SELECT data::text || metadata::text AS t FROM events")
        )
        model = await conn.fetchval("SELECT row_to_json(a)::text FROM addons a")
    for secret in (SECRET_AUTH, signing, "127.0.0.1:9"):
        assert secret not in stored
        assert secret not in model
    log = await (await client.get("/api/admin/events", headers=ADMIN)).text()
    assert SECRET_AUTH not in log
    assert signing not in log
    created = (await (await client.get("/api/admin/events", headers=ADMIN)).json())["events"][0]
    assert created["type"] == "addon-config-created"
    assert created["data"]["provider"] == "webhook"
    assert "parameters" not in created["data"]


async def test_a_masked_secret_keeps_its_value_and_an_unchanged_save_appends_nothing(
    client: Client, app: web.Application
) -> None:
    made = await create(client)
    path = f"{ADDONS}/{made['id']}"
    masked = webhook(
        parameters={"url": "*****", "authorization": "*****", "signingSecret": "*****"}
    )
    before = await event_count(app)
    again = await ok(await client.put(path, json=masked, headers=ADMIN))
    assert again["parameters"]["url"] == "*****"
    assert await event_count(app) == before
    # A change appends one event; the secrets kept are the ones stored.
    changed = await ok(
        await client.put(path, json=masked | {"description": "renamed"}, headers=ADMIN)
    )
    assert changed["description"] == "renamed"
    assert await event_count(app, "AddonUpdated") == 1
    async with app[POOL].acquire() as conn:
        key = await secrets.key_of(conn, made["id"])
        sealed = await conn.fetchval("SELECT sealed::text FROM addons WHERE id = $1", made["id"])
    opened = secrets.opened(key, made["id"], msgspec.json.decode(sealed))
    assert opened["url"] == HOOK
    assert opened["authorization"] == SECRET_AUTH
    assert opened["signingSecret"] == made["parameters"]["signingSecret"]
    updated = (await (await client.get("/api/admin/events", headers=ADMIN)).json())["events"][0]
    assert updated["type"] == "addon-config-updated"
    assert updated["preData"]["description"] == "the deploy bot"
    assert updated["data"]["description"] == "renamed"


async def test_a_given_signing_secret_is_kept_and_never_shown(client: Client) -> None:
    body = webhook()
    body["parameters"] = body["parameters"] | {"signingSecret": "my-own-signing-secret"}
    made = await create(client, body)
    assert made["parameters"]["signingSecret"] == "my-own-signing-secret"
    shown = await ok(await client.get(f"{ADDONS}/{made['id']}", headers=ADMIN))
    assert shown["parameters"]["signingSecret"] == "*****"


@pytest.mark.parametrize(
    ("url", "rule"),
    [
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://[fe80::1]/hook", "link-local"),
        ("http://10.1.2.3/hook", "private"),
        ("ftp://example.com/hook", "http"),
        ("http://user:pw@127.0.0.1/hook", "password"),
    ],
)
async def test_a_receiver_the_rules_refuse_is_a_400_naming_the_rule(
    client: Client, app: web.Application, url: str, rule: str
) -> None:
    body = webhook(parameters={"url": url})
    message = await error(
        await client.post(ADDONS, json=body, headers=ADMIN), 400, "ValidationError"
    )
    assert rule in message.lower(), message
    assert await event_count(app, "AddonCreated") == 0


async def test_an_update_to_a_refused_receiver_changes_nothing(
    client: Client, app: web.Application
) -> None:
    made = await create(client)
    body = webhook(parameters={"url": "http://169.254.169.254/"})
    await error(
        await client.put(f"{ADDONS}/{made['id']}", json=body, headers=ADMIN), 400, "ValidationError"
    )
    assert await event_count(app, "AddonUpdated") == 0


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (webhook(provider="carrier-pigeon"), "Unknown addon provider carrier-pigeon"),
        (webhook(parameters={}), "Missing required parameters: url"),
        (webhook(parameters={"url": HOOK, "colour": "red"}), "Unknown parameters for webhook"),
        (webhook(events=["feature-created", "made-up"]), "webhook does not send made-up"),
        (
            {"provider": "webhook", "enabled": True, "parameters": {"url": HOOK}},
            "missing required field `events`",
        ),
        # Required as in Unleash: a save without them must not switch an integration on.
        (
            {"provider": "webhook", "parameters": {"url": HOOK}, "events": []},
            "missing required field `enabled`",
        ),
        ({"provider": "webhook", "enabled": False, "events": []}, "`parameters`"),
        (webhook(parameters={"url": HOOK, "contentType": 5}), "Expected `str`, got `int`"),
        (webhook(parameters={"url": HOOK, "bodyTemplate": True}), "Expected `str`, got `bool`"),
    ],
)
async def test_a_wrong_configuration_is_a_400(
    client: Client, body: dict[str, Any], said: str
) -> None:
    message = await error(
        await client.post(ADDONS, json=body, headers=ADMIN), 400, "ValidationError"
    )
    assert said in message


async def test_the_provider_of_an_integration_never_changes(client: Client) -> None:
    made = await create(client)
    body = webhook(provider="slack", parameters={"url": "http://127.0.0.1:9/slack"})
    message = await error(
        await client.put(f"{ADDONS}/{made['id']}", json=body, headers=ADMIN), 400, "ValidationError"
    )
    assert "provider" in message


@pytest.mark.parametrize("path", ["/4711", "/0", "/abc"])
async def test_an_unknown_integration_is_a_404(client: Client, path: str) -> None:
    await error(await client.get(ADDONS + path, headers=ADMIN), 404, "NotFoundError")


@pytest.mark.parametrize("addon_id", ["abc", "1x", "1e"])
async def test_events_of_an_id_that_is_no_number_are_a_400(client: Client, addon_id: str) -> None:
    path = f"{ADDONS}/{addon_id}/events"
    message = await error(await client.get(path, headers=ADMIN), 400, "ValidationError")
    assert message == "Invalid integration configuration id"


@pytest.mark.parametrize("addon_id", ["0", "-1", "1.5", "99999999999999999999"])
async def test_events_of_a_number_that_is_no_integration_are_none(
    client: Client, addon_id: str
) -> None:
    path = f"{ADDONS}/{addon_id}/events"
    assert await ok(await client.get(path, headers=ADMIN)) == {"integrationEvents": []}


@pytest.mark.parametrize("addon_id", ["0", "4711"])
async def test_a_bad_offset_is_a_400_whichever_number_the_id_is(
    client: Client, addon_id: str
) -> None:
    path = f"{ADDONS}/{addon_id}/events?offset=-1"
    message = await error(await client.get(path, headers=ADMIN), 400, "ValidationError")
    assert "offset" in message


async def test_the_document_describes_the_events_id_as_any_number(client: Client) -> None:
    document = await ok(await client.get("/docs/openapi.json"))
    parameters = document["paths"][ADDONS + "/{id}/events"]["get"]["parameters"]
    (id_parameter,) = [p for p in parameters if p["name"] == "id"]
    assert id_parameter["schema"]["type"] == "number"
    assert "minimum" not in id_parameter["schema"]


async def test_an_unknown_or_deleted_integration_has_no_events(client: Client) -> None:
    """Unleash answers 200 with none: its UI asks for the last delivery of a card it still
    shows right after the integration's deletion."""
    made = await create(client)
    assert (await client.delete(f"{ADDONS}/{made['id']}", headers=ADMIN)).status == 200
    for addon_id in (made["id"], 4711):
        path = f"{ADDONS}/{addon_id}/events?limit=1&offset=0"
        assert await ok(await client.get(path, headers=ADMIN)) == {"integrationEvents": []}


async def test_deleting_destroys_the_key_and_a_second_delete_is_a_200(
    client: Client, app: web.Application
) -> None:
    made = await create(client)
    path = f"{ADDONS}/{made['id']}"
    assert (await client.delete(path, headers=ADMIN)).status == 200
    assert (await client.delete(path, headers=ADMIN)).status == 200
    assert await event_count(app, "AddonDeleted") == 1
    await error(await client.get(path, headers=ADMIN), 404, "NotFoundError")
    async with app[POOL].acquire() as conn:
        assert await secrets.key_of(conn, made["id"]) is None
        assert (await verify(conn)).ok
    await error(await client.put(path, json=webhook(), headers=ADMIN), 404, "NotFoundError")


async def test_projects_and_environments_star_means_all(client: Client) -> None:
    made = await create(client, webhook(projects=["*"], environments=["*", "production"]))
    assert made["projects"] == []
    assert made["environments"] == []


async def test_a_master_key_rotation_rewraps_integration_keys(
    client: Client, app: web.Application
) -> None:
    made = await create(client)
    old = master.masters()
    rotated = Masters(MasterKey.parse(MasterKey.generate()), [old.current])
    async with app[POOL].acquire() as conn:
        assert await rotate_master_key(conn, rotated) >= 1
        wrapped_by = await conn.fetchval(
            "SELECT master_id FROM addon_keys WHERE addon_id = $1", made["id"]
        )
    assert wrapped_by == rotated.current.id


async def test_a_receiver_whose_name_does_not_resolve_is_a_400(client: Client) -> None:
    body = webhook(parameters={"url": "https://no-such-host.invalid/hook"})
    message = await error(
        await client.post(ADDONS, json=body, headers=ADMIN), 400, "ValidationError"
    )
    assert "no-such-host.invalid" in message
    assert "does not resolve" in message


async def test_an_integration_whose_receiver_is_refused_since_can_still_be_switched_off(
    client: Client, dsn: str, aiohttp_client: AiohttpClient
) -> None:
    """Its URL is judged at each delivery; an update that keeps it does not judge it again."""
    made = await create(client)  # on loopback, allowed here
    strict = create_app(settings_for(dsn), dsn, resolver=resolve_with_test_principals)
    narrower = await aiohttp_client(ServiceTestServer(strict))  # loopback not allowed
    kept = webhook(enabled=False, description="off for now", parameters={"url": "*****"})
    path = f"{ADDONS}/{made['id']}"
    switched = await ok(await narrower.put(path, json=kept, headers=ADMIN))
    assert (switched["enabled"], switched["description"]) == (False, "off for now")
    moved = webhook(parameters={"url": "http://127.0.0.2:9/hook"})
    message = await error(
        await narrower.put(path, json=moved, headers=ADMIN), 400, "ValidationError"
    )
    assert "loopback" in message
