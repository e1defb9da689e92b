"""One legal value of a context field: POST /api/admin/context/{name}/legal-values and DELETE
/api/admin/context/{name}/legal-values/{value}, each a ContextFieldUpdated of the field's
stream (docs/behavior.md, "Context fields")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from projections.replay import replay
from projections.verify import verify
from service import auth
from service.appkeys import POOL
from tests.conftest import as_principal
from tests.factories import ADMIN, error, event_count, ok

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

CONTEXT = "/api/admin/context"


async def legal_values(client: Client, name: str) -> list[Any]:
    return list((await ok(await client.get(f"{CONTEXT}/{name}", headers=ADMIN)))["legalValues"])


async def test_a_value_is_added_described_again_and_deleted(
    client: Client, app: web.Application
) -> None:
    body = {"name": "tier", "legalValues": [{"value": "a"}]}
    await ok(await client.post(CONTEXT, json=body, headers=ADMIN), 201)
    path = f"{CONTEXT}/tier/legal-values"
    resp = await client.post(path, json={"value": "b", "description": "bee"}, headers=ADMIN)
    assert (resp.status, await resp.text()) == (200, "")
    assert await legal_values(client, "tier") == [
        {"value": "a"},
        {"value": "b", "description": "bee"},
    ]
    await ok(await client.post(path, json={"value": "a", "description": "ay"}, headers=ADMIN))
    assert await legal_values(client, "tier") == [
        {"value": "a", "description": "ay"},
        {"value": "b", "description": "bee"},
    ]
    updates = await event_count(app, "ContextFieldUpdated")
    assert updates == 2
    # The same value as it is, or deleting one the field lacks: nothing changes, nothing recorded.
    await ok(await client.post(path, json={"value": "a", "description": "ay"}, headers=ADMIN))
    await ok(await client.delete(f"{path}/zz", headers=ADMIN))
    assert await event_count(app, "ContextFieldUpdated") == updates
    await ok(await client.delete(f"{path}/a", headers=ADMIN))
    assert await legal_values(client, "tier") == [{"value": "b", "description": "bee"}]
    # A built-in field takes legal values too (its first change is an event of its own).
    await ok(
        await client.post(f"{CONTEXT}/environment/legal-values", json={"value": "q"}, headers=ADMIN)
    )
    assert await legal_values(client, "environment") == [{"value": "q"}]
    found = await ok(await client.get("/api/admin/search/events?limit=2", headers=ADMIN))
    shown = [(e["type"], e["stream"]) for e in found["events"]]
    # (The event log names context field events by their stored type: event_kind has no
    # Unleash name for them yet.)
    assert shown == [
        ("ContextFieldUpdated", "context-field/environment"),
        ("ContextFieldUpdated", "context-field/tier"),
    ]
    assert found["events"][1]["data"]["legalValues"] == [{"value": "b", "description": "bee"}]
    async with app[POOL].acquire() as conn:
        await replay(conn)
        assert (await verify(conn)).ok


async def test_a_missing_field_is_a_404_and_a_bad_value_a_400(
    client: Client, app: web.Application
) -> None:
    before = await event_count(app)
    resp = await client.post(f"{CONTEXT}/nope/legal-values", json={"value": "b"}, headers=ADMIN)
    await error(resp, 404, "NotFoundError")
    await error(
        await client.delete(f"{CONTEXT}/nope/legal-values/b", headers=ADMIN), 404, "NotFoundError"
    )
    for bad in ({"value": ""}, {"value": "x" * 101}, {}, {"value": "a", "description": 3}):
        resp = await client.post(f"{CONTEXT}/environment/legal-values", json=bad, headers=ADMIN)
        await error(resp, 400, "ValidationError")
    assert await event_count(app) == before


async def test_changing_legal_values_takes_update_context_field(client: Client) -> None:
    path = f"{CONTEXT}/userId/legal-values"
    reader = as_principal(auth.READ)
    await error(await client.post(path, json={"value": "u"}, headers=reader), 403, "NoAccessError")
    await error(await client.delete(f"{path}/u", headers=reader), 403, "NoAccessError")
    await error(await client.post(path, json={"value": "u"}), 401, "AuthenticationRequired")
    may = as_principal(auth.READ, auth.UPDATE_CONTEXT_FIELD)
    await ok(await client.post(path, json={"value": "u"}, headers=may))
    await ok(await client.delete(f"{path}/u", headers=may))
    assert await legal_values(client, "userId") == []


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=st.lists(
        st.tuples(st.booleans(), st.sampled_from(["a", "b", "c"]), st.sampled_from([None, "d"])),
        max_size=6,
    )
)
async def test_any_sequence_keeps_each_value_once_in_order(
    client: Client, steps: list[tuple[bool, str, str | None]]
) -> None:
    """As a list kept by hand: an added value goes last, a described one stays in place."""
    expected = {v["value"]: v.get("description") for v in await legal_values(client, "appName")}
    for add, value, description in steps:
        path = f"{CONTEXT}/appName/legal-values"
        if add:
            body = {"value": value} | ({} if description is None else {"description": description})
            await ok(await client.post(path, json=body, headers=ADMIN))
            expected[value] = description
        else:
            await ok(await client.delete(f"{path}/{value}", headers=ADMIN))
            expected.pop(value, None)
    got = await legal_values(client, "appName")
    assert [(v["value"], v.get("description")) for v in got] == list(expected.items())
