"""Typed keys of the application's and each request's state, shared by the wiring, the middlewares
and the handlers: declarations only."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

import asyncpg
from aiohttp import web

from service.auth import Principal, TokenKind
from service.settings import Settings

if TYPE_CHECKING:
    from aiohttp.web_urldispatcher import AbstractRoute

    from service.client.feed import Feed
    from service.http.routes import Route
    from service.instance.state import Origins
    from service.lifecycle import Lifecycle
    from service.work import Work


class TokenUseRecorder(Protocol):
    """Remembers that a token was used (service.token_usage writes it down)."""

    def seen(self, token_id: int, kind: TokenKind = "personal-access-token") -> None: ...


# Token -> principal (None when unknown). create_app takes another for tests that need a
# principal with a chosen permission set before accounts exist.
Resolver = Callable[[asyncpg.Pool, str], Awaitable[Principal | None]]

SETTINGS = web.AppKey("settings", Settings)
WORK: web.AppKey[Work] = web.AppKey("work")  # begins every command's unit of work
CLIENT_FEED: web.AppKey[Feed] = web.AppKey("client_feed")  # the client API's model
RESOLVER: web.AppKey[Resolver] = web.AppKey("resolver")
POOL = web.AppKey("pool", asyncpg.Pool)
LIFECYCLE: web.AppKey[Lifecycle] = web.AppKey("lifecycle")
ROUTE_TABLE = web.AppKey("route_table", dict["AbstractRoute", "Route"])
OPENAPI = web.AppKey("openapi", bytes)  # the OpenAPI document, encoded once at start
SCHEMA_VERSION = web.AppKey("schema_version", int)
TOKEN_USAGE: web.AppKey[TokenUseRecorder] = web.AppKey("token_usage")
# The frontend API's CORS origins: FRONTEND_API_ORIGINS until set through the admin API.
FRONTEND_ORIGINS: web.AppKey[Origins] = web.AppKey("frontend_origins")
# Reads of a past state rebuild read models from the log (CPU-bound, growing with the log:
# docs/audit.md): this many at once per process, the others wait their turn.
PAST_READS = web.AppKey("past_reads", asyncio.Semaphore)

# Per-request state.
PRINCIPAL = web.RequestKey("principal", Principal)
REQUEST_ID = web.RequestKey("request_id", str)
ERROR_ID = web.RequestKey("error_id", str)
ERROR_NAME = web.RequestKey("error_name", str)
