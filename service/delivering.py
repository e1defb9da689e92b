"""`deliver`: integrations' delivery in a process of its own (docs/integrations.md, "Where
delivery runs").

`serve` delivers beside answering requests unless INTEGRATION_DELIVERY=false. A `deliver`
process takes that work to a core of its own: it holds integrations by the same advisory locks
as any replica, so any number of `serve` and `deliver` processes may run on one database and
each integration is still delivered by exactly one at a time. It answers `/health` and the
Prometheus metrics (the delivery counters and lag) on HOST:PORT, and stops on SIGTERM or
Ctrl-C after recording what its receivers answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from typing import TYPE_CHECKING

import structlog
from aiohttp import web

from eventlog import connections, migrations
from projections.follower import projection_lags
from service import protocol
from service.addons.delivery import Deliveries
from service.appkeys import LIFECYCLE, POOL
from service.http.middlewares import error_bodies, request_context
from service.lifecycle import Lifecycle
from service.metrics import METRICS, Metrics, prometheus

if TYPE_CHECKING:
    from service.settings import Settings

log = structlog.get_logger()

STOP_SECONDS = 3.0  # what delivers gets this long to record its last answers


async def _health(_request: web.Request) -> web.Response:
    return web.json_response({"health": "GOOD"})


async def deliver(settings: Settings, dsn: str) -> int:
    """Deliver until SIGTERM or Ctrl-C (exit 0), or until delivery itself fails (exit 1, so
    that a supervisor starts it again)."""
    conn = await connections.connect(dsn)
    try:
        await migrations.require_schema(conn)
    finally:
        await conn.close()
    pool = await connections.create_pool(
        dsn, min(settings.db_pool_size, 4), settings.db_command_timeout_seconds
    )
    metrics = Metrics(projection_lags)
    # Its answers are logged, counted and shaped as serve's: a line each, {id, name, message}.
    app = web.Application(middlewares=[request_context, error_bodies])
    app[LIFECYCLE] = Lifecycle()
    app[POOL] = pool
    app[METRICS] = metrics
    app.router.add_get("/health", _health)
    app.router.add_get("/internal-backstage/prometheus", prometheus)
    runner = web.AppRunner(app, handle_signals=False, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, settings.host, settings.port, backlog=protocol.BACKLOG).start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    log.info("delivering", host=settings.host, port=settings.port)
    running = asyncio.create_task(Deliveries(pool, dsn, settings, metrics).run(stop))
    stopped = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait({running, stopped}, return_when=asyncio.FIRST_COMPLETED)
        stop.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(running), STOP_SECONDS)
    finally:
        stopped.cancel()
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await running
        await runner.cleanup()
        metrics.database.close()
        try:
            await asyncio.wait_for(pool.close(), STOP_SECONDS)
        except TimeoutError:
            pool.terminate()
    failed = running.done() and not running.cancelled() and running.exception() is not None
    if failed:
        log.error("delivery_failed", error=repr(running.exception()))
    log.info("stopped")
    return 1 if failed else 0
