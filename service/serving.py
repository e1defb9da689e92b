"""`serve`: start the HTTP server, and stop it gracefully on SIGTERM or Ctrl-C."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import sys
from typing import TYPE_CHECKING

import structlog
from aiohttp import web

from service import bootstrap, connections, migrations
from service.app import create_app
from service.appkeys import LIFECYCLE
from service.errors import ConfigError

if TYPE_CHECKING:
    from service.settings import Settings

log = structlog.get_logger()

STRAGGLER_SECONDS = 0.5


def check_listen_address(host: str, port: int) -> None:
    """Fail before starting anything when HOST:PORT cannot be listened on."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        with socket.socket(infos[0][0], socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(infos[0][4])
    except OSError as exc:
        raise ConfigError(f"cannot listen on HOST={host} PORT={port}: {exc}") from None


async def serve(settings: Settings, dsn: str, *, migrate: bool = True) -> int:
    conn = await connections.connect(dsn)
    try:
        if migrate:
            await migrations.migrate(conn)
        new_token = await bootstrap.seed(conn, settings.init_admin_api_tokens)
    finally:
        await conn.close()
    if new_token is not None:
        # Shown once, never logged: the only place this secret ever appears.
        print(
            f"No admin API token existed; created one (shown only now): {new_token}",
            file=sys.stderr,
            flush=True,
        )
    app = create_app(settings, dsn)
    # In-flight requests get SHUTDOWN_TIMEOUT_SECONDS in wait_idle below; aiohttp's own wait
    # (applied twice: before and after cancelling a handler) only covers the stragglers.
    app_runner = web.AppRunner(
        app, handle_signals=False, access_log=None, shutdown_timeout=STRAGGLER_SECONDS
    )
    await app_runner.setup()
    await web.TCPSite(app_runner, settings.host, settings.port).start()
    log.info("listening", host=settings.host, port=settings.port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    app[LIFECYCLE].draining = True
    log.info("draining", seconds=settings.shutdown_drain_seconds)
    await asyncio.sleep(settings.shutdown_drain_seconds)
    # Stop accepting, then let in-flight requests finish while their connections still read:
    # cleanup() marks every connection as closing at once, and aiohttp then drops body bytes
    # that arrive later (aio-libs/aiohttp#2298).
    for site in list(app_runner.sites):
        await site.stop()
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(settings.shutdown_timeout_seconds):
            await app[LIFECYCLE].wait_idle()
    await app_runner.cleanup()
    log.info("stopped")
    return 0
