"""The API's documentation over HTTP, as Unleash serves it: the OpenAPI document at
`/docs/openapi.json` (made at start, service/openapi.py) and a page to browse it at
`/docs/openapi/`: Swagger UI, from the files the `swagger-ui-py` wheel ships. The page loads
nothing from elsewhere: its Content-Security-Policy allows only this server, and Swagger UI's
outside validator is off."""

from __future__ import annotations

import functools
import gzip
import importlib.resources
from pathlib import Path
from typing import Final, Literal, get_args

from aiohttp import web

from service import auth, errors
from service.appkeys import OPENAPI
from service.http.requests import takes_gzip
from service.http.routes import Content, Route

PAGE_PATH: Final = "/docs/openapi/"
DOCUMENT_PATH: Final = "/docs/openapi.json"

# The page's files: Swagger UI's own (from the wheel), and the script that starts it (ours: no
# inline script is allowed).
Asset = Literal[
    "swagger-ui-bundle.js", "swagger-ui.css", "start.js", "favicon-16x16.png", "favicon-32x32.png"
]
_MEDIA_TYPES: Final = {".js": "text/javascript", ".css": "text/css", ".png": "image/png"}
_START: Final = b"""window.onload = function () {
  window.ui = SwaggerUIBundle({
    url: "../openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    tryItOutEnabled: false,
    displayOperationId: true,
    docExpansion: "list",
  });
};
"""
_PAGE: Final = b"""<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>flagstore API</title>
  <link rel="stylesheet" href="swagger-ui.css">
  <link rel="icon" type="image/png" href="favicon-32x32.png" sizes="32x32">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="swagger-ui-bundle.js"></script>
  <script src="start.js"></script>
</body>
</html>
"""
# Only this server: scripts and styles from files (Swagger UI sets some styles inline), images
# also as data: URLs (its icons), and the document fetched from here.
_POLICY: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'"
)
_HEADERS: Final = {
    "Content-Security-Policy": _POLICY,
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}


def assets() -> Path:
    """Where Swagger UI's files are (the swagger-ui-py wheel's static folder)."""
    return Path(str(importlib.resources.files("swagger_ui") / "static"))  # wheels install unzipped


async def openapi_document(request: web.Request) -> web.Response:
    """The OpenAPI 3.1 document of this service.

    Made from the route table and the request and response schemas when the service
    started; every operation says the permission it needs as `x-permission`."""
    return _answer(request, request.app[OPENAPI], "application/json")


async def openapi_page(request: web.Request) -> web.Response:
    """A page to browse the OpenAPI document (Swagger UI)."""
    return _answer(request, _PAGE, "text/html")


async def openapi_redirect(_request: web.Request) -> web.Response:
    """The page's address without its closing slash: a redirect to it."""
    return web.Response(status=302, headers={"Location": PAGE_PATH})


async def openapi_asset(request: web.Request) -> web.Response:
    """A file of the page: Swagger UI's script, style sheet and icons, and its start script."""
    name = request.match_info["asset"]
    if name not in get_args(Asset):
        raise errors.NotFound("Could not find the requested resource")
    body = _START if name == "start.js" else _read(name)
    return _answer(request, body, _MEDIA_TYPES[Path(name).suffix])


@functools.cache
def _read(name: str) -> bytes:
    """One of Swagger UI's files, read once (the bundle is 1.5 MB)."""
    return (assets() / name).read_bytes()


@functools.cache
def _gzipped(body: bytes) -> bytes:
    return gzip.compress(body, mtime=0)


def _answer(request: web.Request, body: bytes, media_type: str) -> web.Response:
    """The whole body (never a range of it), gzipped for a client that takes it (text only),
    revalidated on every load (no-cache: an upgrade never pairs old and new files)."""
    headers = {**_HEADERS, "Vary": "Accept-Encoding"}
    if not media_type.startswith("image/") and takes_gzip(request.headers.get("Accept-Encoding")):
        body = _gzipped(body)
        headers["Content-Encoding"] = "gzip"
    response = web.Response(body=body, headers=headers)
    response.content_type = media_type
    if media_type.startswith("text/"):
        response.charset = "utf-8"
    return response


ROUTES: Final = [
    Route(
        "GET",
        DOCUMENT_PATH,
        openapi_document,
        auth.PUBLIC,
        ok={200: Content(("application/json",), "The OpenAPI 3.1 document")},
    ),
    Route(
        "GET",
        PAGE_PATH,
        openapi_page,
        auth.PUBLIC,
        ok={200: Content(("text/html",), "The page (Swagger UI)")},
    ),
    Route("GET", PAGE_PATH.rstrip("/"), openapi_redirect, auth.PUBLIC, ok={302: None}),
    Route(
        "GET",
        PAGE_PATH + "{asset}",
        openapi_asset,
        auth.PUBLIC,
        ok={
            200: Content(
                (*_MEDIA_TYPES.values(),),
                "A file of the page: swagger-ui-bundle.js, swagger-ui.css, start.js, "
                "favicon-16x16.png, favicon-32x32.png",
            )
        },
        params={"asset": Asset},
    ),
]
