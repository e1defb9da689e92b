"""Whole past states and diffs (docs/audit.md): `python -m service state --at T -o DIR`,
`GET /api/admin/audit/diff` and `python -m service diff FROM TO`."""

from __future__ import annotations

import asyncio
import json
import os
import random
from typing import TYPE_CHECKING, Any

import msgspec
import pytest

from projections.entities import PARTS, secret_columns
from projections.follower import projection_lags
from projections.rebuild import table_specs
from service.appkeys import POOL
from service.audit import states
from service.audit.diff import KINDS, EntityChange, FieldChange, Reading, diff
from tests.audit.test_point_in_time import CHANGES_BY_WEIGHT, World
from tests.factories import ADMIN, FEATURES, STRONG, api_token, create_user, error, head
from tests.harness import run_cli

if TYPE_CHECKING:
    from pathlib import Path

    from aiohttp import web
    from aiohttp.test_utils import TestClient

    from eventlog.connections import Conn

    Client = TestClient[Any, Any]

DIFF = "/api/admin/audit/diff"


async def diff_of(client: Client, query: str) -> Any:
    resp = await client.get(f"{DIFF}?{query}", headers=ADMIN)
    assert resp.status == 200, await resp.text()
    return await resp.json()


def test_every_table_is_declared_an_entity_s_part_or_none() -> None:
    assert set(PARTS) == {t.name for t in table_specs()}


async def test_a_diff_lists_each_entity_with_each_field_before_and_after(
    client: Client, app: web.Application
) -> None:
    await client.post(FEATURES, json={"name": "keep", "description": "old"}, headers=ADMIN)
    await client.post(FEATURES, json={"name": "gone"}, headers=ADMIN)
    start = await head(app)
    await client.post(FEATURES, json={"name": "new", "type": "experiment"}, headers=ADMIN)
    strategies = f"{FEATURES}/keep/environments/development/strategies"
    body = {"name": "default", "parameters": {}, "constraints": []}
    strategy = await (await client.post(strategies, json=body, headers=ADMIN)).json()
    await client.post(f"{FEATURES}/keep/environments/development/on", headers=ADMIN)
    await client.post("/api/admin/features/keep/tags", json={"value": "beta"}, headers=ADMIN)
    await client.delete(f"{FEATURES}/gone", headers=ADMIN)
    user = await create_user(client, {"email": "ada@example.com", "name": "Ada"})
    found = await diff_of(client, f"from={start}")
    assert found["from"]["position"] == start
    assert found["to"]["position"] == await head(app)
    changes = {(c["entity"], c["id"]): c for c in found["changes"]}
    assert list(changes) == [
        ("flag", "gone"),
        ("flag", "keep"),
        ("flag", "new"),
        ("user", str(user["id"])),
        ("tag-type", "simple"),  # the tag simple:beta exists now (docs/behavior.md)
    ]
    assert changes[("tag-type", "simple")]["change"] == "changed"
    fields = {f["field"]: (f["before"], f["after"]) for f in changes[("flag", "keep")]["fields"]}
    sid = strategy["id"]
    assert changes[("flag", "keep")]["change"] == "changed"
    # The flag had no row for that environment yet (the API shows off and no variants).
    assert fields.pop("environments.development.enabled") == (None, True)
    assert fields.pop("environments.development.variants") == (None, [])
    created_at = fields.pop(f"strategies.{sid}.createdAt")
    assert created_at[0] is None
    assert fields.pop("tags.simple/beta.createdAt")[0] is None
    assert fields == {
        f"strategies.{sid}.{column}": (None, value)
        for column, value in {
            "constraints": [],
            "disabled": False,
            "environment": "development",
            "name": "default",
            "parameters": {},
            "segments": [],
            "sortOrder": 0,
            "variants": [],
        }.items()
    }
    gone = {f["field"]: (f["before"], f["after"]) for f in changes[("flag", "gone")]["fields"]}
    assert changes[("flag", "gone")]["change"] == "changed"
    assert gone["lifecycleStage"] == ("initial", "archived")
    assert gone["archivedAt"][0] is None
    new = changes[("flag", "new")]
    assert new["change"] == "created"
    new_fields = {f["field"]: (f["before"], f["after"]) for f in new["fields"]}
    assert new_fields["type"] == (None, "experiment")
    assert new_fields["project"] == (None, "default")
    assert {f["before"] for f in new["fields"]} == {None}
    person = changes[("user", str(user["id"]))]
    assert person["change"] == "created"
    assert {f["field"]: f["after"] for f in person["fields"]}["email"] == "ada@example.com"
    # One entity, or one project's.
    only = await diff_of(client, f"from={start}&stream=feature/new")
    assert [(c["entity"], c["id"]) for c in only["changes"]] == [("flag", "new")]
    project = await diff_of(client, f"from={start}&project=default")
    assert [c["id"] for c in project["changes"]] == ["gone", "keep", "new"]
    # Nothing changed between an instant and itself; the other way round is refused.
    assert (await diff_of(client, f"from={start}&to={start}"))["changes"] == []
    message = await error(
        await client.get(f"{DIFF}?from={start}&to=1", headers=ADMIN), 400, "ValidationError"
    )
    assert "is after" in message


async def test_secrets_show_only_that_they_changed(client: Client, app: web.Application) -> None:
    user = await create_user(client, {"username": "bob"})
    start = await head(app)
    path = f"/api/admin/user-admin/{user['id']}/change-password"
    await client.post(path, json={"password": STRONG}, headers=ADMIN)
    await api_token(client, name="sdk", environment="development")
    found = await diff_of(client, f"from={start}")
    text = json.dumps(found)
    assert "argon2" not in text
    async with app[POOL].acquire() as conn:
        hashes = [r[0] for r in await conn.fetch("SELECT secret_hash FROM api_tokens")]
    assert [h for h in hashes if h in text] == []
    fields = {f["field"]: (f["before"], f["after"]) for c in found["changes"] for f in c["fields"]}
    assert fields["password.passwordHash"] == (None, "[hidden]")
    assert fields["secretHash"] == (None, "[hidden]")


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("", "from"),
        ("from=soon", "from"),
        ("from=1&to=2026-01-01", "to"),
        ("from=1&stream=user-batch/x", "stream"),
        ("from=1&stream=feature", "stream"),
        ("from=999999", "at"),
    ],
)
async def test_bad_diff_parameters_are_a_400(client: Client, query: str, field: str) -> None:
    message = await error(
        await client.get(f"{DIFF}?{query}", headers=ADMIN), 400, "ValidationError"
    )
    if field != "at":
        assert message.endswith(f"at `{field}`")


def full_diff(
    earlier: dict[str, dict[Any, dict[str, Any]]],
    later: dict[str, dict[Any, dict[str, Any]]],
    reading: Reading,
) -> list[EntityChange]:
    """The diff of two whole states, every row of both compared (what `changes` must equal
    while reading only the rows the events in between touched)."""
    before: dict[tuple[str, Any], dict[str, Any] | None] = {
        (t, k): row for t, rows in earlier.items() for k, row in rows.items()
    }
    before |= {(t, k): None for t, rows in later.items() for k in rows if k not in earlier[t]}
    return diff(before, later, reading)


async def test_a_diff_equals_the_comparison_of_the_two_whole_states(
    client: Client, app: web.Application
) -> None:
    world = World(client, random.Random(3))
    for _ in range(150):
        change = world.rng.choices(*zip(*CHANGES_BY_WEIGHT, strict=True))[0]
        await change(world)
    last = await head(app)
    async with app[POOL].acquire() as conn:
        found = await states.layout(conn)
        defaults = {t: dict(c) for t, c in found.columns.items()}
        reading = Reading.of(PARTS, table_specs(), defaults, found.json_columns)
        pairs = [(0, last), (last, last)] + [
            tuple(sorted(world.rng.sample(range(last + 1), 2))) for _ in range(12)
        ]
        nonempty = 0
        for start, end in pairs:
            earlier = (await states.state(conn, start)).rows
            later = (await states.state(conn, end)).rows
            expected = full_diff(earlier, later, reading)
            assert await states.changes(conn, start, end) == expected, (start, end)
            nonempty += bool(expected)
    assert nonempty >= 10


async def test_state_writes_every_read_model_as_of_an_instant(
    client: Client, app: web.Application, dsn: str, tmp_path: Path
) -> None:
    await client.post(FEATURES, json={"name": "one"}, headers=ADMIN)
    middle = await head(app)
    await client.post(FEATURES, json={"name": "two"}, headers=ADMIN)
    await create_user(client, {"username": "bob", "password": STRONG})
    env = {k: v for k, v in os.environ.items() if k != "DATA_DIR"} | {"DATABASE_URL": dsn}
    result = run_cli(env, "state", "--at", str(middle), "-o", str(tmp_path / "then"))
    assert result.returncode == 0, result.stderr
    lines = (tmp_path / "then" / "features.jsonl").read_text().splitlines()
    names = [json.loads(line)["name"] for line in lines]
    assert names == ["one"]
    manifest = json.loads((tmp_path / "then" / "state.json").read_text())
    assert manifest["position"] == middle
    assert manifest["tables"]["features"] == 1
    assert manifest["leftOut"]["user_passwords"] == ["password_hash"]
    # Now: every table as the live read model holds it (secrets left out), once the async read
    # models have caught up (else one may move between the state and the live read).
    async with app[POOL].acquire() as conn:
        for _ in range(400):
            if not any((await projection_lags(conn)).values()):
                break
            await asyncio.sleep(0.05)
    assert run_cli(env, "state", "-o", str(tmp_path / "now")).returncode == 0
    async with app[POOL].acquire() as conn:
        for table in (t.name for t in table_specs()):
            lines = (tmp_path / "now" / f"{table}.jsonl").read_text().splitlines()
            live = await live_rows(conn, table)
            assert [json.loads(line) for line in lines] == live, table
    text = "".join(p.read_text() for p in (tmp_path / "now").iterdir())
    assert "argon2" not in text
    refused = run_cli(env, "state", "-o", str(tmp_path / "now"))
    assert refused.returncode == 2
    assert "is not empty" in refused.stderr
    bad = run_cli(env, "state", "--at", "tomorrow", "-o", str(tmp_path / "x"))
    assert bad.returncode == 2
    assert "--at must be an RFC 3339 time" in bad.stderr


async def test_state_and_diff_say_which_key_does_not_open(
    client: Client, app: web.Application, dsn: str, tmp_path: Path
) -> None:
    """A person's data key that no longer unwraps (damaged, or a master key this process was
    not given) is a failure the commands expect: exit 2 and one line naming the person, as the
    API answers 503 for it, never a traceback."""
    user_id = (await create_user(client, {"username": "bob", "password": STRONG}))["id"]
    last = await head(app)
    async with app[POOL].acquire() as conn:
        await conn.execute(
            "UPDATE personal_keys SET wrapped = overlay(wrapped PLACING "
            "decode(lpad(to_hex(get_byte(wrapped, 20) # 255), 2, '0'), 'hex') FROM 21 FOR 1) "
            "WHERE person_id = $1",
            user_id,
        )
    env = {k: v for k, v in os.environ.items() if k != "DATA_DIR"} | {"DATABASE_URL": dsn}
    for args in (("state", "--at", str(last), "-o", str(tmp_path / "x")), ("diff", "0", str(last))):
        result = run_cli(env, *args)
        assert result.returncode == 2, result.stderr
        assert f"the data key of person {user_id} does not unwrap" in result.stderr
        assert "Traceback" not in result.stderr


async def live_rows(conn: Conn, table: str) -> list[dict[str, Any]]:
    """A live table's rows as `state` writes them: stored columns, secrets out, key order."""
    spec = next(t for t in table_specs() if t.name == table)
    found = await states.layout(conn)
    hidden = set(secret_columns(table))
    columns = [c for c, _ in found.columns[table] if c not in hidden]
    order = ", ".join(spec.key)
    rows = await conn.fetch(f"SELECT {', '.join(columns)} FROM readmodel.{table} ORDER BY {order}")
    decoded = []
    for row in rows:
        record = dict(row)
        for column, value in record.items():
            if (table, column) in found.json_columns and isinstance(value, str):
                record[column] = json.loads(value)
        decoded.append(json.loads(msgspec.json.encode(record)))
    return decoded


async def test_the_diff_command_prints_what_the_route_answers(
    client: Client, app: web.Application, dsn: str
) -> None:
    start = await head(app)
    await client.post(FEATURES, json={"name": "one", "description": "d"}, headers=ADMIN)
    env = {k: v for k, v in os.environ.items() if k != "DATA_DIR"} | {"DATABASE_URL": dsn}
    as_json = run_cli(env, "diff", str(start), "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout) == await diff_of(client, f"from={start}")
    text = run_cli(env, "diff", str(start), str(await head(app)))
    assert text.returncode == 0
    lines = text.stdout.splitlines()
    assert lines[0].startswith(f"from position {start} (")
    assert lines[0].endswith("1 entity changed")
    assert lines[1] == "flag one: created"
    assert '  description: null -> "d"' in lines
    assert run_cli(env, "diff", "5", "1").returncode == 2
    assert run_cli(env, "diff", "1", "--stream", "nothing").returncode == 2


def test_field_changes_are_sorted_and_values_plain() -> None:
    change = EntityChange(
        entity="flag", id="x", change="changed", fields=[FieldChange(field="a", before=1, after=2)]
    )
    assert msgspec.json.decode(msgspec.json.encode(change)) == {
        "entity": "flag",
        "id": "x",
        "change": "changed",
        "fields": [{"field": "a", "before": 1, "after": 2}],
    }


async def test_a_part_that_is_all_key_shows_whether_it_is_there(
    client: Client, app: web.Application
) -> None:
    """A project's environments have no column but their key: true when there, null when not."""
    await client.post("/api/admin/projects", json={"id": "p2", "name": "P2"}, headers=ADMIN)
    start = await head(app)
    await client.delete("/api/admin/projects/p2/environments/production", headers=ADMIN)
    found = await diff_of(client, f"from={start}")
    assert found["changes"] == [
        {
            "entity": "project",
            "id": "p2",
            "change": "changed",
            "fields": [{"field": "environments.production", "before": True, "after": None}],
        }
    ]
    created = await diff_of(client, f"from={start - 1}&to={start}")
    fields = {f["field"]: (f["before"], f["after"]) for f in created["changes"][0]["fields"]}
    assert fields["environments.development"] == (None, True)
    assert fields["name"] == (None, "P2")


def test_every_entity_of_the_read_models_has_its_place_in_a_diff() -> None:
    # An account is a user or a service account, as its row says.
    kinds = {part.kind for part in PARTS.values() if part is not None} - {"account"}
    assert kinds <= set(KINDS)


async def test_a_diff_over_an_invite_link(client: Client, app: web.Application) -> None:
    before = await head(app)
    resp = await client.post(
        "/api/admin/invite-link/tokens",
        json={"name": "team", "expiresAt": "2099-01-01T00:00:00Z"},
        headers=ADMIN,
    )
    assert resp.status == 201, await resp.text()
    resp = await client.get(f"/api/admin/audit/diff?from={before}&stream=&project=", headers=ADMIN)
    assert resp.status == 200, await resp.text()
    changes = (await resp.json())["changes"]
    assert [c["entity"] for c in changes] == ["invite-link"]
