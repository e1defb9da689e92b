"""Streaming against the service as a real process: 200 streaming clients and a change every
50 ms; every client sees every change, in order, pushed as it is committed (the delays it
prints with -s are the ones docs/client-api.md quotes)."""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import TYPE_CHECKING

import aiohttp
import pytest

from tests.factories import ADMIN_TOKEN, api_token, flag
from tests.harness import stop
from tests.sse import Reader

if TYPE_CHECKING:
    from tests.harness import Harness

CLIENTS = 200
CHANGES = 60
EVERY_SECONDS = 0.05


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def test_200_clients_each_see_every_change_in_order(harness: Harness, dsn: str) -> None:
    server = await harness.serve(
        harness.new_dir(), DATABASE_URL=dsn, INIT_ADMIN_API_TOKENS=ADMIN_TOKEN, LOG_LEVEL="warning"
    )
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=None, sock_read=30)
    async with aiohttp.ClientSession(server.url, connector=connector, timeout=timeout) as http:
        secret = (await api_token(http, name="sdk", environment="development"))["secret"]
        headers = {
            "Authorization": secret,
            "Accept": "text/event-stream",
            "Unleash-Client-Spec": "5.2.0",
        }
        seen: list[list[tuple[str, float]]] = [[] for _ in range(CLIENTS)]

        async def listen(i: int, connected: asyncio.Event) -> None:
            async with http.get("/api/client/streaming", headers=headers) as resp:
                assert resp.status == 200
                reader = Reader(resp)
                first = await reader.next()
                assert first.event == "unleash-connected"
                connected.set()
                while len(seen[i]) < CHANGES:
                    event = await reader.next()
                    now = time.monotonic()
                    for change in event.json()["events"]:
                        if change["type"] == "feature-updated":
                            seen[i].append((change["feature"]["name"], now))

        ready = [asyncio.Event() for _ in range(CLIENTS)]
        listeners = [asyncio.create_task(listen(i, ready[i])) for i in range(CLIENTS)]
        await asyncio.wait_for(asyncio.gather(*(e.wait() for e in ready)), 30)

        sent: dict[str, float] = {}
        answered: dict[str, float] = {}
        start = time.monotonic()
        for n in range(CHANGES):
            await asyncio.sleep(max(0.0, start + n * EVERY_SECONDS - time.monotonic()))
            name = f"change-{n:03d}"
            sent[name] = time.monotonic()
            await flag(http, name)
            answered[name] = time.monotonic()
        await asyncio.wait_for(asyncio.gather(*listeners), 15)

    order = [f"change-{n:03d}" for n in range(CHANGES)]
    delays: list[float] = []
    after_answer: list[float] = []
    for events in seen:
        assert [name for name, _ in events] == order  # every change, once, in order
        delays.extend(at - sent[name] for name, at in events)
        after_answer.extend(at - answered[name] for name, at in events)
    p50, p99 = percentile(delays, 0.5), percentile(delays, 0.99)
    print(  # noqa: T201 - the figures docs/client-api.md quotes, shown with -s
        f"\nstreaming: {CLIENTS} clients x {CHANGES} changes every {EVERY_SECONDS * 1000:.0f} ms:"
        f" delivery from the write's request p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms,"
        f" max {max(delays) * 1000:.1f} ms; from its answer p99"
        f" {percentile(after_answer, 0.99) * 1000:.1f} ms;"
        f" mean {statistics.mean(delays) * 1000:.1f} ms"
    )
    # The figures are the benchmark's (printed above); the bound only tells NOTIFY-driven
    # delivery from polling (the feed's fallback poll is seconds), with room for a busy machine.
    assert p99 < 1.0, f"p99 delivery {p99 * 1000:.0f} ms"


async def test_sigterm_ends_open_streams_and_the_service_stops_at_once(
    harness: Harness, dsn: str
) -> None:
    server = await harness.serve(
        harness.new_dir(), DATABASE_URL=dsn, INIT_ADMIN_API_TOKENS=ADMIN_TOKEN
    )
    headers = {"Authorization": ADMIN_TOKEN, "Accept": "text/event-stream"}
    async with aiohttp.ClientSession(server.url) as http:
        streams = [await http.get("/api/client/streaming", headers=headers) for _ in range(5)]
        readers = [Reader(resp) for resp in streams]
        for reader in readers:
            assert (await reader.next()).event == "unleash-connected"
        started = time.monotonic()
        assert await stop(server) == 0
        took = time.monotonic() - started
        for reader in readers:
            with pytest.raises((EOFError, aiohttp.ClientPayloadError)):
                await asyncio.wait_for(reader.next(), 5)
    assert took < 5, f"the stop took {took:.1f} s with streams open"
    lines = [line for line in server.log_lines() if line.get("path") == "/api/client/streaming"]
    assert len(lines) == 5
    assert {line["status"] for line in lines} == {200}


async def test_a_change_on_one_replica_reaches_streams_and_polls_on_another(
    harness: Harness, dsn: str
) -> None:
    one, two = [
        await harness.serve(harness.new_dir(), DATABASE_URL=dsn, INIT_ADMIN_API_TOKENS=ADMIN_TOKEN)
        for _ in range(2)
    ]
    admin = {"Authorization": ADMIN_TOKEN}
    headers = {**admin, "Accept": "text/event-stream", "Unleash-Client-Spec": "5.2.0"}
    async with aiohttp.ClientSession() as http:
        stream = await http.get(f"{two.url}/api/client/streaming", headers=headers)
        reader = Reader(stream)
        connected = await reader.next()
        polled = await http.get(f"{two.url}/api/client/features", headers=headers)
        etag = polled.headers["ETag"]
        started = time.monotonic()
        async with http.post(
            f"{one.url}/api/admin/projects/default/features", json={"name": "x"}, headers=admin
        ) as resp:
            assert resp.status == 200
        event = await asyncio.wait_for(reader.next(), 5.0)
        took = time.monotonic() - started
        assert event.event == "unleash-updated"
        assert [e["feature"]["name"] for e in event.json()["events"]] == ["x"]
        assert int(event.id or 0) > int(connected.id or 0)
        again = await http.get(
            f"{two.url}/api/client/features", headers={**headers, "If-None-Match": etag}
        )
        assert again.status == 200
        assert [f["name"] for f in (await again.json())["features"]] == ["x"]
        # both replicas give the same ETag for the same revision and query
        same = await http.get(f"{one.url}/api/client/features", headers=headers)
        assert same.headers["ETag"] == again.headers["ETag"]
        stream.close()
    assert took < 2.0  # by NOTIFY (a busy machine's seconds): the fallback poll is every 5 s
