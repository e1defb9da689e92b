"""Typed application state keys, shared by the wiring and the middlewares."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import asyncpg
from aiohttp import web

from service.auth import Principal
from service.settings import Settings

if TYPE_CHECKING:
    from aiohttp.web_urldispatcher import AbstractRoute

    from service.client.feed import Feed
    from service.http import Route


@dataclass
class Lifecycle:
    """Mutable run state: draining turns /ready to 503 during a graceful stop; aborting is set
    when the stop's timeout ran out and the requests still running are cancelled (each is
    answered 503 by the error middleware instead of losing its connection)."""

    draining: bool = False
    aborting: bool = False
    running: set[asyncio.Task[object]] = field(default_factory=set)

    @property
    def in_flight(self) -> int:
        return len(self.running)

    def started(self) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.running.add(task)

    def finished(self) -> None:
        self.running.discard(asyncio.current_task())

    def abort(self) -> None:
        self.aborting = True
        for task in self.running:
            task.cancel()


@dataclass
class Commits:
    """The highest log position this process has committed, and who wants to know at once (the
    client API's feed: an SDK reads a change the moment the request that made it is answered,
    without waiting for the database's NOTIFY)."""

    position: int = 0
    listeners: list[Callable[[int], None]] = field(default_factory=list)
    # Stream type -> told when an event of such a stream is committed, before the answer
    # leaves when this process committed it, by the client feed when another one did (the
    # cache of API tokens forgets them when one changes: auth.CachedTokens).
    watchers: dict[str, list[Callable[[], None]]] = field(default_factory=dict)
    # The stream types whose commits' positions a listener waits for (the feed's): a
    # transaction that appended to none of them does not read its positions back, and its
    # commit is reported at position 0 (nobody waits for it to be seen).
    positioned: set[str] = field(default_factory=set)

    def committed(self, position: int, stream_types: Collection[str] = ()) -> None:
        self.position = max(self.position, position)
        for stream_type in stream_types:
            for watcher in self.watchers.get(stream_type, ()):
                watcher()
        for listener in self.listeners:
            listener(position)


class TokenUseRecorder(Protocol):
    """Remembers that a personal access token was used (the users feature writes it down)."""

    def seen(self, token_id: int) -> None: ...


# Token -> principal (None when unknown). create_app takes another for tests that need a
# principal with a chosen permission set before accounts exist.
Resolver = Callable[[asyncpg.Pool, str], Awaitable[Principal | None]]

SETTINGS = web.AppKey("settings", Settings)
COMMITS = web.AppKey("commits", Commits)
CLIENT_FEED: web.AppKey[Feed] = web.AppKey("client_feed")  # the client API's model
RESOLVER: web.AppKey[Resolver] = web.AppKey("resolver")
POOL = web.AppKey("pool", asyncpg.Pool)
LIFECYCLE = web.AppKey("lifecycle", Lifecycle)
ROUTE_TABLE = web.AppKey("route_table", dict["AbstractRoute", "Route"])
OPENAPI = web.AppKey("openapi", bytes)  # the OpenAPI document, encoded once at start
SCHEMA_VERSION = web.AppKey("schema_version", int)
TOKEN_USAGE: web.AppKey[TokenUseRecorder] = web.AppKey("token_usage")
# Reads of a past state rebuild read models from the log (CPU, a second a hundred thousand
# events): this many at once per process, the others wait their turn.
PAST_READS = web.AppKey("past_reads", asyncio.Semaphore)

# Per-request state.
PRINCIPAL = web.RequestKey("principal", Principal)
REQUEST_ID = web.RequestKey("request_id", str)
ERROR_ID = web.RequestKey("error_id", str)
ERROR_NAME = web.RequestKey("error_name", str)
