"""Reading a request as a handler does: its body into a request Struct (decompressed, never
past BODY_LIMIT), its query parameters (only those its Route declares), its caller and the unit
of work its command writes in; and the header fields that need care (Accept-Encoding,
If-None-Match, X-Forwarded-For, Expect)."""

from __future__ import annotations

import asyncio
import re
import zlib
from typing import TYPE_CHECKING, Any, Final, TypeVar

import msgspec
from aiohttp import HttpVersion11, web

from service import errors
from service.appkeys import POOL, PRINCIPAL, REQUEST_ID, ROUTE_TABLE, SETTINGS, WORK
from service.http.routes import MAX_DIGITS

if TYPE_CHECKING:
    import contextlib

    from eventlog.events.base import Metadata
    from service.auth import Principal
    from service.work import UnitOfWork

T = TypeVar("T")


def unit_of_work(request: web.Request) -> contextlib.AbstractAsyncContextManager[UnitOfWork]:
    """The unit of work of a request's command (service/work.py), on a connection of the pool."""
    return request.app[WORK].on(request.app[POOL])


def actor(request: web.Request) -> Metadata:
    """Who caused the events of this request, and through which request."""
    return request[PRINCIPAL].metadata(request[REQUEST_ID])


def principal(request: web.Request) -> Principal:
    return request[PRINCIPAL]


class Undocumented(RuntimeError):
    """A handler read a query parameter or a body its Route does not declare: the OpenAPI
    document would be wrong, so the request fails (every route's tests find it)."""


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

    aiohttp's own decompression is off (serving.py): it would inflate every body as it arrives,
    on any route and before authentication, so that a small gzip bomb would cost a gigabyte of
    memory and a long pause of the event loop. Here only routes that read a body inflate it,
    and at most BODY_LIMIT + 1 bytes of it, which stays cheap whatever the input.
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
