"""A small round-robin HTTP proxy that acts like a Kubernetes Service in front of the replicas.

Like an endpoints controller, it probes each backend's `/ready` every PROBE_SECONDS and sends
new requests only to backends whose last probe answered 200; a new backend receives nothing
before its first good probe. Like a Service, it retries nothing: a request that fails on its
way to a backend is answered 502 `BadGateway` and counted.

    python -m tests.containers.proxy PORT
    PUT  /_proxy/backends  ["http://127.0.0.1:4301", ...]   the backends (replaces the list)
    GET  /_proxy/state     {backend: {"ready", "requests", "failures"}}
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import sys
import uuid
from dataclasses import dataclass

import aiohttp
from aiohttp import web

PROBE_SECONDS = 0.5
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "transfer-encoding",
        "content-length",
        "te",
        "trailer",
        "upgrade",
        "proxy-connection",
        "host",
    }
)


@dataclass
class Backend:
    url: str
    ready: bool = False
    requests: int = 0
    failures: int = 0


class Proxy:
    def __init__(self) -> None:
        self.backends: dict[str, Backend] = {}
        self.turn = itertools.count()
        self.session: aiohttp.ClientSession | None = None
        self.probe: aiohttp.ClientSession | None = None

    async def start(self, _app: web.Application) -> None:
        # A connection per request: aiohttp's client resends an idempotent request once when
        # a reused connection turns out closed, which would be a retry; this proxy makes none.
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, force_close=True),
            timeout=aiohttp.ClientTimeout(total=30),
        )
        self.probe = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(force_close=True),
            timeout=aiohttp.ClientTimeout(total=PROBE_SECONDS),
        )
        self.prober = asyncio.create_task(self.probe_forever())

    async def stop(self, _app: web.Application) -> None:
        self.prober.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.prober
        for session in (self.session, self.probe):
            if session is not None:
                await session.close()

    async def probe_forever(self) -> None:
        while True:
            await asyncio.gather(*(self.probe_one(b) for b in list(self.backends.values())))
            await asyncio.sleep(PROBE_SECONDS)

    async def probe_one(self, backend: Backend) -> None:
        assert self.probe is not None
        try:
            async with self.probe.get(f"{backend.url}/ready") as resp:
                backend.ready = resp.status == 200
        except (aiohttp.ClientError, TimeoutError):
            backend.ready = False

    async def set_backends(self, request: web.Request) -> web.Response:
        urls = json.loads(await request.read())
        self.backends = {url: self.backends.get(url) or Backend(url) for url in urls}
        return web.json_response(sorted(self.backends))

    async def state(self, _request: web.Request) -> web.Response:
        return web.json_response({url: vars(b) for url, b in self.backends.items()})

    def pick(self) -> Backend | None:
        ready = [b for b in self.backends.values() if b.ready]
        return ready[next(self.turn) % len(ready)] if ready else None

    async def forward(self, request: web.Request) -> web.StreamResponse:
        backend = self.pick()
        if backend is None:
            return failure(503, "ServiceUnavailable", "no ready backend")
        backend.requests += 1
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        body = await request.read()
        assert self.session is not None
        try:
            async with self.session.request(
                request.method, f"{backend.url}{request.path_qs}", headers=headers, data=body
            ) as resp:
                payload = await resp.read()
                out = {k: v for k, v in resp.headers.items() if k.lower() not in HOP_BY_HOP}
                return web.Response(status=resp.status, body=payload, headers=out)
        except (aiohttp.ClientError, TimeoutError) as exc:
            backend.failures += 1
            return failure(502, "BadGateway", f"{backend.url}: {type(exc).__name__}: {exc}")


def failure(status: int, name: str, message: str) -> web.Response:
    body = {"id": str(uuid.uuid4()), "name": name, "message": message}
    return web.json_response(body, status=status)


def build() -> web.Application:
    proxy = Proxy()
    app = web.Application(client_max_size=2**22)
    app.on_startup.append(proxy.start)
    app.on_cleanup.append(proxy.stop)
    app.router.add_put("/_proxy/backends", proxy.set_backends)
    app.router.add_get("/_proxy/state", proxy.state)
    app.router.add_route("*", "/{tail:.*}", proxy.forward)
    return app


if __name__ == "__main__":
    web.run_app(build(), host="127.0.0.1", port=int(sys.argv[1]), access_log=None, print=None)
