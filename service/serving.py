"""`serve`: start the HTTP server, and stop it gracefully on SIGTERM or Ctrl-C."""

from __future__ import annotations

import asyncio
import gc
import signal
import socket
import sys
from typing import TYPE_CHECKING

import structlog
from aiohttp import web

from eventlog import connections, migrations
from eventlog.errors import ConfigError
from projections.inline import apply_inline
from service import bootstrap, embedded, protocol
from service.app import create_app
from service.appkeys import LIFECYCLE
from service.work import Work

if TYPE_CHECKING:
    from service.settings import Settings

log = structlog.get_logger()

STRAGGLER_SECONDS = 0.5
# The cyclic collector, tuned for a server. Its full passes walk every long-lived object (a long
# pause with a large client model) and, with Python's defaults (700, 10, 10), come often under
# concurrent writes: requests waiting on the database survive the young passes and fill the old
# generation's quota. A larger young generation lets them die young, and a full pass waits for
# 100 middle passes instead of 10, so full passes are rare (docs/benchmarks.md, "Inactive-user
# deletes").
GC_THRESHOLDS = (10_000, 10, 100)


def check_listen_address(host: str, port: int) -> None:
    """Fail before starting anything when HOST:PORT cannot be listened on."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        with socket.socket(infos[0][0], socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(infos[0][4])
    except OSError as exc:
        raise ConfigError(f"cannot listen on HOST={host} PORT={port}: {exc}") from None


async def serve(
    settings: Settings, dsn: str, *, migrate: bool = True, postmaster: int | None = None
) -> int:
    """Serve until SIGTERM or Ctrl-C (exit 0), or until the embedded PostgreSQL whose postmaster
    is `postmaster` dies (exit 1, so that a supervisor starts us, and it, again)."""
    conn = await connections.connect(dsn)
    try:
        if migrate:
            await migrations.migrate(conn)
        else:
            await migrations.require_schema(conn)
        new_token = await bootstrap.seed(Work(apply_inline), conn, settings.init_admin_api_tokens)
    finally:
        await conn.close()
    if new_token is not None:
        # Shown once, never logged: the only place this secret ever appears.
        print(
            f"No admin API token existed; created one (shown only now): {new_token}",
            file=sys.stderr,
            flush=True,
        )
    open_files = protocol.raise_open_files_limit()
    app = create_app(settings, dsn)
    # In-flight requests get SHUTDOWN_TIMEOUT_SECONDS below; aiohttp's own wait (applied twice:
    # before and after cancelling a handler) only covers the stragglers.
    options = protocol.runner_options(settings, open_files)
    runner = protocol.Runner(
        app, handle_signals=False, shutdown_timeout=STRAGGLER_SECONDS, **options
    )
    await runner.setup()
    await web.TCPSite(runner, settings.host, settings.port, backlog=protocol.BACKLOG).start()
    # What start-up made (modules, the app, decoders) lives as long as the process: kept out
    # of the cyclic collector's full passes, each of which would walk all of it, a pause that
    # lands in some request's p99 (docs/benchmarks.md, "Searching the event log").
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    log.info(
        "listening",
        host=settings.host,
        port=settings.port,
        open_files=open_files,
        max_connections=options["max_connections"],
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    lost = asyncio.Event()
    watch = asyncio.create_task(_watch_postmaster(postmaster, lost, stop))
    await stop.wait()
    watch.cancel()
    lifecycle = app[LIFECYCLE]
    if not lost.is_set():
        log.info("draining", seconds=settings.shutdown_drain_seconds)
    if settings.shutdown_drain_seconds and not lost.is_set():
        # /ready 503 so that endpoints drop us; answers say Connection: close, so keep-alive
        # clients reconnect, through the Service, to another replica.
        lifecycle.draining = True
        await asyncio.sleep(settings.shutdown_drain_seconds)
    # Stop accepting first: a client told to reconnect (Connection: close) from here on is
    # refused, never accepted by the kernel and then reset with the listener. Then close the
    # connections waiting for a request, and let requests in flight (or arriving on a
    # connection) finish while their connections still read: cleanup() marks every
    # connection as closing at once, and aiohttp then drops body bytes that arrive later
    # (aio-libs/aiohttp#2298).
    for site in list(runner.sites):
        await site.stop()
    lifecycle.draining = True
    closed = runner.guarded.close_idle()
    if not await _settled(runner, settings.shutdown_timeout_seconds):
        lifecycle.abort()  # each request still running is answered 503
        # A cancelled request in a transaction first rolls back, which a database that hangs
        # answers only by the statement timeout.
        await _settled(runner, settings.db_command_timeout_seconds + ABORT_SECONDS)
    await runner.cleanup()
    log.info("stopped", idle_connections_closed=closed)
    return 1 if lost.is_set() else 0


POSTMASTER_CHECK_SECONDS = 1.0
ABORT_SECONDS = 1.0  # and this long more for requests cancelled at the timeout to write a 503


async def _settled(runner: protocol.Runner, seconds: float) -> bool:
    """Wait until no request runs or arrives on any connection; False if seconds ran out."""
    lifecycle = runner.app[LIFECYCLE]
    try:
        async with asyncio.timeout(seconds):
            # Spread over every connection's state, which signals nothing: look every 10 ms.
            while runner.guarded.busy or lifecycle.in_flight:  # noqa: ASYNC110
                await asyncio.sleep(0.01)
    except TimeoutError:
        return False
    return True


async def _watch_postmaster(pid: int | None, lost: asyncio.Event, stop: asyncio.Event) -> None:
    """The embedded PostgreSQL is ours: if its postmaster dies (kill -9, the OOM killer), every
    request would fail until someone restarted us. Notice within a second and stop, exiting
    non-zero, so that the supervisor (systemd, Kubernetes, a shell loop) starts both again;
    PostgreSQL's crash recovery then runs on that start. With DATABASE_URL there is nothing to
    watch: an outage there is answered 503 and recovered from without a restart."""
    if pid is None:
        return
    while True:
        await asyncio.sleep(POSTMASTER_CHECK_SECONDS)
        if not embedded.is_running(pid):
            log.error(
                "embedded_postgres_died",
                postmaster_pid=pid,
                action="exiting with code 1 so that a supervisor restarts the service",
            )
            lost.set()
            stop.set()
            return
