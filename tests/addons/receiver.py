"""A webhook receiver the tests control: it records what arrives and answers as told."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
from collections.abc import Callable  # noqa: TC003 - a dataclass field's type, read at run time
from dataclasses import dataclass, field
from typing import Any

import msgspec
from aiohttp import web


@dataclass
class Arrival:
    headers: dict[str, str]
    body: bytes

    @property
    def event_id(self) -> int:
        return int(self.headers["Unleash-Event-Id"])

    def json(self) -> Any:
        return msgspec.json.decode(self.body)

    def signed_by(self, secret: str) -> bool:
        """The documented recipe (docs/integrations.md, "Signatures")."""
        timestamp = self.headers["Flagstore-Timestamp"]
        signed = f"{timestamp}.{self.headers['Unleash-Event-Id']}.".encode() + self.body
        expected = "v1=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
        return hmac.compare_digest(expected, self.headers["Flagstore-Signature"])


@dataclass
class Receiver:
    """`answer` decides each request's status (and headers); every request is recorded,
    `delivered` only those answered with a 2xx; each answer takes `delay` seconds."""

    answer: Callable[[Arrival], tuple[int, dict[str, str]]] = lambda _a: (200, {})
    delay: float = 0.0
    arrivals: list[Arrival] = field(default_factory=list)
    delivered: list[Arrival] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def handle(self, request: web.Request) -> web.Response:
        arrival = Arrival(dict(request.headers), await request.read())
        if self.delay:
            await asyncio.sleep(self.delay)
        self.arrivals.append(arrival)
        status, headers = self.answer(arrival)
        if 200 <= status < 300:
            self.delivered.append(arrival)
        self.arrived.set()
        return web.Response(status=status, headers=headers, text="noted")

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/{tail:.*}", self.handle)
        return app

    async def wait_for(self, count: int, timeout: float = 20.0) -> list[Arrival]:
        """Until `count` deliveries have succeeded."""
        async with asyncio.timeout(timeout):
            while len(self.delivered) < count:
                self.arrived.clear()
                await self.arrived.wait()
        return self.delivered
