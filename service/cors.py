"""CORS for the frontend API (browsers call it from other origins), as Unleash's
corsOriginMiddleware answers: the origins set through the admin API, else those of
FRONTEND_API_ORIGINS ("*": any; service/instance/state.py), ETag exposed,
preflights (OPTIONS, which never carry a token) answered 204 before authentication."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

from aiohttp import web

from service.appkeys import FRONTEND_ORIGINS, POOL, SETTINGS

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

FRONTEND_PREFIX: Final = "/api/frontend"
METHODS: Final = "GET, POST"
# What a preflight may ask for: header names (RFC 9110 tokens), a few dozen at most. Unleash's
# `cors` reflects whatever is asked; reflecting only well-formed names keeps the header sane.
_HEADER_NAMES = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+(?:\s*,\s*[!#$%&'*+.^_`|~0-9A-Za-z-]+)*$")
MAX_REQUEST_HEADERS: Final = 1024  # characters of Access-Control-Request-Headers reflected
# Asked for by nothing (the preflight names no headers): what Unleash's browser SDK sends.
DEFAULT_HEADERS: Final = "Authorization, Content-Type, If-None-Match, Unleash-AppName, Unleash-SDK"


def is_frontend(path: str) -> bool:
    return path == FRONTEND_PREFIX or path.startswith(FRONTEND_PREFIX + "/")


def allowed_origin(origins: tuple[str, ...], origin: str | None) -> str | None:
    """The Access-Control-Allow-Origin to send: "*" when any origin may call, the request's
    own origin when it is listed, else none (the browser then refuses the answer)."""
    if "*" in origins:
        return "*"
    return origin if origin is not None and origin in origins else None


@web.middleware
async def cors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Preflights on /api/frontend answered here (no token, no route); every other answer of
    the frontend API, errors included, says which origin may read it."""
    if not is_frontend(request.path):
        return await handler(request)
    settings = request.app[SETTINGS]
    origins = await request.app[FRONTEND_ORIGINS].get(request.app[POOL])
    origin = allowed_origin(origins, request.headers.get("Origin"))
    if request.method == "OPTIONS":
        response: web.StreamResponse = web.Response(status=204)
        response.headers["Access-Control-Allow-Methods"] = METHODS
        asked = request.headers.get("Access-Control-Request-Headers", "").strip()
        well_formed = len(asked) <= MAX_REQUEST_HEADERS and _HEADER_NAMES.match(asked)
        response.headers["Access-Control-Allow-Headers"] = asked if well_formed else DEFAULT_HEADERS
        response.headers["Access-Control-Max-Age"] = str(settings.access_control_max_age)
        vary = "Origin, Access-Control-Request-Headers"
    else:
        response = await handler(request)
        vary = "Origin"
    if origin is not None:
        response.headers["Access-Control-Allow-Origin"] = origin
    response.headers["Access-Control-Expose-Headers"] = "ETag"
    _vary(response, vary)
    return response


def _vary(response: web.StreamResponse, names: str) -> None:
    existing = response.headers.get("Vary")
    response.headers["Vary"] = f"{existing}, {names}" if existing else names
