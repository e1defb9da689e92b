"""The import's frame, shown with its first kind (tag types): the source checked before
anything is read, a second run that appends nothing, changes carried as the events a person
makes, what exists here kept unless --prefer-source, refusals by name, a dry run that writes
nothing, progress as JSON lines, and the command's exit codes."""

from __future__ import annotations

import asyncio
import io
import json
import os
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest
from aiohttp import web

from service.switchover import source as source_module
from service.switchover.source import SourceError
from service.switchover.tag_types import TagTypes
from tests.factories import ADMIN, ok
from tests.harness import run_cli

if TYPE_CHECKING:
    from pytest_aiohttp import AiohttpServer

    from tests.switchover.conftest import Source, Target


async def tag_types(client: Any) -> dict[str, dict[str, Any]]:
    body = await ok(await client.get("/api/admin/tag-types", headers=ADMIN))
    return {t["name"]: t for t in body["tagTypes"]}


async def new_tag_type(client: Any, name: str, **fields: Any) -> None:
    body = {"name": name, "description": "owner", "icon": "T", **fields}
    await ok(await client.post("/api/admin/tag-types", json=body, headers=ADMIN), 201)


async def test_a_run_copies_and_a_second_appends_nothing(source: Source, target: Target) -> None:
    await new_tag_type(source.client, "team", color="#112233")
    first = await target.run(source, only=[TagTypes()])
    assert first.problems == 0
    (outcome,) = first.outcomes
    assert outcome.created == ["team"]
    assert outcome.unchanged == 1  # `simple`, which both have from their first start
    assert await tag_types(target.client) == await tag_types(source.client)
    events = await target.events()
    again = await target.run(source, only=[TagTypes()])
    assert await target.events() == events
    assert again.outcomes[0].unchanged == 2
    assert again.outcomes[0].events == 0
    # Every event the run appended is the importer's, marked with the source.
    marks = await target.conn.fetch(
        "SELECT metadata FROM events WHERE stream_type = 'tag-type' AND stream_key = 'team'"
    )
    assert [json.loads(m["metadata"])["origin"] for m in marks] == [f"unleash:{source.url}"]


async def test_changes_in_the_source_are_carried_as_the_same_events(
    source: Source, target: Target
) -> None:
    await new_tag_type(source.client, "team")
    await new_tag_type(source.client, "area")
    await target.run(source, only=[TagTypes()])
    await ok(
        await source.client.put(
            "/api/admin/tag-types/team", json={"description": "who owns it"}, headers=ADMIN
        ),
        200,
    )
    await ok(await source.client.delete("/api/admin/tag-types/area", headers=ADMIN), 200)
    before = await target.events()
    report = await target.run(source, only=[TagTypes()])
    (outcome,) = report.outcomes
    assert (outcome.updated, outcome.deleted) == (["team"], ["area"])
    assert await target.events() == before + 2
    assert await tag_types(target.client) == await tag_types(source.client)
    kinds = await target.conn.fetch(
        "SELECT type FROM events WHERE stream_type = 'tag-type' ORDER BY position DESC LIMIT 2"
    )
    assert {k["type"] for k in kinds} == {"TagTypeUpdated", "TagTypeDeleted"}


async def test_what_was_made_here_is_kept_unless_the_source_is_preferred(
    source: Source, target: Target
) -> None:
    await new_tag_type(source.client, "team", description="from the source")
    await new_tag_type(target.client, "team", description="made here")
    await new_tag_type(target.client, "local")
    before = await target.events()
    report = await target.run(source, only=[TagTypes()])
    assert report.stopped_at == "tag types"
    (outcome,) = report.outcomes
    assert not outcome.written
    assert outcome.conflicts == [("team", "differs here in description")]
    assert await target.events() == before
    preferred = await target.run(source, only=[TagTypes()], prefer_source=True)
    assert preferred.problems == 0
    assert preferred.outcomes[0].updated == ["team"]
    found = await tag_types(target.client)
    assert found["team"]["description"] == "from the source"
    assert "local" in found  # never the source's, never deleted by an import


async def test_an_import_changed_here_since_is_a_conflict(source: Source, target: Target) -> None:
    await new_tag_type(source.client, "team")
    await target.run(source, only=[TagTypes()])
    await ok(
        await target.client.put(
            "/api/admin/tag-types/team", json={"description": "changed here"}, headers=ADMIN
        ),
        200,
    )
    await ok(
        await source.client.put(
            "/api/admin/tag-types/team", json={"description": "changed there"}, headers=ADMIN
        ),
        200,
    )
    report = await target.run(source, only=[TagTypes()])
    assert report.outcomes[0].conflicts == [("team", "differs here in description")]


async def test_a_dry_run_writes_nothing_and_says_what_a_run_would(
    source: Source, target: Target
) -> None:
    await new_tag_type(source.client, "team")
    before = await target.events()
    report = await target.run(source, only=[TagTypes()], dry_run=True)
    assert report.dry_run
    assert report.outcomes[0].created == ["team"]
    assert await target.events() == before
    assert "team" not in await tag_types(target.client)


async def test_progress_is_json_lines_off_a_terminal(source: Source, target: Target) -> None:
    out = io.StringIO()
    await target.run(source, only=[TagTypes()], progress=out)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert {line["phase"] for line in lines} == {"reading tag types", "writing tag types"}
    assert lines[-1]["done"] == lines[-1]["total"] == 1
    assert all(set(line) == {"phase", "done", "total", "seconds"} for line in lines)


def fake_unleash(
    version: str, *, tag_types: list[dict[str, Any]], admin: bool = True
) -> web.Application:
    """A server answering the few routes the frame reads, as an Unleash of another version or
    with data this service's rules refuse would (this service cannot be made to hold either)."""

    async def ui_config(_request: web.Request) -> web.Response:
        return web.json_response({"version": version, "versionInfo": {"current": {"oss": version}}})

    async def users(_request: web.Request) -> web.Response:
        if not admin:
            return web.json_response({"name": "NoAccessError"}, status=403)
        return web.json_response({"users": []})

    async def types(_request: web.Request) -> web.Response:
        return web.json_response({"version": 1, "tagTypes": tag_types})

    app = web.Application()
    app.router.add_get("/api/admin/ui-config", ui_config)
    app.router.add_get("/api/admin/user-admin", users)
    app.router.add_get("/api/admin/tag-types", types)
    return app


async def served(aiohttp_server: AiohttpServer, app: web.Application, source: Source) -> Source:
    server = await aiohttp_server(app)
    return type(source)(url=str(server.make_url("")).rstrip("/"), token="x", client=source.client)


async def test_a_source_entity_our_rules_refuse_is_named(
    aiohttp_server: AiohttpServer, source: Source, target: Target
) -> None:
    app = fake_unleash("6.10.1", tag_types=[{"name": "ok-type"}, {"name": "a b"}])
    fake = await served(aiohttp_server, app, source)
    before = await target.events()
    report = await target.run(fake, only=[TagTypes()])
    (outcome,) = report.outcomes
    assert [name for name, _ in outcome.refused] == ["a b"]
    assert not outcome.written
    assert await target.events() == before


@pytest.mark.parametrize(
    ("version", "admin", "words"),
    [
        ("5.12.0", True, "Unleash 5.12.0 at"),
        ("7.0.1", True, "Unleash 7.0.1 at"),
        ("6.10.1", False, "has no admin rights"),
    ],
)
async def test_the_source_is_checked_first(  # noqa: PLR0917 - the cases' parameters
    aiohttp_server: AiohttpServer,
    source: Source,
    target: Target,
    version: str,
    admin: bool,
    words: str,
) -> None:
    fake = await served(aiohttp_server, fake_unleash(version, tag_types=[], admin=admin), source)
    with pytest.raises(SourceError) as refused:
        await target.run(fake, only=[TagTypes()])
    assert words in refused.value.message
    assert refused.value.exit_code == 2


async def test_a_wrong_token_is_refused(source: Source, target: Target) -> None:
    with pytest.raises(SourceError) as refused:
        await target.run(source, only=[TagTypes()], token="*:*.not-a-token")
    assert "(401)" in refused.value.message
    assert refused.value.exit_code == 2


@pytest.mark.process
async def test_the_command_exits_2_for_an_unreachable_source(target: Target) -> None:
    before = await target.events()
    env = {k: v for k, v in os.environ.items() if k != "DATA_DIR"} | {"DATABASE_URL": target.dsn}
    done = run_cli(
        env,
        "import-unleash",
        "--url",
        "http://127.0.0.1:9",
        "--token",
        "*:*.whatever",
    )
    assert done.returncode == 2, done.stderr
    assert "cannot reach Unleash at http://127.0.0.1:9" in done.stderr
    assert "nothing was written" in done.stderr
    assert await target.events() == before


async def test_a_client_token_is_told_it_has_no_admin_rights(
    source: Source, target: Target
) -> None:
    """Unleash answers its UI config 403 to a client token: the check says why."""
    made = await ok(
        await source.client.post(
            "/api/admin/api-tokens",
            json={"tokenName": "sdk", "type": "client", "environment": "development"},
            headers=ADMIN,
        ),
        201,
    )
    with pytest.raises(SourceError) as refused:
        await target.run(source, only=[TagTypes()], token=made["secret"])
    assert "has no admin rights" in refused.value.message
    assert refused.value.exit_code == 2


async def test_a_server_that_never_answers_is_named_within_the_check_s_time(
    aiohttp_server: AiohttpServer, source: Source, target: Target, monkeypatch: Any
) -> None:
    """One attempt within CHECK_TIMEOUT (shortened here), not every read's retries."""
    asleep = asyncio.Event()

    async def silent(_request: web.Request) -> web.Response:
        asleep.set()
        await asyncio.sleep(3600)
        return web.json_response({})

    app = web.Application()
    app.router.add_get("/api/admin/ui-config", silent)
    fake = await served(aiohttp_server, app, source)
    monkeypatch.setattr(source_module, "CHECK_TIMEOUT", aiohttp.ClientTimeout(total=0.5))
    with pytest.raises(SourceError) as refused:
        await target.run(fake, only=[TagTypes()])
    assert asleep.is_set()
    assert "cannot reach Unleash" in refused.value.message
    assert refused.value.exit_code == 2


async def test_a_server_that_is_not_unleash_is_told_so(
    aiohttp_server: AiohttpServer, source: Source, target: Target
) -> None:
    fake = await served(aiohttp_server, web.Application(), source)
    with pytest.raises(SourceError) as refused:
        await target.run(fake, only=[TagTypes()])
    assert "does not answer Unleash's admin API" in refused.value.message
    assert refused.value.exit_code == 2
