"""The import's reference data, from a source (this service, seeded through its admin API)
into a fresh target, read back through the target's API: environments, projects and their
environments, context fields, strategy types, feature types' lifetimes, segments and the
projects' default strategies. A second run appends nothing; a change appends only itself; what
an earlier run brought and the source dropped is deleted; what was made here is a conflict
unless --prefer-source; an entity our rules refuse is named (exit code 1); a dry run writes
nothing."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import TYPE_CHECKING, Any

import aiohttp
from aiohttp import web

from service.switchover import kinds
from service.switchover.context_fields import ContextFields
from tests import ROOT
from tests.factories import ADMIN, ok

if TYPE_CHECKING:
    from pytest_aiohttp import AiohttpServer

    from service.switchover.run import Kind, Report
    from tests.switchover.conftest import Source, Target

REFDATA = (
    "environments",
    "projects",
    "context fields",
    "strategy types",
    "feature types",
    "segments",
    "default strategies",
)


def refdata() -> list[Kind]:
    """The kinds of this file, in the order of the full list (which may hold more)."""
    return [k for k in kinds.all_kinds() if k.name in REFDATA]


async def get(client: Any, path: str) -> Any:
    return await ok(await client.get(path, headers=ADMIN))


async def send(client: Any, method: str, path: str, body: Any = None, *statuses: int) -> Any:
    resp = await client.request(method, path, json=body, headers=ADMIN)
    return await ok(resp, *(statuses or (200, 201, 204)))


async def seed(client: Any) -> dict[str, int]:
    """A source with some of everything: an environment switched off and one reordered, a
    project without production, a custom context field and a changed built-in one, custom
    strategy types (one deprecated) and a built-in one reactivated, a lifetime changed,
    segments whose ids have a gap, a default strategy naming one. Returns the segments' ids."""
    await send(client, "POST", "/api/admin/environments", {"name": "staging", "type": "test"})
    await send(client, "POST", "/api/admin/environments/staging/off")
    await send(client, "PUT", "/api/admin/environments/sort-order", {"development": 7})
    await send(
        client,
        "POST",
        "/api/admin/projects",
        {"id": "checkout", "name": "Checkout", "description": "The checkout team's"},
    )
    await send(client, "DELETE", "/api/admin/projects/checkout/environments/production")
    await send(
        client,
        "POST",
        "/api/admin/context",
        {
            "name": "tier",
            "description": "The plan",
            "legalValues": [{"value": "gold", "description": "Paid"}, {"value": "free"}],
            "stickiness": True,
            "sortOrder": 9,
        },
    )
    await send(
        client,
        "PUT",
        "/api/admin/context/userId",
        {"description": "Who it is", "legalValues": [{"value": "42"}]},
    )
    regions = {"name": "regions", "type": "list", "description": "Where", "required": True}
    for name in ("by-region", "old-region"):
        await send(
            client,
            "POST",
            "/api/admin/strategies",
            {"name": name, "title": "By region", "parameters": [regions]},
        )
    await send(client, "POST", "/api/admin/strategies/old-region/deprecate")
    await send(client, "POST", "/api/admin/strategies/userWithId/reactivate")
    await send(client, "PUT", "/api/admin/feature-types/release/lifetime", {"lifetimeDays": 30})
    ids = {}
    for name in ("gone", "beta", "staff"):
        constraints = [{"contextName": "tier", "operator": "IN", "values": ["gold"]}]
        if name == "staff":
            constraints.append(
                {"contextName": "currentTime", "operator": "DATE_AFTER", "value": "2024-01-01"}
            )
        made = await send(
            client,
            "POST",
            "/api/admin/segments",
            {"name": name, "description": f"{name} users", "constraints": constraints},
        )
        ids[name] = made["id"]
    await send(client, "DELETE", f"/api/admin/segments/{ids.pop('gone')}")
    await send(
        client,
        "POST",
        "/api/admin/projects/checkout/environments/development/default-strategy",
        {
            "name": "flexibleRollout",
            "parameters": {"rollout": "25", "stickiness": "userId", "groupId": ""},
            "segments": [ids["staff"]],
        },
    )
    return ids


def _without(items: list[dict[str, Any]], *keys: str) -> list[dict[str, Any]]:
    return [{k: v for k, v in item.items() if k not in keys} for item in items]


async def state(client: Any) -> dict[str, Any]:
    """Everything the reference data kinds write, as the admin API answers it (the counts of
    what uses an entity left out: flags and tokens are other kinds')."""
    projects = (await get(client, "/api/admin/projects"))["projects"]
    return {
        "environments": _without(
            (await get(client, "/api/admin/environments"))["environments"],
            "apiTokenCount",
            "enabledToggleCount",
        ),
        # Both first starts made `default`, each at its own time.
        "projects": [
            p | ({"createdAt": "first start"} if p["id"] == "default" else {})
            for p in _without(projects, "lastUpdatedAt", "health", "owners")
        ],
        "project environments": {
            p["id"]: _without(
                (await get(client, f"/api/admin/environments/project/{p['id']}"))["environments"],
                "projectApiTokenCount",
                "projectEnabledToggleCount",
            )
            for p in projects
        },
        "overviews": {
            p["id"]: (await get(client, f"/api/admin/projects/{p['id']}/overview"))["environments"]
            for p in projects
        },
        "context": await get(client, "/api/admin/context"),
        "strategies": await get(client, "/api/admin/strategies"),
        "feature types": await get(client, "/api/admin/feature-types"),
        "segments": await get(client, "/api/admin/segments"),
    }


async def assert_same(target: Target, source: Source) -> None:
    """The target answers as the source does, kind by kind."""
    ours, theirs = await state(target.client), await state(source.client)
    for key, found in theirs.items():
        assert ours[key] == found, key


def events_of(report: Report) -> int:
    return sum(o.events for o in report.outcomes)


async def appended(target: Target, since: int) -> list[str]:
    rows = await target.conn.fetch(
        "SELECT type FROM events WHERE position > $1 ORDER BY position", since
    )
    return [r["type"] for r in rows]


async def head(target: Target) -> int:
    return int(await target.conn.fetchval("SELECT coalesce(max(position), 0) FROM events"))


async def test_every_kind_is_copied_and_a_second_run_appends_nothing(
    source: Source, target: Target
) -> None:
    ids = await seed(source.client)
    report = await target.run(source, only=refdata())
    assert report.problems == 0, report.outcomes
    await assert_same(target, source)
    by_kind = {o.kind: o for o in report.outcomes}
    assert by_kind["environments"].created == ["staging"]
    assert by_kind["environments"].updated == ["development"]  # the first start's, reordered
    assert by_kind["projects"].created == ["checkout"]
    assert by_kind["context fields"].created == ["tier"]
    assert by_kind["context fields"].updated == ["userId"]  # built in: changed, not made
    assert by_kind["strategy types"].created == ["by-region", "old-region"]
    assert by_kind["strategy types"].updated == ["userWithId"]
    assert by_kind["feature types"].updated == ["release"]
    assert by_kind["segments"].created == ["beta", "staff"]
    assert by_kind["default strategies"].created == ["checkout/development"]
    # The source's segment ids are kept (they were free here), the gap included.
    segments = (await get(target.client, "/api/admin/segments"))["segments"]
    assert {s["name"]: s["id"] for s in segments} == ids
    events = await target.events()
    again = await target.run(source, only=refdata())
    assert await target.events() == events
    assert again.problems == 0
    assert events_of(again) == 0
    assert all(not (o.created or o.updated or o.deleted) for o in again.outcomes)
    # The mapping of segments is filled for every source segment, also when nothing changes.
    marks = await target.conn.fetch(
        "SELECT DISTINCT metadata->>'origin' AS origin FROM events WHERE metadata->>'source' ="
        " 'import'"
    )
    assert [m["origin"] for m in marks] == [f"unleash:{source.url}"]


async def test_a_change_in_the_source_appends_only_that_change(
    source: Source, target: Target
) -> None:
    ids = await seed(source.client)
    await target.run(source, only=refdata())
    client = source.client
    await send(client, "POST", "/api/admin/environments/staging/on")
    await send(
        client, "POST", "/api/admin/projects/checkout/environments", {"environment": "production"}
    )
    await send(client, "POST", "/api/admin/context/tier/legal-values", {"value": "silver"})
    await send(client, "POST", "/api/admin/strategies/by-region/deprecate")
    await send(client, "PUT", "/api/admin/feature-types/release/lifetime", {"lifetimeDays": 50})
    await send(
        client,
        "PUT",
        f"/api/admin/segments/{ids['beta']}",
        {
            "name": "beta-testers",
            "constraints": [{"contextName": "tier", "operator": "IN", "values": ["free"]}],
        },
    )
    await send(
        client,
        "POST",
        "/api/admin/projects/checkout/environments/development/default-strategy",
        {"name": "flexibleRollout", "parameters": {"rollout": "50", "stickiness": "default"}},
    )
    since = await head(target)
    report = await target.run(source, only=refdata())
    assert report.problems == 0, report.outcomes
    assert sorted(await appended(target, since)) == sorted(
        [
            "DefaultStrategySet",
            "EnvironmentSwitched",
            "ProjectEnvironmentEnabled",
            "ContextFieldUpdated",
            "StrategyDefinitionDeprecated",
            "FeatureTypeLifetimeChanged",
            "SegmentUpdated",  # renamed in the source: the same segment, not a new one
        ]
    )
    await assert_same(target, source)


async def test_a_segment_whose_id_is_taken_here_gets_another_and_is_mapped(
    source: Source, target: Target
) -> None:
    for name in ("one", "two", "three"):
        await send(target.client, "POST", "/api/admin/segments", {"name": name, "constraints": []})
    ids = await seed(source.client)
    report = await target.run(source, only=refdata())
    assert report.problems == 0, report.outcomes
    ours = {
        s["name"]: s["id"] for s in (await get(target.client, "/api/admin/segments"))["segments"]
    }
    assert ours["beta"] != ids["beta"]  # taken here by `two`
    overview = await get(target.client, "/api/admin/projects/checkout/overview")
    (development,) = [e for e in overview["environments"] if e["environment"] == "development"]
    assert development["defaultStrategy"]["segments"] == [ours["staff"]]
    # A segment made here later takes none of the source's ids.
    made = await send(
        target.client, "POST", "/api/admin/segments", {"name": "later", "constraints": []}
    )
    assert made["id"] > max(ours.values())
    events = await target.events()
    await target.run(source, only=refdata())
    assert await target.events() == events


async def test_what_the_source_dropped_is_deleted_here(source: Source, target: Target) -> None:
    ids = await seed(source.client)
    await send(target.client, "POST", "/api/admin/context", {"name": "local"})
    await target.run(source, only=refdata())
    client = source.client
    await send(client, "DELETE", "/api/admin/context/tier")
    await send(client, "DELETE", "/api/admin/strategies/old-region")
    await send(client, "DELETE", f"/api/admin/segments/{ids['beta']}")
    since = await head(target)
    report = await target.run(source, only=refdata())
    assert report.problems == 0, report.outcomes
    by_kind = {o.kind: o for o in report.outcomes}
    assert by_kind["context fields"].deleted == ["tier"]  # `local`, made here, stays
    assert by_kind["strategy types"].deleted == ["old-region"]
    assert by_kind["segments"].deleted == ["beta"]
    assert sorted(await appended(target, since)) == [
        "ContextFieldDeleted",
        "SegmentDeleted",
        "StrategyDefinitionDeleted",
    ]
    names = {f["name"] for f in await get(target.client, "/api/admin/context")}
    assert "local" in names
    assert "tier" not in names


async def test_a_project_the_source_dropped_is_archived(source: Source, target: Target) -> None:
    await send(source.client, "POST", "/api/admin/projects", {"id": "gone", "name": "Gone"})
    await target.run(source, only=refdata())
    await send(source.client, "DELETE", "/api/admin/projects/gone")
    since = await head(target)
    report = await target.run(source, only=refdata())
    assert {o.kind: o.deleted for o in report.outcomes}["projects"] == ["gone"]
    assert await appended(target, since) == ["ProjectArchived"]
    listed = (await get(target.client, "/api/admin/projects"))["projects"]
    assert [p["id"] for p in listed] == ["default"]


async def test_what_was_made_here_is_a_conflict_unless_the_source_is_preferred(
    source: Source, target: Target
) -> None:
    await seed(source.client)
    await send(
        target.client,
        "POST",
        "/api/admin/context",
        {"name": "tier", "description": "made here", "sortOrder": 9, "stickiness": True},
    )
    before = await target.events()
    report = await target.run(source, only=refdata())
    assert report.stopped_at == "context fields"
    outcome = next(o for o in report.outcomes if o.kind == "context fields")
    assert not outcome.written
    assert outcome.conflicts == [("tier", "differs here in description, legal_values")]
    # The kinds before it landed; nothing of it or after it did.
    assert [o.kind for o in report.outcomes] == ["environments", "projects", "context fields"]
    assert await target.events() > before
    field = await get(target.client, "/api/admin/context/tier")
    assert field["description"] == "made here"
    assert (await get(target.client, "/api/admin/segments"))["segments"] == []
    preferred = await target.run(source, only=refdata(), prefer_source=True)
    assert preferred.problems == 0, preferred.outcomes
    ours, theirs = await state(target.client), await state(source.client)
    # The field keeps the time it was made here: no change carries a created time.
    assert _without(ours.pop("context"), "createdAt") == _without(
        theirs.pop("context"), "createdAt"
    )
    assert ours == theirs


async def test_an_import_changed_here_since_is_a_conflict(source: Source, target: Target) -> None:
    await seed(source.client)
    await target.run(source, only=refdata())
    await send(
        target.client, "PUT", "/api/admin/feature-types/release/lifetime", {"lifetimeDays": 3}
    )
    await send(
        source.client, "PUT", "/api/admin/feature-types/release/lifetime", {"lifetimeDays": 60}
    )
    report = await target.run(source, only=refdata())
    assert report.stopped_at == "feature types"
    outcome = next(o for o in report.outcomes if o.kind == "feature types")
    assert outcome.conflicts == [("release", "differs here in lifetime_days")]


async def test_a_dry_run_writes_nothing_and_says_what_a_run_would(
    source: Source, target: Target
) -> None:
    await seed(source.client)
    before = await target.events()
    empty = await state(target.client)
    report = await target.run(source, only=refdata(), dry_run=True)
    assert report.dry_run
    assert report.problems == 0, report.outcomes
    by_kind = {o.kind: o for o in report.outcomes}
    assert by_kind["segments"].created == ["beta", "staff"]
    assert by_kind["default strategies"].created == ["checkout/development"]
    assert events_of(report) > 0
    assert await target.events() == before
    assert await state(target.client) == empty


def refusing(source: Source) -> web.Application:
    """The source, with one context field our rules refuse among its own (this service cannot
    be made to hold one): every other path is the source's answer as it is."""

    async def forward(request: web.Request) -> web.Response:
        async with (
            aiohttp.ClientSession() as session,
            session.get(
                source.url + request.path_qs, headers={"Authorization": source.token}
            ) as answer,
        ):
            body = await answer.read()
            if request.path == "/api/admin/context" and answer.status == 200:
                fields = [*json.loads(body), {"name": "bad name", "description": "spaces"}]
                return web.json_response(fields)
            return web.Response(body=body, status=answer.status, content_type="application/json")

    app = web.Application()
    app.router.add_get("/{tail:.*}", forward)
    return app


async def run_command(target: Target, *args: str) -> tuple[int, str, str]:
    """`python -m service import-unleash ...` into the target, without blocking the loop that
    serves the source."""
    env = {k: v for k, v in os.environ.items() if k != "DATA_DIR"} | {"DATABASE_URL": target.dsn}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "service",
        "import-unleash",
        *args,
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_a_refused_entity_is_named_and_the_command_exits_1(
    aiohttp_server: AiohttpServer, source: Source, target: Target
) -> None:
    await seed(source.client)
    fake = await aiohttp_server(refusing(source))
    url = str(fake.make_url("")).rstrip("/")
    before = await target.events()
    code, out, err = await run_command(target, "--url", url, "--token", source.token)
    assert code == 1, err
    assert "context fields: refused: bad name:" in out
    assert "stopped at context fields" in out
    # The kinds before it landed whole; nothing of it did.
    assert await target.events() > before
    names = {f["name"] for f in await get(target.client, "/api/admin/context")}
    assert "tier" not in names
    assert "checkout" in {
        p["id"] for p in (await get(target.client, "/api/admin/projects"))["projects"]
    }


async def test_a_refusal_in_process_names_the_entity(
    aiohttp_server: AiohttpServer, source: Source, target: Target
) -> None:
    fake = await aiohttp_server(refusing(source))
    other = type(source)(
        url=str(fake.make_url("")).rstrip("/"), token=source.token, client=source.client
    )
    report = await target.run(other, only=[ContextFields()])
    (outcome,) = report.outcomes
    assert [name for name, _ in outcome.refused] == ["bad name"]
    assert not outcome.written
