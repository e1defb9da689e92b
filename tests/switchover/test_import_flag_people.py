"""What only the source's flag search says of its flags, carried: who made each flag (its
`createdBy` and first collaborator here), and an archived flag's switches (which Unleash's
archive list and export leave out), which the environments' counts then include."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from service.switchover import kinds
from tests.factories import ADMIN, FEATURES, create, make_account, ok

if TYPE_CHECKING:
    from aiohttp.test_utils import TestClient

    from tests.switchover.conftest import Source, Target

    Client = TestClient[Any, Any]

SEARCH = "/api/admin/search/features?limit=100"


async def switched_on(client: Client, name: str, environment: str) -> None:
    path = f"{FEATURES}/{name}/environments/{environment}"
    await ok(await client.post(f"{path}/strategies", json={"name": "default"}, headers=ADMIN))
    await ok(await client.post(f"{path}/on", headers=ADMIN))


async def test_the_creator_and_an_archived_flag_s_switches_are_carried(
    source: Source, target: Target
) -> None:
    for name in ("made", "gone"):
        await ok(await create(source.client, {"name": name}), 200)
    await switched_on(source.client, "gone", "development")
    assert (await source.client.delete(f"{FEATURES}/gone", headers=ADMIN)).status == 202
    searched = await ok(await source.client.get(SEARCH, headers=ADMIN))
    (made,) = [f for f in searched["features"] if f["name"] == "made"]
    assert made["createdBy"]["id"] == -42  # an API token made it

    report = await target.run(source, only=kinds.all_kinds())
    assert not any(o.problems for o in report.outcomes), report

    creator = {k: made["createdBy"][k] for k in ("id", "name")}
    here = await ok(await target.client.get(f"{FEATURES}/made", headers=ADMIN))
    assert {k: here["createdBy"][k] for k in ("id", "name")} == creator
    assert [{k: u[k] for k in ("id", "name")} for u in here["collaborators"]["users"]] == [creator]
    archived = await ok(await target.client.get(f"{SEARCH}&archived=IS:true", headers=ADMIN))
    (gone,) = archived["features"]
    assert {e["name"]: e["enabled"] for e in gone["environments"]} == {
        "development": True,
        "production": False,
    }
    assert {k: gone["createdBy"][k] for k in ("id", "name")} == creator
    counts = await ok(await target.client.get("/api/admin/environments", headers=ADMIN))
    assert {e["name"]: e["enabledToggleCount"] for e in counts["environments"]} == {
        "development": 1,
        "production": 0,
    }
    # A change in the source is carried as made by who changed the flag there last: the
    # same token here, so the flag still has one collaborator (not the importer too).
    edit = [{"op": "replace", "path": "/description", "value": "changed"}]
    await ok(await source.client.patch(f"{FEATURES}/made", json=edit, headers=ADMIN))
    report = await target.run(source, only=kinds.all_kinds())
    (flags,) = [o for o in report.outcomes if o.kind == "flags"]
    assert flags.updated == ["made"]
    here = await ok(await target.client.get(f"{FEATURES}/made", headers=ADMIN))
    assert here["description"] == "changed"
    assert [u["id"] for u in here["collaborators"]["users"]] == [-42]
    # What an import wrote still says so, whoever is named as its actor.
    sources = await target.conn.fetch(
        "SELECT DISTINCT metadata->>'source' AS source FROM events WHERE stream_key = 'made'"
    )
    assert [r["source"] for r in sources] == ["import"]


async def test_a_flag_a_person_made_names_the_imported_person(
    source: Source, target: Target
) -> None:
    """People are imported before flags, so a flag made by a person at the source shows that
    person here (our id for them), under the name the source gives."""
    made = await make_account(source.client.app, role=2, username="dora")
    resp = await source.client.post(
        FEATURES, json={"name": "doras"}, headers={"Authorization": made.secret}
    )
    await ok(resp, 200, 201)
    report = await target.run(source, only=kinds.all_kinds())
    assert not any(o.problems for o in report.outcomes), report
    users = await ok(await target.client.get("/api/admin/user-admin", headers=ADMIN))
    (dora,) = [u for u in users["users"] if u["username"] == "dora"]
    here = await ok(await target.client.get(f"{FEATURES}/doras", headers=ADMIN))
    assert here["createdBy"]["id"] == dora["id"]
    assert here["createdBy"]["name"] == "dora"
    assert [u["id"] for u in here["collaborators"]["users"]] == [dora["id"]]
