"""Middlewares (request context and log line, errors, auth, content type) and the helpers every
handler uses: reading a body into a request Struct, the write transaction, the actor, answers."""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
import uuid
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Final, NamedTuple, TypeVar

import msgspec
import structlog
from aiohttp import HttpVersion11, web

from service import auth, connections, errors, store
from service.appkeys import (
    COMMITS,
    ERROR_ID,
    ERROR_NAME,
    LIFECYCLE,
    POOL,
    PRINCIPAL,
    REQUEST_ID,
    RESOLVER,
    ROUTE_TABLE,
    SETTINGS,
    TOKEN_USAGE,
)
from service.audit.instants import parse_instant
from service.auth import Principal
from service.cors import cors
from service.logs import Throttled
from service.metrics import METRICS
from service.protocol import Connection

if TYPE_CHECKING:
    from service.connections import Conn
    from service.events import Metadata

log = structlog.get_logger()

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
T = TypeVar("T")

ADMIN_PREFIX: Final = "/api/admin"
# The APIs that need a principal: the admin API, the client API (SDKs), the frontend API.
AUTHENTICATED_PREFIXES: Final = (ADMIN_PREFIX, "/api/client", "/api/frontend")
_REQUEST_ID_OK = re.compile(r"^[A-Za-z0-9._:\-]{1,128}$")
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_encoder = msgspec.json.Encoder()


@dataclass(frozen=True)
class Param:
    """A query parameter a route reads: its name, JSON Schema type and meaning (OpenAPI)."""

    name: str
    schema: Any  # a type msgspec can describe, e.g. Annotated[int, Meta(ge=1)]
    description: str
    required: bool = False


@dataclass(frozen=True)
class Link:
    """An OpenAPI link from a route's answer to the route that reads what it made (stateful
    fuzzing follows it): the handler of that route and its path parameters' sources."""

    to: Handler
    parameters: Mapping[str, str]  # path parameter -> `$response.body#/id` and the like


class Content(NamedTuple):
    """A body that is not JSON (a page, an asset, the metrics' text)."""

    media_types: tuple[str, ...]
    description: str


@dataclass(frozen=True)
class Route:
    """One row of the route table: the route, the permission it needs (the only place that is
    declared), and what the OpenAPI document says of it (service/openapi.py): what it reads
    (path, query, body) and every answer it gives. The handler reads its body and its query
    parameters through read_json and query_param, which check that they are the ones declared
    here, so the document cannot drift from the code."""

    method: str
    path: str
    handler: Handler
    permission: str
    body: Any = None  # the request Struct read from a JSON body (the content type is checked)
    ok: Mapping[int, Any] = field(default_factory=lambda: {200: None})  # status -> body type
    query: tuple[Param, ...] = ()
    errors: tuple[type[errors.AppError], ...] = ()  # besides those its kind gives (openapi.py)
    links: Mapping[str, Link] = field(default_factory=dict)
    params: Mapping[str, Any] = field(default_factory=dict)  # path parameter -> type (not str)
    past: bool = False  # True: `?at=` reads the state at a past instant (service/audit/past.py)

    def reads(self, name: str) -> bool:
        return any(p.name == name for p in self.query) or (self.past and name == PAST)


PAST: Final = "at"  # the query parameter of routes that read a past state
# The path parameter `id` of the routes whose ids are numbers (users, accounts, segments, tokens).
NUMBERED: Final[Mapping[str, Any]] = {"id": Annotated[int, msgspec.Meta(ge=1)]}


def takes_gzip(accept_encoding: str | None) -> bool:
    """Whether an Accept-Encoding field admits gzip (RFC 9110 12.5.3): named, or `*`, with a
    weight above 0; names are case-insensitive, and `gzip;q=0` refuses it."""
    weights: dict[str, float] = {}
    for item in (accept_encoding or "").split(","):
        name, *params = (part.strip() for part in item.split(";"))
        weight = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
        if name:
            weights[name.lower()] = weight
    return weights.get("gzip", weights.get("x-gzip", weights.get("*", 0.0))) > 0


def etag_matches(if_none_match: str | None, etag: str) -> bool:
    """Whether an If-None-Match field names this ETag (weakly compared, or `*`)."""
    if not if_none_match:
        return False
    tags = [t.strip() for t in if_none_match.split(",")]
    return "*" in tags or any(t.removeprefix("W/") == etag for t in tags)


def forwarded_address(request: web.Request, proxy_hops: int) -> str:
    """The client's address: the peer's, or behind `proxy_hops` proxies that each append the
    address they were connected from, the entry that many from the right of X-Forwarded-For
    (the entries further left were written by the client and prove nothing; with fewer
    entries than hops, the leftmost)."""
    address = request.remote or ""
    if proxy_hops:
        entries = [
            entry.strip()
            for header in request.headers.getall("X-Forwarded-For", ())
            for entry in header.split(",")
            if entry.strip()
        ]
        if entries:
            address = entries[-min(proxy_hops, len(entries))]
    return address


def json_response(body: Any, status: int = 200) -> web.Response:
    """A response Struct (or, for errors and probes, a small dict) as the JSON answer."""
    return web.Response(body=_encoder.encode(body), status=status, content_type="application/json")


def empty(status: int = 200) -> web.Response:
    return web.Response(status=status)


@contextlib.asynccontextmanager
async def transaction(request: web.Request) -> AsyncIterator[Conn]:
    """One connection and one transaction: a command's load, decision and append share it.
    What it appended is counted in the metrics once it committed."""
    async with app_transaction(request.app) as conn:
        yield conn


@contextlib.asynccontextmanager
async def app_transaction(app: web.Application) -> AsyncIterator[Conn]:
    """`transaction` for commands that are not one request's (service/batches.py)."""
    metrics, commits = app[METRICS], app[COMMITS]

    def committed(appends: Sequence[store.Appended]) -> None:
        metrics.committed(appends)
        commits.committed(
            max(append.position for append in appends), {a.stream_type for a in appends}
        )

    async with (
        app[POOL].acquire() as conn,
        store.transaction(conn, committed, positioned=commits.positioned),
    ):
        yield conn


def actor(request: web.Request) -> Metadata:
    """Who caused the events of this request, and through which request."""
    return request[PRINCIPAL].metadata(request[REQUEST_ID])


def error_response(request: web.Request, status: int, name: str, message: str) -> web.Response:
    error_id = str(uuid.uuid4())
    request[ERROR_ID] = error_id
    request[ERROR_NAME] = name
    return json_response({"id": error_id, "name": name, "message": message}, status)


def principal(request: web.Request) -> Principal:
    return request[PRINCIPAL]


class Undocumented(RuntimeError):
    """A handler read a query parameter or a body its Route does not declare: the OpenAPI
    document would be wrong, so the request fails (every route's tests find it)."""


MAX_DIGITS: Final = 9  # a whole-number query parameter (limit, offset) has at most this many
# The types of such parameters in the OpenAPI document (int_param reads them).
Count = Annotated[int, msgspec.Meta(ge=0, le=10**MAX_DIGITS - 1)]
Positive = Annotated[int, msgspec.Meta(ge=1, le=10**MAX_DIGITS - 1)]


def query_param(request: web.Request, name: str) -> str | None:
    """A query parameter given at most once (twice is ambiguous: which one counts?)."""
    route = request.app[ROUTE_TABLE].get(request.match_info.route)
    if route is not None and not route.reads(name):
        raise Undocumented(f"{route.method} {route.path} reads the undeclared parameter {name}")
    values = request.query.getall(name, [])
    if len(values) > 1:
        raise errors.ValidationError(f"{name} may be given only once - at `{name}`")
    return values[0] if values else None


def query_values(request: web.Request, name: str) -> list[str]:
    """A query parameter that may be repeated (`project=a&project=b`): every value."""
    route = request.app[ROUTE_TABLE].get(request.match_info.route)
    if route is not None and not route.reads(name):
        raise Undocumented(f"{route.method} {route.path} reads the undeclared parameter {name}")
    return request.query.getall(name, [])


def int_param(
    request: web.Request, name: str, default: int, low: int, digits: int = MAX_DIGITS
) -> int:
    """A whole-number query parameter >= low (absent or empty: the default)."""
    raw = query_param(request, name)
    if raw is None or raw == "":
        return default
    if not (raw.isascii() and raw.isdigit()) or len(raw) > digits:
        raise errors.ValidationError(
            f"{name} must be a whole number >= {low} of at most {digits} digits - at `{name}`"
        )
    value = int(raw)
    if value < low:
        raise errors.ValidationError(f"{name} must be a whole number >= {low} - at `{name}`")
    return value


_decoders: dict[type[Any], msgspec.json.Decoder[Any]] = {}
# PostgreSQL text cannot hold NUL: refuse its JSON escape (not an escaped backslash before it).
_NUL_ESCAPE = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000")


async def read_json(request: web.Request, schema: type[T]) -> T:
    """Decode the body into a Struct; any problem is a 400 naming the JSON path."""
    route = request.app[ROUTE_TABLE].get(request.match_info.route)
    if route is not None and route.body is not schema:
        raise Undocumented(
            f"{route.method} {route.path} reads a {schema} its route does not declare"
        )
    decoder = _decoders.get(schema)
    if decoder is None:
        decoder = _decoders[schema] = msgspec.json.Decoder(schema)
    try:
        async with asyncio.timeout(request.app[SETTINGS].request_body_timeout_seconds):
            raw = await request.read()
    except web.RequestPayloadError as exc:  # e.g. a chunked body cut short
        raise errors.ValidationError(f"The request body could not be read: {exc}") from None
    except TimeoutError:  # slow POST: a connection held open by a trickle of bytes
        raise errors.RequestTimeout("The request body did not arrive in time") from None
    body = _decoded(request, raw)
    if not body.strip():
        raise errors.ValidationError("A JSON request body is required")
    if _NUL_ESCAPE.search(body):
        raise errors.ValidationError("Strings may not contain the NUL character (\\u0000)")
    try:
        return decoder.decode(body)  # type: ignore[no-any-return]
    except msgspec.ValidationError as exc:
        raise errors.ValidationError(str(exc)) from None
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise errors.ValidationError(f"Malformed JSON: {exc}") from None


# The largest body accepted, before and after decompression (aiohttp's default, 1 MiB).
BODY_LIMIT: Final = 1024**2
_WBITS: Final = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": 0}


def _decoded(request: web.Request, body: bytes) -> bytes:
    """The body with its Content-Encoding undone, never inflating past BODY_LIMIT.

    aiohttp's own decompression is off (serving.py): it inflated every body as it arrived, on
    any route and before authentication, so a 1 MB gzip bomb cost 1 GiB and 0.5 s of the event
    loop. Here only routes that read a body inflate it, and at most BODY_LIMIT + 1 bytes of it,
    which takes a few milliseconds whatever the input.
    """
    encoding = request.headers.get("Content-Encoding", "").strip().lower()
    if encoding in ("", "identity"):
        return body
    wbits = _WBITS.get(encoding)
    if wbits is None:
        raise errors.ContentTypeError(
            "The Content-Encoding is not supported: send gzip, deflate or none"
        )
    if wbits == 0:  # deflate: zlib-wrapped as HTTP says, or raw as some clients send it
        zlib_header = len(body) > 1 and body[0] & 0x0F == 8 and (body[0] << 8 | body[1]) % 31 == 0
        wbits = zlib.MAX_WBITS if zlib_header else -zlib.MAX_WBITS
    inflater = zlib.decompressobj(wbits)
    try:
        plain = inflater.decompress(body, BODY_LIMIT + 1)
    except zlib.error:
        raise errors.ValidationError(f"The request body is not valid {encoding} data") from None
    if len(plain) > BODY_LIMIT:
        raise errors.PayloadTooLarge(
            f"The request body is larger than {BODY_LIMIT} bytes once decompressed"
        )
    if not inflater.eof or inflater.unused_data:
        raise errors.ValidationError(f"The request body is not one complete {encoding} stream")
    return plain


async def expect(request: web.Request) -> None:
    """`Expect: 100-continue` gets its interim answer, as aiohttp gives it; any other
    expectation is ignored (RFC 9110 allows it) rather than refused with aiohttp's 417, which
    comes before the middlewares: plain text, no request id, no log line."""
    if request.version == HttpVersion11 and (
        request.headers.get("Expect", "").lower() == "100-continue"
    ):
        await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        request.writer.output_size = 0  # the answer proper has not started


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
    except errors.AppError as exc:
        return _app_error(request, exc)
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
    response = error_response(request, exc.status, exc.name, exc.message)
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
        raise errors.AuthenticationRequired(
            "You must log in or send a valid API token in the Authorization header"
        )
    request[PRINCIPAL] = who
    if who.pat_id is not None:
        request.app[TOKEN_USAGE].seen(who.pat_id)
    route = request.app[ROUTE_TABLE].get(request.match_info.route)
    if route is not None and not who.can(route.permission):
        if route.permission == auth.OWN_ACCOUNT:
            raise errors.NoAccess("PATs require an authenticated user.")
        raise errors.NoAccess(f"You need the {route.permission} permission for this operation")
    return await handler(request)


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
# authentication (preflights carry no token).
MIDDLEWARES = [request_context, cors, error_bodies, authenticate, content_type]
