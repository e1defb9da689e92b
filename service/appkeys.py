"""Typed application state keys, shared by the wiring and the middlewares."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import asyncpg
from aiohttp import web

from service.auth import Principal
from service.settings import Settings

if TYPE_CHECKING:
    from aiohttp.web_urldispatcher import AbstractRoute

    from service.http import Route


@dataclass
class Lifecycle:
    """Mutable run state: draining turns /ready to 503 during a graceful stop."""

    draining: bool = False
    in_flight: int = 0
    idle: asyncio.Event = field(default_factory=asyncio.Event)

    def started(self) -> None:
        self.in_flight += 1
        self.idle.clear()

    def finished(self) -> None:
        self.in_flight -= 1
        if self.in_flight == 0:
            self.idle.set()

    async def wait_idle(self) -> None:
        """Until no request is in flight (callers bound it with asyncio.timeout)."""
        if self.in_flight:
            await self.idle.wait()


class TokenUseRecorder(Protocol):
    """Remembers that a personal access token was used (the users feature writes it down)."""

    def seen(self, token_id: int) -> None: ...


# Token -> principal (None when unknown). create_app takes another for tests that need a
# principal with a chosen permission set before accounts exist.
Resolver = Callable[[asyncpg.Pool, str], Awaitable[Principal | None]]

SETTINGS = web.AppKey("settings", Settings)
RESOLVER: web.AppKey[Resolver] = web.AppKey("resolver")
POOL = web.AppKey("pool", asyncpg.Pool)
LIFECYCLE = web.AppKey("lifecycle", Lifecycle)
ROUTE_TABLE = web.AppKey("route_table", dict["AbstractRoute", "Route"])
SCHEMA_VERSION = web.AppKey("schema_version", int)
TOKEN_USAGE: web.AppKey[TokenUseRecorder] = web.AppKey("token_usage")

# Per-request state.
PRINCIPAL = web.RequestKey("principal", Principal)
REQUEST_ID = web.RequestKey("request_id", str)
ERROR_ID = web.RequestKey("error_id", str)
ERROR_NAME = web.RequestKey("error_name", str)
