"""Faults reproduced with real processes and sockets: the database going away, the
embedded PostgreSQL dying, hostile connections, compressed bombs, SIGTERM under keep-alive load.

The figures each test prints (`-s`) are the ones docs/operations.md quotes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import signal
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import aiohttp
import asyncpg
import psutil
import pytest

from tests.factories import ADMIN_TOKEN, FEATURES, create_flag, gzipped_zeros
from tests.harness import (
    Harness,
    Server,
    assert_error_body,
    call,
    client,
    postmaster_pid,
    report,
    stop,
    wait_exit,
    wait_read,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.pg import Cluster

pytestmark = pytest.mark.process

DATABASE_DOWN = "The database is unavailable; try again shortly"


async def activity_lag(dsn: str) -> int:
    """Events the async read model (activity) has not applied yet."""
    conn = await asyncpg.connect(dsn)
    try:
        return int(
            await conn.fetchval(
                "SELECT (SELECT coalesce(max(position), 0) FROM events) - position "
                "FROM projection_checkpoints WHERE name = 'activity_daily'"
            )
        )
    finally:
        await conn.close()


async def seconds_to_catch_up(server: Server, dsn: str, name: str) -> float:
    async with client(server.url) as http:
        assert await create_flag(http, name) == 200
    started = time.monotonic()
    while await activity_lag(dsn) > 0:
        assert time.monotonic() - started < 10, "the async read model never caught up"
        await asyncio.sleep(0.01)
    return time.monotonic() - started


def log_events(server: Server, name: str) -> list[dict[str, Any]]:
    return [line for line in server.log_lines() if line.get("event") == name]


# --- the database goes away and comes back ----------------------------------------------------


async def test_a_database_outage_is_503_then_recovers_and_listen_is_reopened(
    harness: Harness, cluster: Cluster
) -> None:
    dsn = await cluster.create_database()
    server = await harness.serve(
        harness.new_dir(), DATABASE_URL=dsn, INIT_ADMIN_API_TOKENS=ADMIN_TOKEN
    )
    async with client(server.url) as http:
        assert await create_flag(http, "before") == 200
    before = await seconds_to_catch_up(server, dsn, "before-restart")

    await asyncio.to_thread(cluster.stop)
    outage_started = time.monotonic()
    answers: list[tuple[str, int, str | None]] = []
    async with aiohttp.ClientSession(headers={"Authorization": ADMIN_TOKEN}) as session:
        while time.monotonic() - outage_started < 3:
            for method, path, body in [
                ("GET", FEATURES, None),
                ("POST", FEATURES, {"name": "during"}),
                ("GET", "/api/admin/user-admin/search?q=a", None),
                ("GET", "/health", None),
                ("GET", "/ready", None),
            ]:
                async with session.request(method, server.url + path, json=body) as resp:
                    payload = await resp.json()
                    answers.append((path, resp.status, resp.headers.get("Retry-After")))
                    if path not in ("/health", "/ready"):
                        assert_error_body(payload, "ServiceUnavailable", DATABASE_DOWN)
        outage = time.monotonic() - outage_started
        await asyncio.to_thread(cluster.start)
        restarted = time.monotonic()
        refused_after = 0  # 503s while PostgreSQL starts again: logged as the outage's are
        while True:
            async with session.get(server.url + FEATURES) as resp:
                if resp.status == 200:
                    break
                assert resp.status == 503
                refused_after += 1
            assert time.monotonic() - restarted < 5, "no recovery within 5 s"
            await asyncio.sleep(0.005)
        recovery = time.monotonic() - restarted
        unavailable = time.monotonic() - outage_started  # a warning line a second at most
    after = await seconds_to_catch_up(server, dsn, "after-restart")
    assert await stop(server) == 0

    statuses = {(path, status, retry) for path, status, retry in answers}
    assert statuses == {
        (FEATURES, 503, "2"),
        ("/api/admin/user-admin/search?q=a", 503, "2"),
        ("/health", 200, None),
        ("/ready", 503, "2"),
    }, statuses
    requests = len(answers)
    warnings = log_events(server, "database_unavailable")
    assert 1 <= len(warnings) <= unavailable + 1, [w["timestamp"] for w in warnings]
    logged = sum(w["suppressed"] for w in warnings) + len(warnings)
    assert logged <= requests * 3 // 5 + refused_after
    tracebacks = [line["exception"][-300:] for line in server.log_lines() if "exception" in line]
    assert tracebacks == []
    assert "Traceback" not in server.stderr(), server.stderr()[-1500:]
    assert not log_events(server, "unhandled_error")
    assert log_events(server, "projection_listen_lost")
    assert log_events(server, "projection_listening")[-1]["attempts"] >= 1
    assert after < 3.0  # by NOTIFY again (a wake-up coalesces 0.5 s), not by a poll
    report(
        f"\noutage {outage:.1f} s: {requests} requests, {len(warnings)} warning lines, "
        f"stdout {len(server.stdout())} bytes; recovery {recovery * 1000:.0f} ms after the "
        f"start returned; async catch-up {before:.2f} s before, {after:.2f} s after the restart"
    )


async def test_a_database_restart_under_load_is_200_or_503_never_500(
    harness: Harness, cluster: Cluster
) -> None:
    """While the server restarts, asyncpg's pool reconnecting can meet a reset connection
    (ConnectionResetError, which a client that leaves also raises): the database's is a 503.
    Deletes run together (group commit), so one such error would fail a whole batch."""
    dsn = await cluster.create_database()
    server = await harness.serve(
        harness.new_dir(), DATABASE_URL=dsn, INIT_ADMIN_API_TOKENS=ADMIN_TOKEN
    )
    statuses: Counter[int] = Counter()
    bodies: list[Any] = []
    restarted = asyncio.Event()

    async def load(session: aiohttp.ClientSession, worker: int) -> None:
        calls = [
            ("POST", "/api/admin/user-admin/inactive/delete", {"ids": [999_999, worker]}),
            ("GET", "/api/admin/user-admin/search?q=ab", None),
        ]

        async def one(n: int) -> None:
            method, path, body = calls[n % 2]
            async with session.request(method, server.url + path, json=body) as resp:
                statuses[resp.status] += 1
                if resp.status != 200:
                    bodies.append(await resp.json())

        n = 0
        while not restarted.is_set():
            await one(n)
            n += 1
        for m in range(n, n + 4):  # and a few once the restarts are over
            await one(m)

    async with aiohttp.ClientSession(headers={"Authorization": ADMIN_TOKEN}) as session:
        workers = [asyncio.ensure_future(load(session, w)) for w in range(48)]
        await asyncio.sleep(0.5)
        for _ in range(3):
            await asyncio.to_thread(cluster.stop, "fast")
            await asyncio.to_thread(cluster.start)
            await asyncio.sleep(0.3)
        restarted.set()
        await asyncio.wait_for(asyncio.gather(*workers), 60)
    assert await stop(server) == 0
    tracebacks = [line["exception"][-600:] for line in server.log_lines() if "exception" in line]
    assert set(statuses) <= {200, 503}, (statuses, tracebacks)
    assert statuses[200] > 0
    for body in bodies:
        assert_error_body(body, "ServiceUnavailable", DATABASE_DOWN)
    assert not log_events(server, "unhandled_error")
    report(f"\nthree restarts under load: {dict(statuses)}")


async def test_a_database_that_hangs_gets_503_and_does_not_hold_up_the_stop(
    harness: Harness, cluster: Cluster
) -> None:
    dsn = await cluster.create_database()
    server = await harness.serve(
        harness.new_dir(),
        DATABASE_URL=dsn,
        INIT_ADMIN_API_TOKENS=ADMIN_TOKEN,
        DB_COMMAND_TIMEOUT_SECONDS="2",  # longer than the stop's timeout: the hard case
        SHUTDOWN_TIMEOUT_SECONDS="1",
    )
    async with client(server.url) as http:
        for number in range(4):  # connections in the pool, which the freeze will hold
            assert await create_flag(http, f"warm-{number}") == 200
    await asyncio.to_thread(cluster.freeze)
    try:
        started = time.monotonic()
        answers = await asyncio.gather(
            *(call("GET", server.url + FEATURES, token=ADMIN_TOKEN) for _ in range(4))
        )
        waited = time.monotonic() - started
        for status, body in answers:
            assert status == 503
            assert_error_body(body, "ServiceUnavailable", DATABASE_DOWN)
        reader, writer = await open_raw(server)
        writer.write(
            f"GET {FEATURES} HTTP/1.1\r\nHost: x\r\nAuthorization: {ADMIN_TOKEN}\r\n\r\n".encode()
        )
        await writer.drain()
        await wait_read(server.port, 1)  # the request is in: not an idle connection to close
        server.proc.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        code = await wait_exit(server, timeout=30)
        exited = time.monotonic() - signalled
        head, _, payload = (await reader.read()).partition(b"\r\n\r\n")
        writer.close()
        status, body = int(head.split()[1]), json.loads(payload)
    finally:
        await asyncio.to_thread(cluster.thaw)
    assert (code, status, body["name"]) == (0, 503, "ServiceUnavailable")
    assert waited < 12
    # The stop's timeout, the statement timeout and 1 s for the 503, then CLOSE_SECONDS for
    # the background tasks together and as much for the pool, and a second to spare.
    assert exited < 1 + (2 + 1) + 2 + 2 + 1
    assert not [line for line in server.log_lines() if "exception" in line]
    report(f"\nfrozen database: 503 after {waited:.1f} s; exit 0 {exited:.1f} s after SIGTERM")


async def test_liveness_never_depends_on_the_database(harness: Harness, cluster: Cluster) -> None:
    dsn = await cluster.create_database()
    server = await harness.serve(
        harness.new_dir(), DATABASE_URL=dsn, INIT_ADMIN_API_TOKENS=ADMIN_TOKEN
    )
    await asyncio.to_thread(cluster.stop, "immediate")
    deadline = time.monotonic() + 7  # longer than the embedded watchdog needs to act
    while time.monotonic() < deadline:
        status, _ = await call("GET", server.url + "/health")
        assert status == 200
        await asyncio.sleep(0.2)
    assert server.proc.poll() is None
    assert await stop(server) == 0


# --- the embedded PostgreSQL dies -------------------------------------------------------------


async def test_the_service_exits_1_when_its_embedded_postgres_dies_and_starts_again(
    harness: Harness,
) -> None:
    data_dir = harness.new_dir()
    server = await harness.serve(data_dir, INIT_ADMIN_API_TOKENS=ADMIN_TOKEN)
    async with client(server.url) as http:
        assert await create_flag(http, "kept") == 200
    os.kill(postmaster_pid(data_dir), signal.SIGKILL)
    killed = time.monotonic()
    code = await wait_exit(server, timeout=10)
    noticed = time.monotonic() - killed
    assert code == 1
    assert noticed < 8  # the 1 s watchdog, then the shutdown; room for a busy machine
    assert "Traceback" not in server.stderr(), server.stderr()
    (died,) = log_events(server, "embedded_postgres_died")
    assert died["level"] == "error"
    # What a supervisor does next: start it again. PostgreSQL recovers; the flag is there.
    again = await harness.serve(data_dir, INIT_ADMIN_API_TOKENS=ADMIN_TOKEN)
    status, body = await call("GET", again.url + FEATURES + "/kept", token=ADMIN_TOKEN)
    assert (status, body["name"]) == (200, "kept")
    assert await stop(again) == 0
    report(f"\nexit 1 {noticed:.2f} s after kill -9 of the postmaster")


# --- idle and slow connections ----------------------------------------------------------------


async def open_raw(server: Server) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", server.port)


async def test_slowloris_connections_are_closed_and_idle_ones_time_out(harness: Harness) -> None:
    server = await harness.serve(
        harness.new_dir(),
        REQUEST_HEADER_TIMEOUT_SECONDS="2",
        KEEPALIVE_TIMEOUT_SECONDS="4",
    )

    async def slowloris() -> bytes:
        """Headers a line every 0.5 s, never the blank line; what came back once closed."""
        reader, writer = await open_raw(server)
        answer = b""
        try:
            writer.write(b"GET /health HTTP/1.1\r\nHost: x\r\n")
            for number in range(100):
                writer.write(f"X-Slow-{number}: a\r\n".encode())
                await writer.drain()
                with contextlib.suppress(TimeoutError):
                    answer += await asyncio.wait_for(reader.read(65536), 0.5)
                if reader.at_eof():
                    return answer
        except ConnectionResetError:  # closed with our unread lines in its buffer: RST
            return answer or b"reset"
        finally:
            writer.close()
        return b"still open"

    started = time.monotonic()
    slow = [asyncio.create_task(slowloris()) for _ in range(300)]
    await asyncio.sleep(0.5)
    status, _ = await call("GET", server.url + "/health")  # others are served meanwhile
    assert status == 200
    answers = await asyncio.wait_for(asyncio.gather(*slow), 20)
    closed_after = time.monotonic() - started
    kinds = Counter(a[:28] for a in answers)
    assert set(kinds) <= {b"HTTP/1.1 408 Request Timeout", b"reset"}, kinds
    assert kinds[b"HTTP/1.1 408 Request Timeout"] > 0
    assert closed_after < 10  # the 2 s timeout for 300 at once; room for a busy machine
    timed_out = next(a for a in answers if a.startswith(b"HTTP/1.1 408"))
    assert json.loads(timed_out.partition(b"\r\n\r\n")[2])["name"] == "RequestTimeout"

    # One write at once, then silence: the clock started with that first byte.
    reader, writer = await open_raw(server)
    writer.write(b"GET /health HTTP/1.1\r\nHost: x\r\n")
    sent = time.monotonic()
    assert (await asyncio.wait_for(reader.read(), 10)).startswith(b"HTTP/1.1 408 ")
    silent_for = time.monotonic() - sent
    writer.close()
    assert 1.5 < silent_for < 5  # the 2 s header timeout, from the first byte

    # A keep-alive connection that answered once and then idles is closed after 4 s, not 2.
    reader, writer = await open_raw(server)
    writer.write(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    await reader.readuntil(b'{"health":"GOOD"}')
    idle_from = time.monotonic()
    assert await asyncio.wait_for(reader.read(), 10) == b""
    idle_for = time.monotonic() - idle_from
    writer.close()
    assert 3.0 < idle_for < 8  # the 4 s keep-alive timeout, not the 2 s header one
    assert await stop(server) == 0
    report(
        f"\n300 slowloris connections closed within {closed_after:.1f} s ({dict(kinds)}); "
        f"an idle keep-alive one after {idle_for:.1f} s"
    )


async def test_slowly_sent_bodies_are_cut_off(harness: Harness) -> None:
    server = await harness.serve(harness.new_dir(), REQUEST_BODY_TIMEOUT_SECONDS="2")

    async def trickle() -> tuple[bytes, float]:
        """A sign-in body announced at 100,000 bytes and sent a byte every 0.5 s."""
        reader, writer = await open_raw(server)
        started = time.monotonic()
        writer.write(
            b"POST /auth/simple/login HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"
        )
        answer = b""
        try:
            for _ in range(60):
                writer.write(b" ")
                await writer.drain()
                with contextlib.suppress(TimeoutError):
                    answer += await asyncio.wait_for(reader.read(65536), 0.5)
                if reader.at_eof():
                    break
        except ConnectionResetError:
            pass
        finally:
            writer.close()
        return answer, time.monotonic() - started

    results = await asyncio.wait_for(asyncio.gather(*(trickle() for _ in range(50))), 40)
    status, _ = await call("GET", server.url + "/health")
    assert status == 200
    assert await stop(server) == 0
    for answer, _ in results:
        assert answer.startswith(b"HTTP/1.1 408 Request Timeout"), answer[:60]
        assert json.loads(answer.partition(b"\r\n\r\n")[2])["name"] == "RequestTimeout"
    closed = max(seconds for _, seconds in results)
    assert closed < 2 + 2 + 5  # the timeout, the 2 s linger, slack for a busy machine
    report(f"\n50 trickled bodies: 408 and closed within {closed:.1f} s")


def nofile(soft: int, hard: int) -> Callable[[], None]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    return limit


async def hold_idle(server: Server, count: int) -> list[asyncio.StreamWriter]:
    writers = []
    for _ in range(count):
        _, writer = await open_raw(server)
        writers.append(writer)
    return writers


async def other_clients_requests(server: Server, count: int) -> list[int]:
    statuses = []
    for _ in range(count):
        status, _ = await call("GET", server.url + FEATURES, token=ADMIN_TOKEN)
        statuses.append(status)
    return statuses


@pytest.mark.parametrize(
    ("soft", "hard"),
    [(256, 4096), (1024, 1024)],
    ids=["soft-limit-raised", "fewer-files-than-connections"],
)
async def test_1100_idle_connections_do_not_fail_other_clients(
    harness: Harness, soft: int, hard: int
) -> None:
    server = await harness.serve(
        harness.new_dir(), preexec=nofile(soft, hard), INIT_ADMIN_API_TOKENS=ADMIN_TOKEN
    )
    assert psutil.Process(server.proc.pid).rlimit(psutil.RLIMIT_NOFILE) == (hard, hard)
    idle = await hold_idle(server, 1100)
    statuses = await other_clients_requests(server, 200)
    for writer in idle:
        writer.close()
    assert statuses == [200] * 200
    assert await stop(server) == 0
    (listening,) = log_events(server, "listening")
    assert listening["open_files"] == hard
    full = log_events(server, "connections_full")
    if listening["max_connections"] >= 1100 + 10:
        assert not full
    else:  # connections beyond the limit closed idle ones, one line a second at most
        assert full
        assert {line["action"] for line in full} == {"closed_idle"}
    assert "out of system resource" not in server.stderr()
    report(f"\nnofile {soft}/{hard}: max_connections {listening['max_connections']}, 200 of 200")


async def test_beyond_the_limit_with_no_idle_connection_the_newcomer_gets_a_503(
    harness: Harness,
) -> None:
    server = await harness.serve(harness.new_dir(), MAX_CONNECTIONS="20")
    busy = []
    for _ in range(20):  # each in the middle of sending its headers: none is idle
        _, writer = await open_raw(server)
        writer.write(b"GET /health HTTP/1.1\r\n")
        busy.append(writer)
    await wait_read(server.port, 20)

    async def newcomer() -> bytes:
        reader, writer = await open_raw(server)
        writer.write(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        try:
            return await asyncio.wait_for(reader.read(), 10)
        except ConnectionResetError:
            return b"reset"
        finally:
            writer.close()

    answers = await asyncio.gather(*(newcomer() for _ in range(10)))
    for writer in busy:
        writer.close()
    assert await stop(server) == 0
    for answer in answers:
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 503 Service Unavailable"), answer[:40]
        assert json.loads(body)["name"] == "ServiceUnavailable"
    assert {line["action"] for line in log_events(server, "connections_full")} == {"refused"}


# --- compressed bodies ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gzip_bomb() -> bytes:
    """1 GiB of zeros in one gzip member of about 1 MB."""
    return gzipped_zeros(2**24)


async def test_gzip_bombs_do_not_stall_the_event_loop(harness: Harness, gzip_bomb: bytes) -> None:
    assert len(gzip_bomb) < 1_100_000
    server = await harness.serve(harness.new_dir(), INIT_ADMIN_API_TOKENS=ADMIN_TOKEN)
    done = asyncio.Event()
    answers: list[int] = []

    async def bomber(token: str | None) -> None:
        headers = {"Content-Encoding": "gzip", "Content-Type": "application/json"}
        if token:
            headers["Authorization"] = token
        async with aiohttp.ClientSession() as session:
            while not done.is_set():
                async with session.post(
                    server.url + FEATURES, data=gzip_bomb, headers=headers
                ) as r:
                    answers.append(r.status)

    bombers = [asyncio.create_task(bomber(ADMIN_TOKEN if n % 2 else None)) for n in range(4)]
    latencies = []
    async with aiohttp.ClientSession() as session:
        await asyncio.sleep(0.2)
        for _ in range(200):
            started = time.perf_counter()
            async with session.get(server.url + "/health") as resp:
                assert resp.status == 200
            latencies.append(time.perf_counter() - started)
            await asyncio.sleep(0.01)
    done.set()
    await asyncio.gather(*bombers)
    rss = psutil.Process(server.proc.pid).memory_info().rss
    assert await stop(server) == 0
    p99 = statistics.quantiles(latencies, n=100)[98]
    assert set(answers) == {401, 413}
    # A bomb inflated whole would hold the loop for seconds; 0.25 s leaves room for a busy
    # machine.
    assert p99 < 0.25
    assert rss < 200 * 2**20
    report(
        f"\n{len(answers)} gzip bombs (1 GiB each) answered 401/413; /health p99 "
        f"{p99 * 1000:.1f} ms, max {max(latencies) * 1000:.1f} ms; RSS {rss / 2**20:.0f} MB"
    )


# --- SIGTERM under keep-alive load ------------------------------------------------------------


@dataclass
class KeepAliveClient:
    """One HTTP/1.1 client on a keep-alive connection, counting what a real client would see."""

    port: int
    ok: int = 0
    failed: list[str] = field(default_factory=list)
    closes: int = 0  # answers with Connection: close
    idle_closed: int = 0  # a reused connection closed before any byte of the answer: resent

    async def run(self) -> None:
        request = (
            f"GET {FEATURES} HTTP/1.1\r\nHost: x\r\nAuthorization: {ADMIN_TOKEN}\r\n\r\n".encode()
        )
        while True:
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
            except ConnectionRefusedError:
                return  # the server stopped listening: a load balancer would go elsewhere
            sent = 0
            try:
                while True:
                    writer.write(request)
                    sent += 1
                    head = await reader.readuntil(b"\r\n\r\n")
                    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                    await reader.readexactly(length)
                    if not head.startswith(b"HTTP/1.1 200 "):
                        self.failed.append(head.split(b"\r\n")[0].decode())
                    else:
                        self.ok += 1
                    if b"connection: close" in head.lower():
                        self.closes += 1
                        break
            except (asyncio.IncompleteReadError, ConnectionResetError) as exc:
                partial = getattr(exc, "partial", b"")
                if sent > 1 and not partial:
                    self.idle_closed += 1  # closed as idle while this request was on its way
                else:
                    self.failed.append(repr(exc))
            finally:
                writer.close()


async def test_sigterm_under_keep_alive_load_fails_no_request(harness: Harness) -> None:
    server = await harness.serve(
        harness.new_dir(), INIT_ADMIN_API_TOKENS=ADMIN_TOKEN, SHUTDOWN_TIMEOUT_SECONDS="10"
    )
    clients = [KeepAliveClient(server.port) for _ in range(16)]
    running = [asyncio.create_task(c.run()) for c in clients]
    await asyncio.sleep(1.5)
    server.proc.send_signal(signal.SIGTERM)
    signalled = time.monotonic()
    code = await wait_exit(server, timeout=15)
    exited = time.monotonic() - signalled
    await asyncio.wait_for(asyncio.gather(*running), 10)
    failed = [f for c in clients for f in c.failed]
    ok = sum(c.ok for c in clients)
    assert code == 0
    assert failed == []
    assert ok > 100
    assert sum(c.closes for c in clients) >= 1
    assert exited < 3
    (stopped,) = log_events(server, "stopped")
    report(
        f"\nSIGTERM under 16 keep-alive clients: {ok} answered, 0 failed, "
        f"{sum(c.closes for c in clients)} answers with Connection: close, "
        f"{sum(c.idle_closed for c in clients)} idle connections closed "
        f"({stopped['idle_connections_closed']} by the server); exit 0 after {exited:.2f} s"
    )
