"""`python -m service import-users FILE`: batches, bad lines, re-runs, and signing in after."""

from __future__ import annotations

import asyncio
import json
import os
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import argon2
import pytest

from eventlog import connections
from eventlog.events.users import UserCreated
from projections.verify import verify
from service.appkeys import POOL
from service.users import importer
from tests.factories import append, work
from tests.harness import run_cli

if TYPE_CHECKING:
    from pathlib import Path

    import asyncpg
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]


def line(**fields: Any) -> str:
    return json.dumps(fields) + "\n"


async def count(conn: asyncpg.Connection, sql: str = "SELECT count(*) FROM users") -> int:
    return int(await conn.fetchval(sql))


async def test_batches_of_a_thousand_one_event_each(conn: asyncpg.Connection) -> None:
    lines = [line(email=f"u{i}@example.com", name=f"User {i}") for i in range(2500)]
    report = await importer.import_users(work(), conn, lines, source="users.jsonl")
    assert (report.imported, report.skipped, report.bad_lines) == (2500, 0, [])
    events = "SELECT count(*) FROM events WHERE type = 'UsersImported'"
    assert await count(conn, events) == 3
    assert await count(conn) == 2500
    # Re-running the same file creates nobody twice.
    again = await importer.import_users(work(), conn, lines, source="users.jsonl")
    assert (again.imported, again.skipped) == (0, 2500)
    assert await count(conn, events) == 3
    assert (await verify(conn)).ok


async def test_a_bad_line_refuses_its_batch_only(conn: asyncpg.Connection) -> None:
    lines = [line(username=f"u{i}") for i in range(1000)]  # batch 1: lines 1-1000
    lines[9] = line(name="no email or username")
    lines[19] = "{not json\n"
    lines += [line(username=f"v{i}", rootRole="Editor") for i in range(10)]  # batch 2
    report = await importer.import_users(work(), conn, lines, source="x")
    assert [n for n, _ in report.bad_lines] == [10, 20]
    assert "You must specify username or email" in report.bad_lines[0][1]
    assert "Malformed JSON" in report.bad_lines[1][1]
    assert (report.imported, report.batches_refused) == (10, 1)
    assert await count(conn) == 10
    assert await count(conn, "SELECT count(*) FROM users WHERE root_role = 2") == 10


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"email": "not-an-email"}, "is not a valid email"),
        ({"username": "x", "rootRole": 9}, "Could not find rootRole=9"),
        ({"username": "x", "createdAt": "2999-01-01T00:00:00Z"}, "may not be in the future"),
        ({"username": "x", "seenAt": "2020-01-01T00:00:00"}, "timezone"),
        ({"username": "x", "passwordHash": "$2a$10$abc"}, "must be an argon2 hash"),
        ({"username": 5}, "Expected `str | null`"),
    ],
)
async def test_bad_lines_say_why(
    conn: asyncpg.Connection, fields: dict[str, Any], message: str
) -> None:
    report = await importer.import_users(work(), conn, [line(**fields)], source="x")
    assert len(report.bad_lines) == 1
    assert message in report.bad_lines[0][1]
    assert await count(conn) == 0


async def test_a_byte_order_mark_is_not_part_of_the_first_line(conn: asyncpg.Connection) -> None:
    lines = ["\ufeff" + line(email="bom@example.com"), line(email="next@example.com")]
    report = await importer.import_users(work(), conn, lines, source="x")
    assert (report.imported, report.bad_lines) == (2, [])


async def test_duplicates_within_a_file_and_against_existing_users(
    conn: asyncpg.Connection,
) -> None:
    first = await importer.import_users(work(), conn, [line(email="A@Example.com")], source="x")
    assert first.imported == 1
    lines = [
        line(email="a@example.com"),
        line(username="b"),
        line(username="b"),
        line(email="c@example.com"),
    ]
    report = await importer.import_users(work(), conn, lines, source="x")
    assert (report.imported, report.skipped) == (2, 2)


async def test_imported_users_keep_their_dates_and_can_sign_in(
    client: Client, app: web.Application, tmp_path: Path, dsn: str
) -> None:
    password = "Imp0rted!Password"
    hashed = argon2.PasswordHasher().hash(password)
    created = "2020-03-04T05:06:07.123456+00:00"
    source = tmp_path / "users.jsonl"
    source.write_text(
        line(
            email="old@example.com",
            name="Old",
            createdAt=created,
            seenAt="2021-01-01T00:00:00Z",
            passwordHash=hashed,
        )
        + "\n"
        + line(username="new", rootRole=1)
    )
    env = {k: v for k, v in os.environ.items() if k != "DATA_DIR"} | {"DATABASE_URL": dsn}
    result = run_cli(env, "import-users", str(source))
    assert result.returncode == 0, result.stderr
    assert "imported 2 users, skipped 0" in result.stderr
    async with app[POOL].acquire() as conn:  # vacuumed and analyzed: search sizes its work by it
        assert await conn.fetchval(
            "SELECT reltuples FROM pg_class WHERE oid = 'readmodel.users'::regclass"
        ) == await conn.fetchval("SELECT count(*) FROM readmodel.users")
    body = await (
        await client.get(
            "/api/admin/user-admin",
            headers={"Authorization": "*:*.test-admin-secret-0123456789abcdefghijklmnop"},
        )
    ).json()
    old = next(u for u in body["users"] if u.get("email") == "old@example.com")
    assert old["createdAt"] == "2020-03-04T05:06:07.123456Z"
    assert old["seenAt"] == "2021-01-01T00:00:00Z"
    resp = await client.post(
        "/auth/simple/login", json={"username": "old@example.com", "password": password}
    )
    assert resp.status == 200
    assert datetime.fromisoformat((await resp.json())["seenAt"]) > datetime(2026, 1, 1, tzinfo=UTC)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(line(email="nope"))
    result = run_cli(env, "import-users", str(bad))
    assert result.returncode == 1
    assert "line 1: " in result.stderr
    result = run_cli(env, "import-users", str(tmp_path / "missing.jsonl"))
    assert (result.returncode, result.stderr.strip()) == (
        2,
        f"error: cannot read {tmp_path / 'missing.jsonl'}: No such file or directory",
    )


async def test_a_user_created_meanwhile_is_skipped_not_a_crash(
    conn: asyncpg.Connection, dsn: str
) -> None:
    """The API creates taken@example.com while the import checks its batch: the batch's append
    meets the e-mail's unique index, writes nothing, is checked again and skips that user."""
    blocker = await connections.connect(dsn)
    try:
        tx = blocker.transaction()
        await tx.start()
        user_id = int(await blocker.fetchval("SELECT nextval('user_ids')"))
        created = UserCreated(
            user_id=user_id,
            name=None,
            username=None,
            email="taken@example.com",
            root_role=3,
            created_at=datetime.now(UTC),
        )
        await append(blocker, [created], stream=("user", str(user_id)), expected="no-stream")
        lines = [line(email="taken@example.com"), line(email="free@example.com")]
        importing = asyncio.create_task(importer.import_users(work(), conn, lines, source="race"))
        await asyncio.sleep(0.3)  # the import waits on the uncommitted e-mail
        await tx.commit()
        report = await importing
    finally:
        await blocker.close()
    assert (report.imported, report.skipped, report.batches_refused) == (1, 1, 0)
    emails = [r["email"] for r in await conn.fetch("SELECT email FROM users ORDER BY id")]
    assert emails == ["taken@example.com", "free@example.com"]
    assert (await verify(conn)).ok
