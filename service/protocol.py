"""The HTTP connection layer under aiohttp's application: what a hostile or careless client can
do to connections rather than to routes.

- A request's line and headers must arrive within `request_header_timeout_seconds` of its first
  byte (slowloris); otherwise 408 and the connection is closed. Idle keep-alive connections are
  closed by aiohttp after `keepalive_timeout_seconds`.
- At most `max_connections` open connections (further bounded by the open-files limit, which is
  raised to its hard limit at start): a new connection beyond it closes the longest-idle one,
  or, when none is idle, is answered 503 and closed. It is never left to fail accept().
- Requests aiohttp's parser refuses (a line or header over 8,190 bytes, bad framing) get the
  usual JSON error body, and neither the answer nor the log quotes the request's bytes.
- At shutdown, idle connections are closed at once; busy ones are answered (with
  `Connection: close`, see http.request_context) and then close.
"""

from __future__ import annotations

import asyncio
import resource
import time
import uuid
from typing import TYPE_CHECKING, Any

import msgspec
import structlog
from aiohttp import web
from aiohttp.http_exceptions import LineTooLong

from eventlog.logs import Throttled
from service.errors import HeaderFieldsTooLarge

if TYPE_CHECKING:
    from aiohttp.web_request import BaseRequest

    from service.settings import Settings

log = structlog.get_logger()
_encoder = msgspec.json.Encoder()

# Connections the kernel queues for accept() (the listening socket's backlog).
BACKLOG = 128
# File descriptors kept free for everything that is not a held client connection: the database
# pool, the LISTEN connection, log files, the interpreter's own (64); and the backlog, since
# the event loop accepts every queued connection at once before any is admitted and an idle
# one closed for it. Without that room a burst at the limit runs out of descriptors, and the
# event loop resets the connection it cannot take (a client's request answered by a reset;
# tests/processes/test_faults.py checks that none is).
FD_RESERVE = 64 + BACKLOG
_full = Throttled("connections_full")
LINGER_SECONDS = 2.0


def raise_open_files_limit() -> int:
    """Raise the soft open-files limit to the hard one (many systems start processes at 1,024
    while allowing far more); return the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        hard = max(soft, 1_048_576)
    if soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):  # a container may refuse; keep what we have
            pass
    return soft


def connection_limit(wanted: int, open_files: int, pool_size: int) -> int:
    """The connections we may hold: the setting, unless the open-files limit allows fewer."""
    return max(1, min(wanted, open_files - FD_RESERVE - 2 * pool_size))


def error_bytes(status: int, reason: str, name: str, message: str) -> bytes:
    """A complete HTTP/1.1 answer with the JSON error body, for the cases without a request;
    logged as the request line of what never became a request."""
    error_id = str(uuid.uuid4())
    _log_refused(status, name, error_id)
    body = _encoder.encode({"id": error_id, "name": name, "message": message})
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


def _log_refused(status: int, name: str, error_id: str) -> None:
    """The one log line of a request refused before it was one: no method or path to trust
    (and none quoted), a request id of its own."""
    log.info(
        "request",
        request_id=str(uuid.uuid4()),
        method=None,
        path=None,
        status=status,
        duration_ms=None,
        error_id=error_id,
        error=name,
    )


class Connection(web.RequestHandler):
    """aiohttp's protocol for one connection, plus the head timeout and idle bookkeeping."""

    __slots__ = ("_head_timer", "_refused", "idle_since")

    def __init__(self, manager: GuardedServer, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None
        self._refused = False
        self.idle_since = time.monotonic()

    @property
    def waiting(self) -> bool:
        """Between requests: none being handled, none received whole and queued (the start of
        one may be arriving). aiohttp's own flag: set from a request's start to its answer."""
        return not self._request_in_progress and not self._messages

    @property
    def queued(self) -> bool:
        """Requests received whole and waiting for their turn (pipelined)."""
        return bool(self._messages)

    @property
    def idle(self) -> bool:
        """Waiting, and not a byte of the next request received: safe to close."""
        if not self.waiting or self._head_timer is not None:
            return False
        # Not in the instant between a request leaving the queue and its handling starting:
        # aiohttp's loop is parked waiting for a message, or no request ever came.
        waiter = self._waiter
        return (waiter is not None and not waiter.done()) or self._request_count == 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        manager = self._manager
        assert isinstance(manager, GuardedServer)
        manager.admit(self)

    def data_received(self, data: bytes) -> None:
        if self._refused:  # answered 503 already: read and drop, so the close is not a reset
            return
        super().data_received(data)
        if not data:
            return
        if self.waiting:
            if self._head_timer is None:  # the first byte of a request: the head's clock starts
                manager = self._manager
                assert isinstance(manager, GuardedServer)
                self._head_timer = self._loop.call_later(manager.head_timeout, self._head_late)
        else:
            self._stop_head_timer()
        self.idle_since = time.monotonic()

    def connection_lost(self, exc: BaseException | None) -> None:
        self._stop_head_timer()
        super().connection_lost(exc)

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_late(self) -> None:
        self._head_timer = None
        if not self.waiting or self.transport is None:
            return
        message = "The request's line and headers did not arrive in time"
        self.transport.write(error_bytes(408, "Request Timeout", "RequestTimeout", message))
        self.force_close()

    @property
    def refused(self) -> bool:
        return self._refused

    def refuse(self, answer: bytes) -> None:
        """Answer at once and close: our side now, theirs once they have read the answer (or
        after LINGER_SECONDS). Closing with their request unread would reset the connection,
        and the answer with it."""
        self._refused = True
        transport = self.transport
        if transport is None:
            return
        transport.write(answer)
        if isinstance(transport, asyncio.WriteTransport) and transport.can_write_eof():
            transport.write_eof()
        self._loop.call_later(LINGER_SECONDS, self.force_close)

    def close_if_idle(self) -> bool:
        if self.idle:
            self.force_close()
            return True
        return False

    def handle_error(
        self,
        request: BaseRequest,  # noqa: ARG002 - aiohttp's signature; nothing of it is echoed
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        """aiohttp's own error answers (the parser refused the request, mostly): the JSON body
        every error has, naming what was wrong but never quoting the request."""
        del message  # aiohttp's message quotes the offending bytes
        if isinstance(exc, LineTooLong):
            status, name = HeaderFieldsTooLarge.status, HeaderFieldsTooLarge.name
            text = f"The request line or a header is longer than {self.max_field_size} bytes"
        elif status < 500:
            name = "BadRequest"
            reason = type(exc).__name__ if exc is not None else "malformed request"
            text = f"The request is not valid HTTP/1.1 ({reason})"
        else:
            name, text = "InternalError", "Unexpected error while handling the request"
        error_id = str(uuid.uuid4())
        _log_refused(status, name, error_id)
        response = web.Response(
            body=_encoder.encode({"id": error_id, "name": name, "message": text}),
            status=status,
            content_type="application/json",
        )
        response.force_close()
        return response


class GuardedServer(web.Server):
    """aiohttp's Server building Connection protocols, with the connection limit."""

    def __init__(
        self,
        handler: Any,
        *,
        request_factory: Any,
        head_timeout: float,
        max_connections: int,
        **kwargs: Any,
    ) -> None:
        super().__init__(handler, request_factory=request_factory, **kwargs)
        self.head_timeout = head_timeout
        self.max_connections = max_connections
        # What aiohttp's Server gives each RequestHandler: all but its own arguments.
        self._handler_kwargs = {
            k: v for k, v in kwargs.items() if k not in ("handler_cancellation", "loop")
        }

    def __call__(self) -> Connection:
        return Connection(self, loop=self._loop, **self._handler_kwargs)

    def admit(self, newcomer: Connection) -> None:
        """Over the limit: close the longest-idle other connection, or refuse the newcomer.
        Connections already refused (answered, closing) take no place."""
        if len(self._connections) <= self.max_connections:  # every accept: no walk
            return
        others = [
            c
            for c in self._connections
            if isinstance(c, Connection) and c is not newcomer and not c.refused
        ]
        if len(others) < self.max_connections:
            return
        idle = [c for c in others if c.idle]
        if idle:
            min(idle, key=lambda c: c.idle_since).force_close()
            _full.warning(limit=self.max_connections, action="closed_idle")
            return
        _full.warning(limit=self.max_connections, action="refused")
        message = "Too many open connections; try again shortly"
        newcomer.refuse(error_bytes(503, "Service Unavailable", "ServiceUnavailable", message))

    def close_idle(self) -> int:
        """Close every idle connection (shutdown); the number closed."""
        return sum(c.close_if_idle() for c in list(self._connections) if isinstance(c, Connection))

    @property
    def busy(self) -> bool:
        """Some connection is handling a request or receiving one."""
        return any(isinstance(c, Connection) and not c.idle for c in list(self._connections))


class Runner(web.AppRunner):
    """AppRunner serving through GuardedServer."""

    def __init__(
        self, app: web.Application, *, head_timeout: float, max_connections: int, **kwargs: Any
    ) -> None:
        super().__init__(app, **kwargs)
        self._guard = {"head_timeout": head_timeout, "max_connections": max_connections}

    async def _make_server(self) -> web.Server:
        plain = await super()._make_server()  # runs the application's startup
        return GuardedServer(
            plain.request_handler,
            request_factory=plain.request_factory,
            head_timeout=float(self._guard["head_timeout"]),
            max_connections=int(self._guard["max_connections"]),
            **self._kwargs,
        )

    @property
    def guarded(self) -> GuardedServer:
        server = self.server
        assert isinstance(server, GuardedServer)
        return server


def runner_options(settings: Settings, open_files: int) -> dict[str, Any]:
    """Runner's keyword arguments for these settings (serving and the in-process tests)."""
    return {
        "head_timeout": settings.request_header_timeout_seconds,
        "max_connections": connection_limit(
            settings.max_connections, open_files, settings.db_pool_size
        ),
        "keepalive_timeout": settings.keepalive_timeout_seconds,
        # After an answer sent before its body was read (401, 408), read and drop what still
        # comes for at most this long, then close (aiohttp's default: 10 s).
        "lingering_time": LINGER_SECONDS,
        "auto_decompress": False,  # http.read_json inflates, bounded, only where a body is read
        "access_log": None,  # http.request_context writes the one line per request
    }
