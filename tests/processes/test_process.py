"""The service as a real subprocess: first start, signals, restarts, CLI commands, bad settings."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import signal
import socket
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any

import aiohttp
import asyncpg
import pytest

from eventlog import migrations
from service import embedded
from tests.harness import (
    GENERATED_TOKEN,
    Harness,
    assert_error_body,
    assert_no_postgres,
    call,
    free_port,
    postmaster_pid,
    run_cli,
    stop,
    wait_exit,
    wait_refused,
)

if TYPE_CHECKING:
    from tests.pg import PgServer

pytestmark = pytest.mark.process

CLIENT_SECRET = re.compile(r"^\*:development\.[0-9a-f]{64}$")
DRAIN_SECONDS = 2.5  # the checks inside it take a new client session each: room for a busy machine
SHUTDOWN_TIMEOUT = 3.0  # in-flight requests get this long after the drain


# --- helpers ---------------------------------------------------------------------------------


def assert_timestamp(value: Any) -> None:
    assert isinstance(value, str)
    assert datetime.fromisoformat(value).tzinfo is not None


def admin_token_json(
    token_id: int, hint: str, created_at: str, seen_at: str | None = None
) -> dict[str, Any]:
    return {
        "id": token_id,
        "secret": hint,
        "tokenName": "admin",
        "username": "admin",
        "alias": None,
        "type": "admin",
        "environment": "*",
        "project": "*",
        "projects": ["*"],
        "createdAt": created_at,
        "expiresAt": None,
        # Its use is written once a minute and when the server stops: None this soon after a
        # start.
        "seenAt": seen_at,
    }


# --- tests ------------------------------------------------------------------------------------


async def test_first_start_prints_one_working_admin_token(harness: Harness) -> None:
    """A first start as on a fresh machine: nothing set, not even a master key."""
    data_dir = harness.new_dir()
    server = await harness.serve(data_dir, PII_MASTER_KEY="")
    token = server.generated_token()
    assert server.stderr().count(token) == 1

    tokens_url = f"{server.url}/api/admin/api-tokens"
    status, body = await call("GET", tokens_url, token=token)
    assert status == 200
    created_at = body["tokens"][0]["createdAt"]
    assert_timestamp(created_at)
    # The listing shows a masked hint, never the secret itself.
    assert body == {"tokens": [admin_token_json(1, f"*:*.{token[4:8]}********", created_at)]}
    assert token[4:] not in json.dumps(body)

    # The token is what grants access: none, or a wrong one, is refused.
    status, body = await call("GET", tokens_url)
    assert status == 401
    assert_error_body(
        body,
        "AuthenticationRequired",
        "You must log in or send a valid API token in the Authorization header",
    )
    status, _ = await call("GET", tokens_url, token=f"*:*.{'0' * 64}")
    assert status == 401

    assert await call("GET", f"{server.url}/health") == (200, {"health": "GOOD"})
    assert await call("GET", f"{server.url}/ready") == (200, {"health": "GOOD"})

    assert await stop(server) == 0
    await assert_no_postgres(data_dir)
    stdout = server.stdout()
    assert token[4:] not in stdout  # not even the random part reaches the log
    events = [line["event"] for line in server.log_lines()]  # and every line is JSON
    applied = len(migrations.load_migrations())
    # The master key was made, said once; the key itself never reaches a log line.
    assert events[: applied + 1] == ["pii_master_key_generated"] + ["migration_applied"] * applied
    key = (data_dir / "pii-master-key").read_text().strip()
    assert (data_dir / "pii-master-key").stat().st_mode & 0o777 == 0o600
    assert key not in stdout
    assert key not in server.stderr()
    assert "listening" in events
    # The LISTEN connections (async projections, client feed) open in the background and may
    # say so late, even once the stop has begun; what the stop itself says comes last.
    assert [e for e in events if e != "projection_listening"][-2:] == ["draining", "stopped"]


@pytest.mark.parametrize(
    "body_after_drain",
    [
        pytest.param(False, id="body-within-drain"),
        pytest.param(True, id="body-after-drain"),
    ],
)
async def test_sigterm_drains_and_finishes_in_flight_request(
    harness: Harness, body_after_drain: bool
) -> None:
    data_dir = harness.new_dir()
    server = await harness.serve(
        data_dir,
        SHUTDOWN_DRAIN_SECONDS=str(DRAIN_SECONDS),
        SHUTDOWN_TIMEOUT_SECONDS=str(SHUTDOWN_TIMEOUT),
    )
    token = server.generated_token()

    payload = b'{"tokenName":"slow","type":"client"}'
    head = (
        "POST /api/admin/api-tokens HTTP/1.1\r\n"
        f"Host: 127.0.0.1:{server.port}\r\n"
        f"Authorization: {token}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\n"
        "\r\n"
    ).encode()
    half = len(payload) // 2
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        writer.write(head + payload[:half])
        await writer.drain()
        await asyncio.sleep(0.2)  # the server parses the headers and waits for the body

        signalled = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        # /ready flips to 503 as soon as the signal is handled, while the listener stays open.
        while True:
            status, body = await call("GET", f"{server.url}/ready")
            if status != 200 or time.monotonic() - signalled > DRAIN_SECONDS:
                break
            await asyncio.sleep(0.02)
        assert status == 503, body
        assert_error_body(body, "ServiceUnavailable", "The service is shutting down")
        assert await call("GET", f"{server.url}/health") == (200, {"health": "GOOD"})
        assert time.monotonic() - signalled < DRAIN_SECONDS
        assert server.proc.poll() is None

        if body_after_drain:
            await wait_refused(server.port)  # the drain is over: no new connections

        writer.write(payload[half:])
        await writer.drain()
        raw = await asyncio.wait_for(reader.read(), SHUTDOWN_TIMEOUT + 5)
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()

    response_head, _, response_body = raw.partition(b"\r\n\r\n")
    assert response_head.split(b"\r\n")[0] == b"HTTP/1.1 201 Created", raw
    created = json.loads(response_body)
    assert CLIENT_SECRET.match(created["secret"]), created
    assert_timestamp(created["createdAt"])
    assert created == {
        "id": 2,
        "secret": created["secret"],
        "tokenName": "slow",
        "username": "slow",
        "alias": None,
        "type": "client",
        "environment": "development",
        "project": "*",
        "projects": ["*"],
        "createdAt": created["createdAt"],
        "expiresAt": None,
        "seenAt": None,
    }

    assert await wait_exit(server) == 0
    await assert_no_postgres(data_dir)
    logs = server.log_lines()
    assert {"event": "draining", "seconds": DRAIN_SECONDS}.items() <= next(
        line for line in logs if line["event"] == "draining"
    ).items()
    posts = [line for line in logs if line["event"] == "request" and line["method"] == "POST"]
    assert [(p["path"], p["status"]) for p in posts] == [("/api/admin/api-tokens", 201)]


async def test_sigint_stops_cleanly(harness: Harness) -> None:
    data_dir = harness.new_dir()
    server = await harness.serve(data_dir)
    assert embedded.postgres_processes(data_dir / "pg") != []
    assert await stop(server, signal.SIGINT) == 0
    await assert_no_postgres(data_dir)
    assert server.log_lines()[-1]["event"] == "stopped"
    assert "Traceback" not in server.stderr()


async def test_data_is_kept_across_restarts(harness: Harness) -> None:
    data_dir = harness.new_dir()
    first = await harness.serve(data_dir)
    token = first.generated_token()
    status, created = await call(
        "POST",
        f"{first.url}/api/admin/api-tokens",
        token=token,
        body={"tokenName": "kept", "type": "client"},
    )
    assert status == 201, created
    assert CLIENT_SECRET.match(created["secret"]), created
    assert await stop(first) == 0
    await assert_no_postgres(data_dir)

    second = await harness.serve(data_dir)
    assert not GENERATED_TOKEN.search(second.stderr()), second.stderr()
    assert "created one" not in second.stderr()
    status, body = await call("GET", f"{second.url}/api/admin/api-tokens", token=token)
    assert status == 200
    admin_created_at = body["tokens"][0]["createdAt"]
    # The first server wrote the admin token's use when it stopped.
    admin_seen_at = body["tokens"][0]["seenAt"]
    assert_timestamp(admin_seen_at)
    hint = f"*:development.{created['secret'].rpartition('.')[2][:4]}********"
    assert body == {
        "tokens": [
            admin_token_json(1, f"*:*.{token[4:8]}********", admin_created_at, admin_seen_at),
            created | {"secret": hint},
        ]
    }
    # The client token was stored too (a client token may not use the admin API).
    status, _ = await call("GET", f"{second.url}/api/admin/api-tokens", token=created["secret"])
    assert status == 403
    assert await stop(second) == 0
    await assert_no_postgres(data_dir)


async def test_a_data_directory_made_before_gets_wal_segments_unzeroed(harness: Harness) -> None:
    """embedded._keep_wal_segments_unzeroed runs on every start, not only on a new server."""
    data_dir = harness.new_dir()
    first = await harness.serve(data_dir)
    uri = (await harness.cli(data_dir, "dsn")).stdout.strip()
    conn = await asyncpg.connect(uri)
    try:
        await conn.execute("ALTER SYSTEM SET wal_init_zero = on")  # as before the setting
        await conn.execute("SELECT pg_reload_conf()")
    finally:
        await conn.close()
    assert await stop(first) == 0
    second = await harness.serve(data_dir)
    conn = await asyncpg.connect((await harness.cli(data_dir, "dsn")).stdout.strip())
    try:
        assert await conn.fetchval("SHOW wal_init_zero") == "off"
    finally:
        await conn.close()
    assert await stop(second) == 0


async def test_cli_commands_share_the_embedded_server_with_serve(harness: Harness) -> None:
    data_dir = harness.new_dir()
    server = await harness.serve(data_dir)
    token = server.generated_token()
    pid = postmaster_pid(data_dir)

    migrate = await harness.cli(data_dir, "migrate")
    assert migrate.returncode == 0, migrate.stderr
    assert migrate.stdout == "applied 0 migration(s): none pending\n"

    verify = await harness.cli(data_dir, "verify")
    assert verify.returncode == 0, verify.stdout + verify.stderr
    lines = verify.stdout.splitlines()
    assert lines[-1] == "verify: OK"
    assert not [line for line in lines if line.startswith("PROBLEM")]

    dsn = await harness.cli(data_dir, "dsn")
    assert dsn.returncode == 0, dsn.stderr
    uri = dsn.stdout.strip()
    assert uri.startswith("postgresql://"), uri
    assert dsn.stdout.count("\n") == 1
    conn = await asyncpg.connect(uri)
    try:
        event_count = await conn.fetchval("SELECT count(*) FROM events")
        # embedded._tune: a new server does not zero-fill its WAL segments, and has its cache
        settings = {
            row["name"]: row["setting"]
            for row in await conn.fetch(
                "SELECT name, setting FROM pg_settings"
                " WHERE name IN ('wal_init_zero', 'shared_buffers')"
            )
        }
    finally:
        await conn.close()
    assert event_count >= 1
    assert lines[0] == f"events: {event_count}"
    assert settings == {
        "wal_init_zero": "off",
        "shared_buffers": str(embedded.shared_buffers_mb() * 1024 // 8),  # in 8 kB pages
    }

    export = await harness.cli(data_dir, "export")
    assert export.returncode == 0, export.stderr
    assert export.stderr.endswith(f"exported {event_count} events\n")
    exported = [json.loads(line) for line in export.stdout.splitlines()]
    assert [e["position"] for e in exported] == list(range(1, event_count + 1))
    previous = "0" * 64
    for event in exported:
        assert {"position", "type", "data", "hash", "prev_hash"} <= set(event)
        assert isinstance(event["data"], dict)
        assert event["prev_hash"] == previous  # the exported chain links up
        assert re.fullmatch(r"[0-9a-f]{64}", event["hash"])
        previous = event["hash"]
    assert token[4:] not in export.stdout  # only the hash of the admin token is recorded

    # The commands joined and left the server serve runs; they did not stop or restart it.
    assert postmaster_pid(data_dir) == pid
    assert await call("GET", f"{server.url}/ready") == (200, {"health": "GOOD"})
    status, body = await call("GET", f"{server.url}/api/admin/api-tokens", token=token)
    assert status == 200
    assert [t["tokenName"] for t in body["tokens"]] == ["admin"]

    assert await stop(server) == 0
    await assert_no_postgres(data_dir)


async def test_dsn_without_running_server_fails(harness: Harness) -> None:
    data_dir = harness.new_dir()
    result = await harness.cli(data_dir, "dsn")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith(f"error: no embedded PostgreSQL is running in {data_dir}")
    assert not (data_dir / "pg").exists()  # it only looked; it started nothing


@pytest.mark.parametrize(
    ("name", "value"),
    [("PORT", "notaport"), ("PORT", "70000"), ("INIT_ADMIN_API_TOKENS", "foo")],
)
def test_bad_setting_exits_2_naming_it(harness: Harness, name: str, value: str) -> None:
    data_dir = harness.new_dir()
    result = run_cli(harness.env(data_dir, **{name: value}), "serve")
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error: Invalid setting")
    assert name in result.stderr
    assert result.stdout == ""
    assert list(data_dir.iterdir()) == []  # refused before any database work


async def test_serve_no_migrate_on_a_database_without_the_schema_says_to_migrate(
    harness: Harness, pg15: PgServer
) -> None:
    dsn = await pg15.new_database(migrated=False)
    try:
        data_dir = harness.new_dir()
        env = harness.env(data_dir, DATABASE_URL=dsn, PORT=str(free_port()))
        result = await asyncio.to_thread(run_cli, env, "serve", "--no-migrate")
        assert result.returncode == 2
        expected = len(migrations.load_migrations())
        assert result.stderr.strip() == (
            f"error: the database schema is at migration 0, this release needs {expected}: run "
            "`python -m service migrate` first (on Kubernetes, the migration Job)"
        )
        assert (await harness.cli(data_dir, "migrate", DATABASE_URL=dsn)).returncode == 0
        server = await harness.serve(data_dir, "--no-migrate", DATABASE_URL=dsn)
        assert await stop(server) == 0
    finally:
        await pg15.drop_database(dsn)


async def test_database_url_on_postgresql_15(harness: Harness, pg15: PgServer) -> None:
    dsn = await pg15.new_database()
    admin = "*:*.pg15-secret-abc-0123456789abcdefghijkl"
    try:
        data_dir = harness.new_dir()
        server = await harness.serve(data_dir, DATABASE_URL=dsn, INIT_ADMIN_API_TOKENS=admin)
        assert "created one" not in server.stderr()
        assert await call("GET", f"{server.url}/ready") == (200, {"health": "GOOD"})
        status, body = await call("GET", f"{server.url}/api/admin/api-tokens", token=admin)
        assert status == 200
        created_at = body["tokens"][0]["createdAt"]
        assert body == {
            "tokens": [admin_token_json(body["tokens"][0]["id"], "*:*.********", created_at)]
        }

        verify = await harness.cli(data_dir, "verify", DATABASE_URL=dsn)
        assert verify.returncode == 0, verify.stdout + verify.stderr
        assert verify.stdout.splitlines()[-1] == "verify: OK"

        assert await stop(server) == 0
        assert list(data_dir.iterdir()) == []  # DATA_DIR was never used
        await assert_no_postgres(data_dir)
    finally:
        await pg15.drop_database(dsn)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("DATABASE_URL", "mysql://x/y", "error: Invalid setting: DATABASE_URL"),
        ("HOST", "host.invalid", "error: cannot listen on HOST=host.invalid"),
    ],
)
def test_unusable_settings_exit_2_before_any_database_work(
    harness: Harness, name: str, value: str, message: str
) -> None:
    data_dir = harness.new_dir()
    result = run_cli(harness.env(data_dir, **{name: value}), "serve")
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(message)
    assert "Traceback" not in result.stderr
    assert list(data_dir.iterdir()) == []


def test_a_port_in_use_exits_2(harness: Harness) -> None:
    data_dir = harness.new_dir()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli(harness.env(data_dir, PORT=str(port)), "serve")
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"error: cannot listen on HOST=127.0.0.1 PORT={port}")
    assert list(data_dir.iterdir()) == []


def test_an_unreachable_database_exits_2(harness: Harness) -> None:
    data_dir = harness.new_dir()
    url = f"postgresql://nobody@127.0.0.1:{free_port()}/flags"
    result = run_cli(harness.env(data_dir, DATABASE_URL=url, PORT=str(free_port())), "serve")
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error: the database could not be used")
    assert "Traceback" not in result.stderr


async def test_a_request_stuck_in_the_database_does_not_hold_up_the_stop(
    harness: Harness,
) -> None:
    data_dir = harness.new_dir()
    server = await harness.serve(data_dir, SHUTDOWN_TIMEOUT_SECONDS="2")
    token = server.generated_token()
    dsn = (await harness.cli(data_dir, "dsn")).stdout.strip()
    blocker = await asyncpg.connect(dsn)
    try:
        await blocker.execute("BEGIN; LOCK readmodel.api_tokens")  # every auth lookup waits
        stuck = asyncio.create_task(call("GET", f"{server.url}/api/admin/api-tokens", token=token))
        await asyncio.sleep(0.5)
        started = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        assert await wait_exit(server, timeout=15) == 0
        # 2 s for requests, then at most ~5 s more; room for a busy machine, not for a hang
        assert time.monotonic() - started < 12
        with contextlib.suppress(aiohttp.ClientError, TimeoutError):
            await stuck
    finally:
        with contextlib.suppress(Exception):
            await blocker.close()
    await assert_no_postgres(data_dir)


@pytest.mark.parametrize("delay", [0.15, 0.35, 0.6])
async def test_a_signal_during_start_up_leaves_no_postgres(harness: Harness, delay: float) -> None:
    data_dir = harness.new_dir()
    server = harness.start(data_dir)
    await asyncio.sleep(delay)
    server.proc.send_signal(signal.SIGTERM)
    # -15: the signal came before Python set its handler, so nothing had started yet; else a
    # requested stop: 0 (not 130, which is Ctrl-C's)
    assert await wait_exit(server) in {0, -signal.SIGTERM}
    await assert_no_postgres(data_dir)
