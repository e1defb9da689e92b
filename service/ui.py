"""Unleash's own web UI, served as pages of this service: `/`, its hashed assets under
`/static/`, the other files of its build, and `index.html` for every other path the UI routes
in the browser (`/projects/default`, `/login`...). The build is npm unleash-server 6.10.1's
`frontend/build` (Apache-2.0), which `make install` fetches (tools/ui_fetch.py); the UI is a
client of the admin API and has no API routes of its own (docs/architecture.md, "The web UI").

Paths under the service's own prefixes (`/api`, `/auth`, `/invite`, `/logout`, `/health`,
`/ready`, `/docs`, `/internal-backstage`) are never the UI's: an unknown one stays a JSON 404. With
`UI_ENABLED=false`, or without the build (no `make install`), every UI route answers a JSON 404
that says why, and the start logs it once.
"""

from __future__ import annotations

import gzip
import hashlib
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Annotated, Final

import msgspec
import structlog
from aiohttp import web

from service import auth, errors
from service.http.requests import etag_matches, takes_gzip
from service.http.routes import Content, Route

if TYPE_CHECKING:
    from service.settings import Settings

log = structlog.get_logger()

UI_PACKAGE: Final = "unleash-server"
UI_VERSION: Final = "6.10.1"
# Where `make install` puts the UI (tools/ui_fetch.py): beside the service's source.
DEFAULT_DIR: Final = Path(__file__).resolve().parent.parent / ".ui" / f"{UI_PACKAGE}-{UI_VERSION}"
INDEX: Final = "index.html"
STATIC: Final = "static/"  # hashed names: a file there never changes

# The prefixes this service answers itself: the UI's fallback leaves them alone.
OWN_PREFIXES: Final = (
    "api",
    "auth",
    "invite",
    "logout",
    "health",
    "ready",
    "docs",
    "internal-backstage",
)
UI_PATH_PATTERN: Final = rf"(?!(?:{'|'.join(OWN_PREFIXES)})(?:/|$)).+"

# What Unleash's server writes into the placeholders of index.html (its rewriteHTML), for an
# install at the root without a CDN. uiFlags: no flags (Unleash sends the JSON of the string
# "{}"; the UI reads an object). unleashToken: none, so the UI's own Unleash client never
# starts (it would call Unleash's hosted edge).
PLACEHOLDERS: Final = {
    "::baseUriPath::": "",
    "::cdnPrefix::": "",
    "::faviconPrefix::": "",
    "::uiFlags::": urllib.parse.quote("{}"),
    "::unleashToken::": "",
}

# The page's policy: scripts and style sheets from here; Google Fonts' style sheets and fonts,
# which index.html links (the UI's text face and its icons, Material Symbols); inline styles,
# which MUI's emotion writes at run time; images from here, data: URLs and Gravatar (the
# avatars user records point to: service/users/responses.py); API calls to here only. No
# frames, no plugins, forms only to here (the sign-out form), never framed.
POLICY: Final = (
    "default-src 'self'; script-src 'self'; "
    "style-src 'self' 'unsafe-inline' https://fonts.googleapis.com; "
    "font-src 'self' https://fonts.gstatic.com; img-src 'self' data: https://gravatar.com; "
    "connect-src 'self'; frame-src 'none'; object-src 'none'; base-uri 'self'; "
    "form-action 'self'; frame-ancestors 'none'"
)
PAGE_HEADERS: Final = {
    "Content-Security-Policy": POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
# index.html is checked on every load (an upgrade never pairs an old page with new assets);
# hashed assets are kept for a year; the build's other files (icons, logos) for an hour.
NO_CACHE: Final = "no-cache"
IMMUTABLE: Final = "public, max-age=31536000, immutable"
SHORT: Final = "public, max-age=3600"

MEDIA_TYPES: Final = {
    ".html": "text/html",
    ".js": "text/javascript",
    ".css": "text/css",
    ".json": "application/json",
    ".map": "application/json",
    ".txt": "text/plain",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".gif": "image/gif",
    ".jpg": "image/jpeg",
    ".webp": "image/webp",
    ".ico": "image/x-icon",
    ".woff2": "font/woff2",
    ".woff": "font/woff",
}
OCTETS: Final = "application/octet-stream"


@dataclass(frozen=True)
class File:
    body: bytes
    gzipped: bytes | None  # the precompressed sibling, when the build has one
    etag: str
    media_type: str


@dataclass
class Build:
    """The UI as this process serves it: found at start, files read on first use."""

    folder: Path | None  # the build folder; None when the UI is off or missing
    why_not: str = ""  # the answer's message when folder is None
    names: frozenset[str] = frozenset()  # every file of the build, relative, without .gz ones
    index: File | None = None
    _read: dict[str, File] = field(default_factory=dict)

    def file(self, name: str) -> File | None:
        """A file of the build by its relative name (only names found at start: a path from a
        request never reaches the file system); index.html is the rewritten page."""
        if name == INDEX:
            return self.index
        if self.folder is None or name not in self.names:
            return None
        if name not in self._read:
            self._read[name] = _load(self.folder, name)
        return self._read[name]


UI = web.AppKey("ui", Build)


def load(settings: Settings) -> Build:
    """The UI of these settings; when it is off or missing, says so once in the log."""
    if not settings.ui_enabled:
        log.info("ui_disabled", reason="UI_ENABLED is false")
        return Build(None, "The web UI is turned off on this server (UI_ENABLED=false)")
    folder = (Path(settings.ui_dir) if settings.ui_dir else DEFAULT_DIR) / "build"
    if not (folder / INDEX).is_file():
        log.warning(
            "ui_missing",
            folder=str(folder),
            hint="`make install` fetches it (tools/ui_fetch.py); UI_DIR names another folder",
        )
        return Build(None, "The web UI is not installed on this server (`make install` fetches it)")
    names = frozenset(
        path.relative_to(folder).as_posix()
        for path in folder.rglob("*")
        if path.is_file() and path.suffix != ".gz"
    )
    page = (folder / INDEX).read_bytes()
    for placeholder, value in PLACEHOLDERS.items():
        page = page.replace(placeholder.encode(), value.encode())
    index = File(page, gzip.compress(page, mtime=0), _etag(page), "text/html")
    log.info("ui_ready", folder=str(folder), files=len(names), version=UI_VERSION)
    return Build(folder, names=names, index=index)


def _load(folder: Path, name: str) -> File:
    body = (folder / name).read_bytes()
    sibling = folder / (name + ".gz")
    gzipped = sibling.read_bytes() if sibling.is_file() else None
    media_type = MEDIA_TYPES.get(PurePosixPath(name).suffix.lower(), OCTETS)
    return File(body, gzipped, _etag(body), media_type)


def _etag(body: bytes) -> str:
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def _build(request: web.Request) -> Build:
    build = request.app[UI]
    if build.folder is None:
        raise errors.NotFound(build.why_not)
    return build


def _answer(request: web.Request, file: File, cache: str) -> web.Response:
    """The file (gzipped for a client that takes it, when the build has it so), or 304 when
    the client holds it already."""
    headers = {**PAGE_HEADERS, "Cache-Control": cache, "ETag": file.etag, "Vary": "Accept-Encoding"}
    if etag_matches(request.headers.get("If-None-Match"), file.etag):
        return web.Response(status=304, headers=headers)
    body = file.body
    if file.gzipped is not None and takes_gzip(request.headers.get("Accept-Encoding")):
        body = file.gzipped
        headers["Content-Encoding"] = "gzip"
    response = web.Response(body=body, headers=headers)
    response.content_type = file.media_type
    if file.media_type.startswith("text/") or file.media_type == "application/json":
        response.charset = "utf-8"
    return response


async def ui_index(request: web.Request) -> web.Response:
    """The UI's page (Unleash's index.html, its placeholders filled in for this server)."""
    build = _build(request)
    assert build.index is not None  # found with the folder
    return _answer(request, build.index, NO_CACHE)


async def ui_static(request: web.Request) -> web.Response:
    """One of the UI's hashed assets (scripts, style sheets, images): kept a year."""
    file = _build(request).file(STATIC + request.match_info["file"])
    if file is None:
        raise errors.NotFound("Could not find the requested resource")
    return _answer(request, file, IMMUTABLE)


async def ui_page(request: web.Request) -> web.Response:
    """A file of the UI's build by its name (icons, logos), else the UI's page: the UI itself
    routes every other path, in the browser."""
    build = _build(request)
    file = build.file(request.match_info["path"])
    if file is None or file is build.index:
        assert build.index is not None  # found with the folder
        return _answer(request, build.index, NO_CACHE)
    return _answer(request, file, SHORT)


PAGE: Final = Content(("text/html",), "The web UI's page (Unleash's index.html)")
ROUTES: Final = [
    Route(
        "GET",
        "/",
        ui_index,
        auth.PUBLIC,
        ok={200: PAGE, 304: None},
        errors=(errors.NotFound,),
    ),
    Route(
        "GET",
        "/static/{file:.+}",
        ui_static,
        auth.PUBLIC,
        ok={
            200: Content(tuple(sorted(set(MEDIA_TYPES.values()))), "A hashed asset of the UI"),
            304: None,
        },
    ),
    # Registered last, and indexed under `/`: aiohttp tries every route with a longer prefix
    # first, and the pattern leaves the service's own prefixes to their JSON 404.
    Route(
        "GET",
        "/{path:" + UI_PATH_PATTERN + "}",
        ui_page,
        auth.PUBLIC,
        ok={
            200: Content(
                tuple(sorted({*MEDIA_TYPES.values(), OCTETS})),
                "A file of the UI's build, or the UI's page for any other path",
            ),
            304: None,
        },
        params={"path": Annotated[str, msgspec.Meta(pattern="^" + UI_PATH_PATTERN + "$")]},
    ),
]
