"""The web UI's pages (service/ui.py), on the stand-in build of tests/ui_sample: index.html with
its placeholders filled in, for `/` and every path the UI routes; hashed assets kept a year;
the service's own prefixes never swallowed; the security headers; off and missing."""

from __future__ import annotations

import gzip
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from structlog.testing import capture_logs

from service.app import create_app
from service.ui import OWN_PREFIXES, POLICY, load
from tests import conformance
from tests.factories import ADMIN, UI_SAMPLE, error, settings_for

if TYPE_CHECKING:
    from pathlib import Path

    from aiohttp.test_utils import TestClient

    from tests.conftest import AiohttpClient

    Client = TestClient[Any, Any]

SAMPLE = UI_SAMPLE / "build"
ASSET = "/static/index-T3stHash.js"
PAGE_HEADERS = {
    "Content-Security-Policy": POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}


def expected_page() -> bytes:
    """What Unleash's server writes into index.html for an install at the root, without a CDN,
    flags or a token for its hosted services."""
    page = (SAMPLE / "index.html").read_bytes()
    for placeholder, value in {
        b"::faviconPrefix::": b"",
        b"::baseUriPath::": b"",
        b"::cdnPrefix::": b"",
        b"::uiFlags::": b"%7B%7D",
        b"::unleashToken::": b"",
    }.items():
        page = page.replace(placeholder, value)
    return page


async def test_the_page_is_index_html_with_its_placeholders_filled_in(client: Client) -> None:
    resp = await client.get("/", headers={"Accept-Encoding": "identity"})
    assert resp.status == 200
    body = await resp.read()
    assert body == expected_page()
    assert b"::" not in body
    assert b'<meta name="unleashToken" content="" />' in body
    assert resp.content_type == "text/html"
    assert {k: resp.headers[k] for k in PAGE_HEADERS} == PAGE_HEADERS
    assert resp.headers["Cache-Control"] == "no-cache"
    assert "Content-Encoding" not in resp.headers
    again = await client.get("/", headers={"If-None-Match": resp.headers["ETag"]})
    assert (again.status, await again.read()) == (304, b"")


async def test_the_page_is_gzipped_for_a_browser_that_takes_it(client: Client) -> None:
    resp = await client.get("/", headers={"Accept-Encoding": "gzip, br"}, auto_decompress=False)
    assert resp.headers["Content-Encoding"] == "gzip"
    assert resp.headers["Vary"] == "Accept-Encoding"
    assert gzip.decompress(await resp.read()) == expected_page()


@pytest.mark.parametrize(
    "path",
    [
        "/login",
        "/projects/default",
        "/projects/default/features/checkout.v2",  # a flag name with a dot: still the page
        "/admin/users?sort=name",
        "/index.html",
        "/static",
        "/apis",  # only the whole segment `api` is the service's
        "/health-overview",
    ],
)
async def test_every_path_the_ui_routes_is_its_page(client: Client, path: str) -> None:
    resp = await client.get(path)
    assert resp.status == 200, path
    assert await resp.read() == expected_page()
    assert resp.headers["Cache-Control"] == "no-cache"
    assert resp.headers["Content-Security-Policy"] == POLICY


async def test_hashed_assets_are_kept_a_year_and_sent_gzipped(client: Client) -> None:
    plain = await client.get(ASSET, headers={"Accept-Encoding": "identity"})
    assert plain.status == 200
    assert await plain.read() == (SAMPLE / ASSET.lstrip("/")).read_bytes()
    assert plain.content_type == "text/javascript"
    assert plain.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert plain.headers["X-Content-Type-Options"] == "nosniff"
    packed = await client.get(ASSET, headers={"Accept-Encoding": "gzip"}, auto_decompress=False)
    assert packed.headers["Content-Encoding"] == "gzip"
    # The build's own gzip sibling, as tools/ui_fetch.py made it.
    assert await packed.read() == (SAMPLE / (ASSET.lstrip("/") + ".gz")).read_bytes()
    again = await client.get(ASSET, headers={"If-None-Match": plain.headers["ETag"]})
    assert again.status == 304


async def test_the_builds_other_files_are_kept_an_hour(client: Client) -> None:
    resp = await client.get("/favicon.ico")
    assert resp.status == 200
    assert await resp.read() == (SAMPLE / "favicon.ico").read_bytes()
    assert resp.content_type == "image/x-icon"
    assert resp.headers["Cache-Control"] == "public, max-age=3600"


async def test_an_asset_the_build_lacks_is_a_json_404(client: Client) -> None:
    resp = await client.get("/static/index-Missing.js")
    assert await error(resp, 404, "NotFoundError") == "Could not find the requested resource"


@pytest.mark.parametrize(
    "name", ["../index.html", "static/../../ui_sample/build/index.html", "/etc/passwd", ""]
)
def test_a_request_names_only_files_found_in_the_build_at_start(name: str) -> None:
    build = load(settings_for("postgresql://unused"))
    assert build.file(name) is None
    assert build.file("favicon.ico") is not None


@pytest.mark.parametrize(
    ("path", "headers"),
    [
        ("/api/admin/no-such-thing", ADMIN),
        ("/api/no-such-api", {}),
        ("/api", {}),
        ("/auth/no-such-way", {}),
        ("/logout/again", {}),
        ("/health/deep", {}),
        ("/ready/now", {}),
        ("/docs/no-such-page", {}),
        ("/internal-backstage/nothing", {}),
    ],
)
async def test_the_services_own_prefixes_keep_their_json_404(
    client: Client, path: str, headers: dict[str, str]
) -> None:
    resp = await client.get(path, headers=headers)
    assert await error(resp, 404, "NotFoundError") == "Could not find the requested resource"


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    prefix=st.sampled_from(OWN_PREFIXES),
    rest=st.text(st.characters(codec="ascii", categories=("L", "N")), max_size=20),
)
async def test_no_path_of_the_services_prefixes_is_the_page(
    client: Client, prefix: str, rest: str
) -> None:
    resp = await client.get(f"/{prefix}/{rest}", headers=ADMIN)
    assert resp.content_type == "application/json" or resp.status == 302, (prefix, rest)


async def test_the_services_own_pages_still_answer(client: Client) -> None:
    docs = await client.get("/docs/openapi/")
    assert (docs.status, docs.content_type) == (200, "text/html")
    assert b"swagger-ui" in await docs.read()
    assert (await client.get("/health")).status == 200
    document = await (await client.get("/docs/openapi.json")).json()
    assert "/{path}" in document["paths"]


async def test_the_page_takes_no_other_method(client: Client) -> None:
    resp = await client.post("/projects/default", json={})
    assert await error(resp, 405, "MethodNotAllowedError")
    assert resp.headers["Allow"] == "GET,HEAD"


async def ui_client(aiohttp_client: AiohttpClient, dsn: str, **overrides: Any) -> Client:
    app = create_app(settings_for(dsn, **overrides), dsn)
    conformance.install(app)
    client = await aiohttp_client(app)
    assert not app[conformance.VIOLATIONS]
    return client


@pytest.mark.parametrize("path", ["/", "/projects/default", ASSET, "/favicon.ico"])
async def test_turned_off_every_ui_path_is_a_json_404(
    aiohttp_client: AiohttpClient, dsn: str, path: str
) -> None:
    with capture_logs() as logs:
        client = await ui_client(aiohttp_client, dsn, ui_enabled=False)
    assert {"event": "ui_disabled", "reason": "UI_ENABLED is false", "log_level": "info"} in logs
    resp = await client.get(path)
    assert await error(resp, 404, "NotFoundError") == (
        "The web UI is turned off on this server (UI_ENABLED=false)"
    )
    assert (await client.get("/docs/openapi/")).status == 200


async def test_without_the_build_the_service_starts_and_says_so(
    aiohttp_client: AiohttpClient, dsn: str, tmp_path: Path
) -> None:
    with capture_logs() as logs:
        client = await ui_client(aiohttp_client, dsn, ui_dir=str(tmp_path))
    [line] = [line for line in logs if line["event"] == "ui_missing"]
    assert line["folder"] == str(tmp_path / "build")
    assert line["log_level"] == "warning"
    resp = await client.get("/")
    assert await error(resp, 404, "NotFoundError") == (
        "The web UI is not installed on this server (`make install` fetches it)"
    )
    assert (await client.get("/health")).status == 200


@pytest.mark.parametrize(
    "path", ["/", "/projects/default", ASSET, "/favicon.ico", "/docs/openapi/"]
)
async def test_head_answers_what_get_does_without_the_body(client: Client, path: str) -> None:
    got = await client.get(path, headers={"Accept-Encoding": "identity"})
    head = await client.head(path, headers={"Accept-Encoding": "identity"})
    assert (head.status, got.status) == (200, 200)
    assert await head.read() == b""
    for name in ("Content-Type", "Content-Length", "Cache-Control", "ETag"):
        assert head.headers.get(name) == got.headers.get(name), name
    if path != "/docs/openapi/":
        assert head.headers["X-Content-Type-Options"] == "nosniff"


async def test_head_of_an_api_read_checks_its_credentials_and_an_event_stream_has_none(
    client: Client,
) -> None:
    assert (await client.head("/api/admin/ui-config")).status == 401
    signed = await client.head("/api/admin/ui-config", headers=ADMIN)
    assert signed.status == 200
    assert signed.content_type == "application/json"
    assert await signed.read() == b""
    stream = await client.head("/api/client/streaming", headers=ADMIN)
    assert stream.status == 405
    assert stream.headers["Allow"] == "GET"
