"""The import's people and tokens, from a source (this service, seeded through its admin API with
users of each root role and tokens of each type) into a fresh target, read back through the
target's API: the users with their created and seen times, sealed as every person's; the API
tokens as hashes, so that the secrets the source gave out authenticate here. A second run
appends nothing (a sign-in at the source included); each change appends its event; a person
made here with other content is a conflict unless --prefer-source; a dry run writes nothing;
each new person's reset link works and goes to a file of mode 0600 when asked.

This service answers its tokens' secrets as hints only (it keeps hashes); Unleash answers the
secrets. The source is therefore served through a stand-in that answers the token list as
Unleash does, with the secrets the seeding was given (`unleash_like`)."""

from __future__ import annotations

import json
import stat
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest
from aiohttp import web

from projections.inline import apply_inline
from service import auth
from service.appkeys import POOL, TOKEN_USAGE
from service.switchover.api_tokens import WEAK_ADMIN, ApiTokens
from service.switchover.service_accounts import ServiceAccounts
from service.switchover.users import LINKS, Users
from service.token_usage import TokenUsage
from service.users import admins
from service.work import Work
from tests.factories import ADMIN, ADMIN_TOKEN, ok
from tests.switchover.test_import_refdata import get, run_command, send

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from pytest_aiohttp import AiohttpServer

    from service.switchover.run import Kind, Outcome, Report
    from tests.switchover.conftest import Source, Target

PASSWORD = "Correct-Horse-Battery-9"
LATER = datetime.now(UTC) + timedelta(days=30)
# Each root role, by name and by id as the API takes them; an e-mail only, an e-mail and a
# username, a username only (with a password, to sign in at the source).
USERS = {
    "ada@example.com": {"name": "Ada Lovelace", "email": "Ada@Example.com", "rootRole": "Admin"},
    "grace": {
        "name": "Grace Hopper",
        "email": "grace@example.com",
        "username": "grace",
        "rootRole": 2,
    },
    "alan": {"username": "alan", "rootRole": "Viewer", "password": PASSWORD},
    "admin": {"username": "admin", "name": "Source Admin", "rootRole": 1},
}
TOKENS: dict[str, dict[str, Any]] = {
    "backend-dev": {"type": "client", "environment": "development", "projects": ["default"]},
    "web-prod": {"type": "frontend", "environment": "production", "projects": ["*"]},
    "ops": {"type": "admin"},
    "expiring": {
        "type": "client",
        "environment": "development",
        "expiresAt": LATER.isoformat(),
    },
}


def people() -> list[Kind]:
    return [Users("http://flagstore.example"), ApiTokens()]


async def seed(client: Any) -> tuple[dict[str, int], dict[str, str]]:
    """The users (their ids at the source, by label) and tokens (secrets, by name)."""
    ids = {
        label: (await send(client, "POST", "/api/admin/user-admin", body))["id"]
        for label, body in USERS.items()
    }
    secrets = {
        name: (await send(client, "POST", "/api/admin/api-tokens", {"tokenName": name, **body}))[
            "secret"
        ]
        for name, body in TOKENS.items()
    }
    return ids, secrets


def unleash_like(
    source: Source,
    secrets: dict[str, str],
    absent: frozenset[str] = frozenset(),
    users: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    extra_tokens: Sequence[dict[str, Any]] = (),
) -> web.Application:
    """The source, answering its token list as Unleash does: with each token's secret (those
    the seeding was given, and the admin token the tests use), by the hint this service shows.
    The paths in `absent` answer 404, as Unleash's open-source edition answers Enterprise's;
    `users` changes the user list, `extra_tokens` are added to the token list (what this
    service cannot be made to hold)."""
    by_hint = {auth.secret_hint(s): s for s in secrets.values()}
    by_hint[auth.secret_hint(ADMIN_TOKEN, reveal=False)] = ADMIN_TOKEN  # chosen, not made

    async def forward(request: web.Request) -> web.Response:
        if request.path in absent:
            return web.json_response({"message": "Not found"}, status=404)
        async with (
            aiohttp.ClientSession() as session,
            session.request(
                request.method,
                source.url + request.path_qs,
                headers={"Authorization": source.token},
                data=await request.read() or None,
            ) as answer,
        ):
            body = await answer.read()
            if request.path == "/api/admin/api-tokens" and answer.status == 200:
                tokens = json.loads(body)["tokens"]
                for token in tokens:
                    token["secret"] = by_hint.get(token["secret"], token["secret"])
                return web.json_response({"tokens": [*tokens, *extra_tokens]})
            if request.path == "/api/admin/user-admin" and users is not None:
                return web.json_response(users(json.loads(body)))
            return web.Response(body=body, status=answer.status, content_type="application/json")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", forward)
    return app


@pytest.fixture
async def seeded(
    aiohttp_server: AiohttpServer, source: Source
) -> tuple[Source, dict[str, int], dict[str, str]]:
    """The seeded source as Unleash answers (its secrets), its users' ids, the secrets."""
    ids, secrets = await seed(source.client)
    served = await aiohttp_server(unleash_like(source, secrets))
    like = type(source)(
        url=str(served.make_url("")).rstrip("/"), token=source.token, client=source.client
    )
    return like, ids, secrets


def outcome(report: Report, kind: str) -> Outcome:
    (found,) = [o for o in report.outcomes if o.kind == kind]
    return found


async def events_after(target: Target, position: int) -> list[str]:
    rows = await target.conn.fetch(
        "SELECT type FROM events WHERE position > $1 AND stream_type <> 'token-usage'"
        " ORDER BY position",
        position,
    )
    return [r["type"] for r in rows]


async def head(target: Target) -> int:
    return int(await target.conn.fetchval("SELECT coalesce(max(position), 0) FROM events"))


def by_label(users: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {u.get("username") or u["email"]: u for u in users}


async def authenticates_at(source: Source, path: str, secret: str) -> int:
    resp = await source.client.get(path, headers={"Authorization": secret})
    await resp.read()
    return resp.status


async def settled(client: Any) -> None:
    """The served app's token use written now (TokenUsage flushes every 2 s), so that no such
    event lands in its log while a test compares it."""
    app = client.server.app
    usage = app[TOKEN_USAGE]
    assert isinstance(usage, TokenUsage)
    await usage.flush(app[POOL])


async def authenticates(target: Target, path: str, secret: str) -> int:
    resp = await target.client.get(path, headers={"Authorization": secret})
    await resp.read()
    return resp.status


async def test_people_and_tokens_are_carried_and_read_back(
    seeded: tuple[Source, dict[str, int], dict[str, str]], target: Target
) -> None:
    source, _, secrets = seeded
    # An SDK used one token at the source: its seenAt is carried; the others were never used.
    assert await authenticates_at(source, "/api/client/features", secrets["backend-dev"]) == 200
    await settled(source.client)
    report = await target.run(source, only=people())
    users, tokens = outcome(report, "users"), outcome(report, "api tokens")
    assert sorted(users.created) == sorted(USERS)
    assert sorted(tokens.created) == sorted(TOKENS)
    assert tokens.unchanged == 1  # the admin token both first starts were given
    assert report.problems == 0
    fields = ("name", "email", "username", "rootRole", "createdAt", "seenAt")
    there = by_label((await get(source.client, "/api/admin/user-admin"))["users"])
    here = by_label((await get(target.client, "/api/admin/user-admin"))["users"])
    assert {k: {f: u.get(f) for f in fields} for k, u in here.items()} == {
        k: {f: u.get(f) for f in fields} for k, u in there.items()
    }
    assert here["ada@example.com"]["email"] == "ada@example.com"
    assert [here[k]["rootRole"] for k in ("ada@example.com", "grace", "alan")] == [1, 2, 3]
    token_fields = ("type", "environment", "projects", "createdAt", "expiresAt", "seenAt")
    there_tokens = {
        t["tokenName"]: t for t in (await get(source.client, "/api/admin/api-tokens"))["tokens"]
    }
    here_tokens = {
        t["tokenName"]: t for t in (await get(target.client, "/api/admin/api-tokens"))["tokens"]
    }
    for name in TOKENS:
        assert {f: here_tokens[name][f] for f in token_fields} == {
            f: there_tokens[name][f] for f in token_fields
        }, name
        assert here_tokens[name]["secret"] == auth.secret_hint(secrets[name])
    assert here_tokens["backend-dev"]["seenAt"] is not None
    assert [n for n in TOKENS if here_tokens[n]["seenAt"] is None] == [
        "web-prod",
        "ops",
        "expiring",
    ]
    # The secrets the source gave out authenticate here, each as its type allows.
    assert await authenticates(target, "/api/client/features", secrets["backend-dev"]) == 200
    assert await authenticates(target, "/api/client/features", secrets["expiring"]) == 200
    assert await authenticates(target, "/api/frontend", secrets["web-prod"]) == 200
    assert await authenticates(target, "/api/admin/projects", secrets["ops"]) == 200
    assert await authenticates(target, "/api/admin/projects", secrets["backend-dev"]) == 403
    wrong = secrets["backend-dev"][:-4] + "0000"
    assert await authenticates(target, "/api/client/features", wrong) == 401
    # Stored as hashes only, as this service's own tokens are.
    stored = await target.conn.fetchval("SELECT string_agg(e::text, ' ') FROM events e")
    assert not any(secret in stored for secret in secrets.values())
    assert auth.hash_secret(secrets["ops"]) in stored
    # Every new person got a link, and none was logged in an event (only its hash).
    assert sorted(who for who, _ in report.notes[LINKS]) == sorted(USERS)
    assert not any(link.split("token=")[1] in stored for _, link in report.notes[LINKS])


async def test_an_imported_persons_data_is_sealed_as_a_created_ones(
    seeded: tuple[Source, dict[str, int], dict[str, str]], target: Target
) -> None:
    source, _, _ = seeded
    await target.run(source, only=people())
    await send(
        target.client, "POST", "/api/admin/user-admin", {"email": "eve@example.com", "rootRole": 3}
    )
    rows = await target.conn.fetch(
        "SELECT type, data::text AS data FROM events "
        "WHERE type IN ('UsersImported', 'UserCreated') ORDER BY position"
    )
    assert [r["type"] for r in rows] == ["UsersImported", "UserCreated"]
    imported, created = rows[0]["data"], rows[1]["data"]
    assert '"sealed"' in created
    assert "eve@example.com" not in created
    assert imported.count('"sealed"') >= 6  # ada's name, e-mail; grace's three; ...
    for plain in ("ada@example.com", "Ada Lovelace", "grace@example.com", "Grace Hopper", "alan"):
        assert plain not in imported
    # It reads back as itself through the API (opened with the person's key).
    here = by_label((await get(target.client, "/api/admin/user-admin"))["users"])
    assert here["grace"]["name"] == "Grace Hopper"


async def test_a_second_run_appends_nothing_and_a_sign_in_at_the_source_is_no_change(
    seeded: tuple[Source, dict[str, int], dict[str, str]], target: Target
) -> None:
    source, _, secrets = seeded
    await target.run(source, only=people())
    resp = await source.client.post(
        "/auth/simple/login", json={"username": "alan", "password": PASSWORD}
    )
    assert resp.status == 200, await resp.text()
    there = by_label((await get(source.client, "/api/admin/user-admin"))["users"])
    assert there["alan"]["seenAt"] is not None
    # An SDK used a token at the source since: its seenAt moved there, which is no change here.
    assert await authenticates_at(source, "/api/client/features", secrets["backend-dev"]) == 200
    await settled(source.client)
    there_tokens = {
        t["tokenName"]: t for t in (await get(source.client, "/api/admin/api-tokens"))["tokens"]
    }
    assert there_tokens["backend-dev"]["seenAt"] is not None
    before = await target.events()
    report = await target.run(source, only=people())
    assert await target.events() == before
    assert [o.events for o in report.outcomes] == [0, 0]
    assert outcome(report, "users").unchanged == len(USERS)
    assert outcome(report, "api tokens").unchanged == len(TOKENS) + 1
    assert report.notes.get(LINKS, []) == []
    # The seen time stays the one the person was created with.
    here = by_label((await get(target.client, "/api/admin/user-admin"))["users"])
    assert here["alan"]["seenAt"] is None
    here_tokens = {
        t["tokenName"]: t for t in (await get(target.client, "/api/admin/api-tokens"))["tokens"]
    }
    assert here_tokens["backend-dev"]["seenAt"] is None


async def test_each_change_in_the_source_appends_its_event(
    seeded: tuple[Source, dict[str, int], dict[str, str]], target: Target
) -> None:
    source, ids, secrets = seeded
    await target.run(source, only=people())
    later = datetime.now(UTC) + timedelta(days=60)

    await send(source.client, "PUT", f"/api/admin/user-admin/{ids['grace']}", {"name": "Grace B."})
    position = await head(target)
    report = await target.run(source, only=people())
    assert await events_after(target, position) == ["UserUpdated"]
    assert outcome(report, "users").updated == ["grace"]

    await send(source.client, "DELETE", f"/api/admin/user-admin/{ids['alan']}")
    position = await head(target)
    await target.run(source, only=people())
    assert await events_after(target, position) == ["UserDeleted"]

    await send(source.client, "DELETE", f"/api/admin/api-tokens/{secrets['web-prod']}")
    position = await head(target)
    await target.run(source, only=people())
    assert await events_after(target, position) == ["ApiTokenDeleted"]

    await send(
        source.client,
        "PUT",
        f"/api/admin/api-tokens/{secrets['expiring']}",
        {"expiresAt": later.isoformat()},
    )
    position = await head(target)
    await target.run(source, only=people())
    assert await events_after(target, position) == ["ApiTokenExpiryChanged"]

    here = by_label((await get(target.client, "/api/admin/user-admin"))["users"])
    assert here["grace"]["name"] == "Grace B."
    assert "alan" not in here
    tokens = {
        t["tokenName"]: t for t in (await get(target.client, "/api/admin/api-tokens"))["tokens"]
    }
    assert "web-prod" not in tokens
    assert datetime.fromisoformat(tokens["expiring"]["expiresAt"]) == later
    assert await authenticates(target, "/api/frontend", secrets["web-prod"]) == 401
    before = await target.events()
    await target.run(source, only=people())
    assert await target.events() == before


async def test_a_person_made_here_with_other_content_is_a_conflict_unless_preferred(
    seeded: tuple[Source, dict[str, int], dict[str, str]], target: Target
) -> None:
    source, _, _ = seeded
    # The same content is the same person; other content is a conflict.
    same = {"name": "Ada Lovelace", "email": "ada@example.com", "rootRole": 1}
    await send(target.client, "POST", "/api/admin/user-admin", same)
    other = {"name": "Grace (here)", "email": "grace@example.com", "rootRole": 3}
    await send(target.client, "POST", "/api/admin/user-admin", other)
    before = await target.events()
    report = await target.run(source, only=people())
    users = outcome(report, "users")
    assert [name for name, _ in users.conflicts] == ["grace"]
    assert users.conflicts[0][1] == "differs here in name, username, root_role"
    assert not users.written
    assert report.stopped_at == "users"
    assert await target.events() == before
    assert LINKS not in report.notes or report.notes[LINKS] == []

    report = await target.run(source, only=people(), prefer_source=True)
    users = outcome(report, "users")
    assert users.updated == ["grace"]
    # No event changes a username: ours stands, and the report says so.
    assert ("grace", "username None here: a username does not change here") in users.skipped
    assert users.unchanged == 1
    assert sorted(users.created) == ["admin", "alan"]
    assert sorted(who for who, _ in report.notes[LINKS]) == ["admin", "alan"]
    here = by_label((await get(target.client, "/api/admin/user-admin"))["users"])
    assert (here["grace@example.com"]["name"], here["grace@example.com"]["rootRole"]) == (
        "Grace Hopper",
        2,
    )


async def test_the_installations_admin_takes_the_source_admins_content(
    seeded: tuple[Source, dict[str, int], dict[str, str]], target: Target
) -> None:
    """`admin-user admin` on a new installation, then the import of a source with `admin`: no
    conflict, the account takes the source's content and keeps its password."""
    source, ids, _ = seeded
    password = admins.new_password()
    made = await admins.create_admin(Work(apply_inline), target.conn, "admin", password)
    report = await target.run(source, only=people())
    users = outcome(report, "users")
    assert report.problems == 0
    assert users.updated == ["admin"]
    assert "admin" not in {who for who, _ in report.notes[LINKS]}
    here = by_label((await get(target.client, "/api/admin/user-admin"))["users"])
    assert (here["admin"]["id"], here["admin"]["name"]) == (made, "Source Admin")
    resp = await target.client.post(
        "/auth/simple/login", json={"username": "admin", "password": password}
    )
    assert resp.status == 200, await resp.text()
    # The source dropping its admin does not take the installation's way in away.
    await send(source.client, "DELETE", f"/api/admin/user-admin/{ids['admin']}")
    before = await target.events()
    await target.run(source, only=people())
    assert await target.events() == before


async def test_a_dry_run_writes_nothing_and_says_what_a_run_would(
    seeded: tuple[Source, dict[str, int], dict[str, str]], target: Target
) -> None:
    source, _, _ = seeded
    before = await target.events()
    report = await target.run(source, only=people(), dry_run=True)
    assert await target.events() == before
    assert sorted(outcome(report, "users").created) == sorted(USERS)
    assert sorted(outcome(report, "api tokens").created) == sorted(TOKENS)
    assert (await get(target.client, "/api/admin/user-admin"))["users"] == []


async def test_a_source_that_shows_only_hints_gives_no_tokens(
    source: Source, target: Target
) -> None:
    """This service as the source, as it is: its token list holds hints, not secrets."""
    await seed(source.client)
    before = await target.events()
    report = await target.run(source, only=[ApiTokens()])
    tokens = outcome(report, "api tokens")
    assert tokens.created == []
    hinted = [name for name, why in tokens.skipped if "only a hint" in why]
    assert sorted(hinted) == sorted([*TOKENS, "admin"])
    assert ("personal access tokens", "not carried: Unleash shows their secrets only as hints") in (
        tokens.skipped
    )
    assert await target.events() == before


@pytest.mark.process
async def test_the_links_file_has_one_working_link_per_new_person(
    seeded: tuple[Source, dict[str, int], dict[str, str]], target: Target, tmp_path: Path
) -> None:
    source, _, _ = seeded
    links = tmp_path / "links.tsv"
    public = str(target.client.make_url("")).rstrip("/")
    code, out, err = await run_command(
        target,
        "--url",
        source.url,
        "--token",
        source.token,
        "--links",
        str(links),
        "--public-url",
        public,
    )
    assert code == 0, err + out
    assert stat.S_IMODE(links.stat().st_mode) == 0o600
    lines = links.read_text().splitlines()
    assert sorted(line.split("\t")[0] for line in lines) == sorted(USERS)
    assert "token=" not in out + err
    assert f"reset links: {len(USERS)} written to {links}" in out
    (grace,) = [line.split("\t")[1] for line in lines if line.startswith("grace\t")]
    assert grace.startswith(f"{public}/reset-password?token=")
    token = grace.split("token=")[1]
    await ok(await target.client.get(f"/auth/reset/validate?token={token}"))
    new_password = "Another-Horse-Battery-7"
    resp = await target.client.post(
        "/auth/reset/password", json={"token": token, "password": new_password}
    )
    assert resp.status in {200, 204}, await resp.text()
    resp = await target.client.post(
        "/auth/simple/login", json={"username": "grace", "password": new_password}
    )
    assert resp.status == 200, await resp.text()
    # A second run makes no new links and appends nothing.
    before = await target.events()
    code, out, err = await run_command(
        target,
        "--url",
        source.url,
        "--token",
        source.token,
        "--links",
        str(links),
        "--public-url",
        public,
    )
    assert code == 0, err + out
    assert await target.events() == before
    assert links.read_text() == ""


async def test_links_are_printed_without_a_file(
    seeded: tuple[Source, dict[str, int], dict[str, str]], target: Target
) -> None:
    """Printed in the report, as `reset link: WHO: LINK` lines (checked through the CLI's
    printing function, in process)."""
    import io  # noqa: PLC0415 - this test's alone
    from contextlib import redirect_stdout  # noqa: PLC0415

    from service import cli  # noqa: PLC0415

    source, _, _ = seeded
    report = await target.run(source, only=people())
    printed = io.StringIO()
    with redirect_stdout(printed):
        cli._reset_links(report.notes[LINKS], None, dry_run=False)
    lines = printed.getvalue().splitlines()
    assert len(lines) == len(USERS)
    assert all(
        line.startswith("reset link: ") and "/reset-password?token=" in line for line in lines
    )
    assert ADMIN["Authorization"] not in printed.getvalue()


async def test_service_accounts_are_carried_and_follow_the_source(
    source: Source, target: Target
) -> None:
    made = await send(
        source.client,
        "POST",
        "/api/admin/service-account",
        {"username": "ci-bot", "name": "CI bot", "rootRole": 2},
    )
    report = await target.run(source, only=[ServiceAccounts()])
    accounts = outcome(report, "service accounts")
    assert accounts.created == ["ci-bot"]
    assert ("their tokens", "not carried: the source shows their secrets only as hints") in (
        accounts.skipped
    )
    fields = ("username", "name", "rootRole", "createdAt")
    (there,) = (await get(source.client, "/api/admin/service-account"))["serviceAccounts"]
    (here,) = (await get(target.client, "/api/admin/service-account"))["serviceAccounts"]
    assert {f: here[f] for f in fields} == {f: there[f] for f in fields}
    before = await target.events()
    await target.run(source, only=[ServiceAccounts()])
    assert await target.events() == before

    path = f"/api/admin/service-account/{made['id']}"
    await send(source.client, "PUT", path, {"name": "CI bot (prod)", "rootRole": 3})
    position = await head(target)
    await target.run(source, only=[ServiceAccounts()])
    assert await events_after(target, position) == ["ServiceAccountUpdated"]
    (here,) = (await get(target.client, "/api/admin/service-account"))["serviceAccounts"]
    assert (here["name"], here["rootRole"]) == ("CI bot (prod)", 3)

    await send(source.client, "DELETE", path)
    position = await head(target)
    await target.run(source, only=[ServiceAccounts()])
    assert await events_after(target, position) == ["ServiceAccountDeleted"]
    assert (await get(target.client, "/api/admin/service-account"))["serviceAccounts"] == []


async def test_a_source_without_service_accounts_says_so(
    aiohttp_server: AiohttpServer, source: Source, target: Target
) -> None:
    """Unleash's open-source edition: the path is Enterprise's, answered 404."""
    served = await aiohttp_server(
        unleash_like(source, {}, frozenset({"/api/admin/service-account"}))
    )
    like = type(source)(
        url=str(served.make_url("")).rstrip("/"), token=source.token, client=source.client
    )
    before = await target.events()
    report = await target.run(like, only=[ServiceAccounts()])
    accounts = outcome(report, "service accounts")
    assert accounts.skipped == [
        (
            "service accounts",
            "the source has none: /api/admin/service-account answered 404 (Unleash Enterprise's)",
        )
    ]
    assert report.problems == 0
    assert await target.events() == before


async def test_a_custom_root_role_is_refused_by_name(
    aiohttp_server: AiohttpServer, source: Source, target: Target
) -> None:
    """Unleash Enterprise's custom root roles have no counterpart here: the person is named."""
    await seed(source.client)

    def custom(answer: dict[str, Any]) -> dict[str, Any]:
        for user in answer["users"]:
            if user.get("username") == "grace":
                user["rootRole"] = 9
        return answer | {"rootRoles": [*answer["rootRoles"], {"id": 9, "name": "Auditor"}]}

    served = await aiohttp_server(unleash_like(source, {}, users=custom))
    like = type(source)(
        url=str(served.make_url("")).rstrip("/"), token=source.token, client=source.client
    )
    before = await target.events()
    report = await target.run(like, only=people())
    users = outcome(report, "users")
    assert [name for name, _ in users.refused] == ["grace"]
    assert "Could not find rootRole=Auditor" in users.refused[0][1]
    assert not users.written
    assert await target.events() == before


async def test_a_short_admin_secret_is_not_carried(
    aiohttp_server: AiohttpServer, source: Source, target: Target
) -> None:
    """An admin secret an operator chose shorter than the rule this service's own chosen admin
    secrets follow (32 characters) is not carried; a client token's is."""
    weak: dict[str, Any] = {
        "secret": "*:*.unleash-insecure-admin-toke",  # 31 characters after the scope
        "tokenName": "admin",
        "type": "admin",
        "environment": "*",
        "projects": ["*"],
        "createdAt": "2024-01-01T00:00:00Z",
    }
    short_client = weak | {
        "secret": "default:development.short",
        "tokenName": "old-sdk",
        "type": "client",
        "environment": "development",
        "projects": ["default"],
    }
    served = await aiohttp_server(unleash_like(source, {}, extra_tokens=[weak, short_client]))
    like = type(source)(
        url=str(served.make_url("")).rstrip("/"), token=source.token, client=source.client
    )
    report = await target.run(like, only=[ApiTokens()])
    tokens = outcome(report, "api tokens")
    assert tokens.created == ["old-sdk"]
    assert ("admin", WEAK_ADMIN) in tokens.skipped
    assert await authenticates(target, "/api/admin/projects", weak["secret"]) == 401
    assert await authenticates(target, "/api/client/features", short_client["secret"]) == 200


async def test_renewed_links_go_to_the_imported_people_without_a_password_here(
    seeded: tuple[Source, dict[str, int], dict[str, str]], target: Target
) -> None:
    """On the day of the switch, `--renew-links` gives a new link to each person an earlier run
    brought who has not set a password here; one who has gets none, and a run without it
    appends nothing."""
    source, _, _ = seeded
    first = await target.run(source, only=[Users("http://flagstore.example")])
    (grace_link,) = [link for who, link in first.notes[LINKS] if who == "grace"]
    token = grace_link.split("token=")[1]
    resp = await target.client.post(
        "/auth/reset/password", json={"token": token, "password": "Another-Horse-Battery-7"}
    )
    assert resp.status in {200, 204}, await resp.text()
    before = await target.events()
    again = await target.run(source, only=[Users("http://flagstore.example")])
    assert again.notes.get(LINKS, []) == []
    assert await target.events() == before
    renewed = await target.run(source, only=[Users("http://flagstore.example", renew_links=True)])
    who = sorted(w for w, _ in renewed.notes[LINKS])
    assert who == sorted(u for u in USERS if u != "grace")
    assert await target.events() == before + len(who)
    old = {link for _, link in first.notes[LINKS]}
    assert not old & {link for _, link in renewed.notes[LINKS]}
    # The new link works and replaces the old one.
    (ada_old,) = [link for w, link in first.notes[LINKS] if w == "ada@example.com"]
    (ada_new,) = [link for w, link in renewed.notes[LINKS] if w == "ada@example.com"]
    resp = await target.client.get(f"/auth/reset/validate?token={ada_new.split('token=')[1]}")
    assert resp.status == 200, await resp.text()
    resp = await target.client.get(f"/auth/reset/validate?token={ada_old.split('token=')[1]}")
    assert resp.status != 200
