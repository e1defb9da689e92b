"""`python -m service deliver` (service/delivering.py): delivery in a process of its own, beside
a `serve` started with INTEGRATION_DELIVERY=false, with real processes and a receiver the test
serves (docs/integrations.md, "Where delivery runs")."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from typing import TYPE_CHECKING

import aiohttp
import pytest

from service import embedded
from tests.addons.receiver import Receiver
from tests.factories import ADMIN_TOKEN
from tests.harness import Harness, Server, stop, wait_exit
from tests.processes.test_integration_faults import (
    TOGGLES,
    Hook,
    Switches,
    integrate,
    subscribed_positions,
    tally,
)

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.process

SETTINGS = {
    "INIT_ADMIN_API_TOKENS": ADMIN_TOKEN,
    "LOG_LEVEL": "info",
    "INTEGRATION_ALLOWED_NETWORKS": "127.0.0.0/8",
}
QUIET_SECONDS = 3.0  # longer than a delivering serve takes to send the first event


async def deliverer(harness: Harness, data_dir: Path, **extra: str) -> Server:
    """A `deliver` process, once its /health answers."""
    server = harness.start(data_dir, preexec=None, command="deliver", **(SETTINGS | extra))
    deadline = time.monotonic() + 30
    async with aiohttp.ClientSession() as http:
        while True:
            if (code := server.proc.poll()) is not None:
                pytest.fail(f"deliver exited with {code}:\n{server.stderr()}")
            with contextlib.suppress(aiohttp.ClientError):
                async with http.get(server.url + "/health") as resp:
                    if resp.status == 200:
                        assert await resp.json() == {"health": "GOOD"}
                        return server
            assert time.monotonic() < deadline, server.stderr()
            await asyncio.sleep(0.05)


async def delivered_metric(server: Server) -> float:
    """flagstore_integration_deliveries_total{provider="webhook",outcome="success"}."""
    async with (
        aiohttp.ClientSession() as http,
        http.get(server.url + "/internal-backstage/prometheus") as resp,
    ):
        assert resp.status == 200
        text = await resp.text()
    for line in text.splitlines():
        if (
            line.startswith("flagstore_integration_deliveries_total{")
            and 'outcome="success"' in line
        ):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


async def test_a_deliver_process_delivers_for_a_serve_that_does_not_and_hands_over(
    harness: Harness, dsn: str
) -> None:
    """serve with INTEGRATION_DELIVERY=false sends nothing; a deliver process sends every
    event in order, counts them in its metrics, stops on SIGTERM, and a second one takes over
    from a first killed with -9, losing nothing."""
    hook = Hook(Receiver())
    await hook.up()
    try:
        server = await harness.serve(
            harness.new_dir(),
            DATABASE_URL=dsn,
            preexec=None,
            INTEGRATION_DELIVERY="false",
            **SETTINGS,
        )
        switches = Switches("apart", groups=2)
        async with aiohttp.ClientSession() as http:
            await switches.create(http, server.url)
            addon_id = await integrate(http, server.url, hook.url, TOGGLES)
            await switches.flip(http, [server.url], rounds=4)
            await asyncio.sleep(QUIET_SECONDS)
            assert hook.receiver.delivered == [], "serve delivered with INTEGRATION_DELIVERY=false"

            first = await deliverer(harness, harness.new_dir(), DATABASE_URL=dsn)
            expected = await subscribed_positions(dsn, addon_id, TOGGLES)
            assert len(expected) == 2 * 4 * 25
            await hook.wait_for(expected, timeout=30)
            assert await delivered_metric(first) >= len(expected)
            async with http.get(first.url + "/api/admin/addons") as resp:  # serve's, not its
                assert resp.status == 404
                assert {"id", "name", "message"} <= set(await resp.json())

            second = await deliverer(harness, harness.new_dir(), DATABASE_URL=dsn)
            first.proc.kill()
            assert first.proc.wait(timeout=10) == -signal.SIGKILL
            await switches.flip(http, [server.url], rounds=4)
            expected = await subscribed_positions(dsn, addon_id, TOGGLES)
            await hook.wait_for(expected, timeout=30)
        assert await stop(second) == 0
        assert await stop(server) == 0
    finally:
        await hook.down()
    row = tally("deliver process, one killed", hook, expected)
    assert row.lost == 0
    assert row.delivered == len(expected) == 2 * 8 * 25


async def test_deliver_joins_the_embedded_server_serve_runs_and_needs_one(
    harness: Harness,
) -> None:
    """With no DATABASE_URL, deliver uses the embedded PostgreSQL a serve runs in DATA_DIR; with
    none running it exits 2 and says so."""
    data_dir = harness.new_dir()
    alone = harness.start(data_dir, preexec=None, command="deliver", **SETTINGS)
    assert await wait_exit(alone) == 2
    assert "no embedded PostgreSQL is running" in alone.stderr()

    hook = Hook(Receiver())
    await hook.up()
    try:
        server = await harness.serve(
            data_dir, preexec=None, INTEGRATION_DELIVERY="false", **SETTINGS
        )
        joined = await deliverer(harness, data_dir)
        switches = Switches("joined", groups=1)
        async with aiohttp.ClientSession() as http:
            await switches.create(http, server.url)
            addon_id = await integrate(http, server.url, hook.url, TOGGLES)
            await switches.flip(http, [server.url], rounds=2)
        dsn = embedded.running_embedded_dsn(data_dir)
        expected = await subscribed_positions(dsn, addon_id, TOGGLES)
        assert len(expected) == 2 * 25
        await hook.wait_for(expected, timeout=30)
        assert await stop(joined) == 0
        assert await stop(server) == 0
    finally:
        await hook.down()
    assert tally("deliver joined embedded", hook, expected).lost == 0
