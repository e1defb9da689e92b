"""The middlewares, outermost first (MIDDLEWARES): the request's id and its one log line, CORS,
errors as {id, name, message} JSON, authentication and permissions, maintenance mode, the
content type."""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from typing import TYPE_CHECKING, Any, Final

import structlog
from aiohttp import web

from eventlog import connections
from eventlog.errors import LogError
from eventlog.logs import Throttled
from service import auth, errors
from service.appkeys import (
    ERROR_ID,
    ERROR_NAME,
    LIFECYCLE,
    POOL,
    PRINCIPAL,
    REQUEST_ID,
    RESOLVER,
    ROUTE_TABLE,
    TOKEN_USAGE,
)
from service.auth import Principal
from service.cors import cors
from service.http.answers import error_response
from service.http.instants import parse_instant
from service.instance.maintenance import maintenance
from service.metrics import METRICS
from service.protocol import Connection

if TYPE_CHECKING:
    from service.http.routes import Handler

log = structlog.get_logger()

ADMIN_PREFIX: Final = "/api/admin"
# The APIs that need a principal: the admin API, the client API (SDKs), the frontend API.
AUTHENTICATED_PREFIXES: Final = (ADMIN_PREFIX, "/api/client", "/api/frontend")
_REQUEST_ID_OK = re.compile(r"^[A-Za-z0-9._:\-]{1,128}$")
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


@web.middleware
async def request_context(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Request id in and out, exactly one log line and one count in the metrics per request."""
    incoming = request.headers.get("X-Request-Id", "")
    request_id = incoming if _REQUEST_ID_OK.match(incoming) else str(uuid.uuid4())
    request[REQUEST_ID] = request_id
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(request_id=request_id)
    started = time.perf_counter()
    status = 499  # the client went away before an answer
    lifecycle = request.app[LIFECYCLE]
    lifecycle.started()
    try:
        response = await handler(request)
        status = response.status
        response.headers["X-Request-Id"] = request_id
        if lifecycle.draining and not _has_queued(request):
            response.force_close()  # the client should take its next request elsewhere
        return response
    finally:
        lifecycle.finished()
        seconds = time.perf_counter() - started
        resource = request.match_info.route.resource
        route = resource.canonical if resource is not None else None  # a template, not the path
        request.app[METRICS].request(request.method, route, status, seconds)
        _log_request(request, route, status, seconds * 1000)
        structlog.contextvars.clear_contextvars()


def _has_queued(request: web.Request) -> bool:
    """More requests arrived on this connection behind this one: they are answered too before
    it closes (pipelining), so this answer does not say Connection: close yet."""
    connection = request.protocol
    return isinstance(connection, Connection) and connection.queued


def redact_path(path: str) -> str:
    """Flag, project and environment names never contain `:`, every token does (`*:*.…`,
    `user:…`): a path segment with one may be a secret (DELETE /api/admin/api-tokens/<secret>)
    and is masked in the log."""
    if ":" not in path:
        return path
    return "/".join(
        auth.secret_hint(part, reveal=False) if ":" in part else part for part in path.split("/")
    )


def _log_request(request: web.Request, route: str | None, status: int, duration_ms: float) -> None:
    who = request.get(PRINCIPAL)
    fields: dict[str, Any] = {
        "method": request.method,
        "path": redact_path(request.path),
        "route": route,
        "status": status,
        "duration_ms": round(duration_ms, 2),
    }
    if isinstance(who, Principal):
        fields["principal"] = who.id
    if ERROR_ID in request:
        fields["error_id"] = request[ERROR_ID]
        fields["error"] = request[ERROR_NAME]
    if status >= 500 and status != 503:  # 503 is /ready saying "not now", part of every rollout
        log.error("request", **fields)
    else:
        log.info("request", **fields)


_HTTP_ERRORS = {
    404: (errors.NotFound, "Could not find the requested resource"),
    405: (errors.MethodNotAllowed, "This method is not allowed on this resource"),
    413: (errors.PayloadTooLarge, "The request body is too large"),
}


@web.middleware
async def error_bodies(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every error, ours or aiohttp's, leaves as {id, name, message} JSON."""
    try:
        return await handler(request)
    except (errors.AppError, LogError) as exc:
        return _app_error(request, errors.from_log(exc))
    except asyncio.CancelledError:
        if not request.app[LIFECYCLE].aborting:
            raise
        # The stop's timeout ran out (serving.py): answer rather than drop the connection.
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        return _app_error(request, errors.ServiceUnavailable(STOPPING))
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return _http_error(request, exc)
    except Exception as exc:
        if isinstance(exc, ConnectionResetError) and _client_left(request):
            raise  # logged as 499, not a crash
        # (A reset with the client still there is the database's: asyncpg's pool reconnecting
        # while the server restarts raises it.)
        if connections.is_unavailable(exc):
            _database_down.warning(error=type(exc).__name__)
            return _app_error(request, errors.ServiceUnavailable(DATABASE_DOWN))
        response = error_response(
            request, 500, "InternalError", "Unexpected error; the error id names the log line"
        )
        log.exception("unhandled_error", error_id=request[ERROR_ID])
        return response


def _client_left(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


DATABASE_DOWN = "The database is unavailable; try again shortly"
STOPPING = "The service stopped before this request was done; try again"
# One warning line a second at most, however many requests an outage meets.
_database_down = Throttled("database_unavailable")


def _http_error(request: web.Request, exc: web.HTTPException) -> web.Response:
    """aiohttp's own 4xx (no route, wrong method, body too large) in our error body."""
    kind, message = _HTTP_ERRORS.get(exc.status, (errors.AppError, exc.reason))
    name = kind.name if kind is not errors.AppError else exc.reason.replace(" ", "")
    response = error_response(request, exc.status, name, message)
    if exc.status == 405 and "Allow" in exc.headers:
        response.headers["Allow"] = exc.headers["Allow"]
    return response


def _app_error(request: web.Request, exc: errors.AppError) -> web.Response:
    response = error_response(request, exc.status, exc.name, exc.message, exc.extra())
    if exc.retry_after is not None:
        response.headers["Retry-After"] = str(exc.retry_after)
    if exc.close_connection:
        response.force_close()
    return response


@web.middleware
async def authenticate(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Admin, client and frontend APIs: 401 without a valid token, 403 without the route's
    permission."""
    if not _authenticated(request.path):
        return await handler(request)
    who = await _resolve(request)
    if who is None:
        # As Unleash: a request with no Authorization header is a browser's, and its UI
        # shows the sign-in form on the hints; an API client that sent a token gets the plain
        # error.
        signed_out = _is_admin(request.path) and "Authorization" not in request.headers
        kind = errors.SignInRequired if signed_out else errors.AuthenticationRequired
        raise kind("You must log in or send a valid API token in the Authorization header")
    request[PRINCIPAL] = who
    if who.pat_id is not None:
        request.app[TOKEN_USAGE].seen(who.pat_id)
    elif who.api_token_id is not None:  # admin, client and frontend tokens alike
        request.app[TOKEN_USAGE].seen(who.api_token_id, "api-token")
    route = request.app[ROUTE_TABLE].get(request.match_info.route)
    if route is not None and not who.can(route.permission):
        if route.permission == auth.OWN_ACCOUNT:
            raise errors.NoAccess("PATs require an authenticated user.")
        raise errors.NoAccess(f"You need the {route.permission} permission for this operation")
    return await handler(request)


def _is_admin(path: str) -> bool:
    return path == ADMIN_PREFIX or path.startswith(ADMIN_PREFIX + "/")


def _authenticated(path: str) -> bool:
    return any(path == prefix or path.startswith(prefix + "/") for prefix in AUTHENTICATED_PREFIXES)


async def _resolve(request: web.Request) -> Principal | None:
    """The Authorization header decides when present; otherwise the session cookie."""
    token = auth.token_from_header(request.headers.get("Authorization"))
    if token:
        return await request.app[RESOLVER](request.app[POOL], token)
    cookie = request.cookies.get(auth.SESSION_COOKIE)
    if cookie:
        return await auth.resolve_session(request.app[POOL], cookie)
    return None


@web.middleware
async def content_type(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Routes that read a body accept application/json only (415 otherwise); only routes that
    read a past state take `?at=` (400 elsewhere, rather than an answer about the present).

    Also: no name we store can contain NUL, so a path parameter with one names nothing.
    """
    if any("\x00" in value for value in request.match_info.values()):
        raise errors.NotFound("Could not find the requested resource")
    route = request.app[ROUTE_TABLE].get(request.match_info.route)
    if route is None:
        return await handler(request)
    if "at" in request.query:
        if not route.past:
            raise errors.ValidationError("This route has no past states to read - at `at`")
        parse_instant(request.query["at"], "at")  # its form, before anything is read
    if (
        request.method in _BODY_METHODS
        and route.body
        and request.content_type != "application/json"
    ):
        raise errors.ContentTypeError(
            "The request payload type is not supported: send Content-Type: application/json"
        )
    return await handler(request)


# CORS outside the error middleware (error answers carry its headers too) and before
# authentication (preflights carry no token); maintenance mode's refusal after authentication
# (401 and 403 first, as Unleash) and before the body is read.
MIDDLEWARES = [request_context, cors, error_bodies, authenticate, maintenance, content_type]
