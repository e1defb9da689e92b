"""HTTP basics through a real aiohttp server: health, readiness, errors, auth, content type."""

from __future__ import annotations

import asyncio
import io
import json
import re
import uuid
import zlib
from typing import TYPE_CHECKING, Any

import pytest
from aiohttp.test_utils import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eventlog import connections
from eventlog.logs import configure_logging
from service import auth, bootstrap
from service.appkeys import LIFECYCLE, POOL, SCHEMA_VERSION
from tests.factories import ADMIN, ADMIN_TOKEN, FEATURES, api_token, error_body, gzipped_zeros, work

if TYPE_CHECKING:
    from aiohttp import web

    from tests.conftest import AiohttpClient

Client = TestClient[Any, Any]
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
JSON = {"Content-Type": "application/json"}


async def error_of(resp: Any, status: int, name: str) -> str:
    """Assert an error answer's status and whole body shape; return its message."""
    assert resp.status == status
    assert resp.content_type == "application/json"
    body = await resp.json()
    message = error_body(body, name)
    assert UUID_RE.match(body["id"])
    assert isinstance(body["message"], str)
    assert message
    return message


async def test_health_answers_good(client: Client) -> None:
    resp = await client.get("/health")
    assert resp.status == 200
    assert await resp.json() == {"health": "GOOD"}


async def test_ready_when_database_and_schema_are_current(client: Client) -> None:
    resp = await client.get("/ready")
    assert resp.status == 200
    assert await resp.json() == {"health": "GOOD"}


async def test_not_ready_while_draining(client: Client, app: web.Application) -> None:
    app[LIFECYCLE].draining = True
    await error_of(await client.get("/ready"), 503, "ServiceUnavailable")
    assert (await client.get("/health")).status == 200


async def test_not_ready_when_the_schema_is_behind(
    app: web.Application, aiohttp_client: AiohttpClient
) -> None:
    app[SCHEMA_VERSION] = 99
    client = await aiohttp_client(app)
    message = await error_of(await client.get("/ready"), 503, "ServiceUnavailable")
    assert message.endswith("expected 99")


async def test_ready_when_the_schema_is_ahead_so_a_migration_job_keeps_old_replicas_serving(
    app: web.Application, aiohttp_client: AiohttpClient
) -> None:
    """Upgrade: the next release's migration Job runs first; this release stays ready."""
    app[SCHEMA_VERSION] -= 1
    client = await aiohttp_client(app)
    assert (await client.get("/ready")).status == 200


async def test_not_ready_when_the_database_is_gone(client: Client, app: web.Application) -> None:
    await app[POOL].close()
    message = await error_of(await client.get("/ready"), 503, "ServiceUnavailable")
    assert message == "The database does not answer"


# (Any other unknown path is the web UI's page: tests/service/test_ui.py.)
@pytest.mark.parametrize("path", ["/docs/nope", "/api/nope", "/api/admin/nope"])
async def test_unknown_routes_are_404_json(client: Client, path: str) -> None:
    await error_of(await client.get(path, headers=ADMIN), 404, "NotFoundError")


async def test_wrong_method_is_405_json(client: Client) -> None:
    resp = await client.post("/health")
    await error_of(resp, 405, "MethodNotAllowedError")
    assert resp.headers["Allow"] == "GET,HEAD"


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": ""}, {"Authorization": "*:*.wrong"}, {"Authorization": "Bearer "}],
)
async def test_missing_or_unknown_token_is_401(client: Client, headers: dict[str, str]) -> None:
    resp = await client.get("/api/admin/api-tokens", headers=headers)
    await error_of(resp, 401, "AuthenticationRequired")


async def test_unknown_admin_path_needs_auth_first(client: Client) -> None:
    await error_of(await client.get("/api/admin/nope"), 401, "AuthenticationRequired")


@pytest.mark.parametrize("prefix", ["", "Bearer ", "bearer ", "BEARER  "])
async def test_bearer_prefix_is_accepted(client: Client, prefix: str) -> None:
    resp = await client.get(
        "/api/admin/api-tokens", headers={"Authorization": prefix + ADMIN_TOKEN}
    )
    assert resp.status == 200


async def test_permission_is_checked_before_content_type(client: Client) -> None:
    token = (await api_token(client, name="t-client"))["secret"]
    resp = await client.post(
        "/api/admin/api-tokens",
        data="x",
        headers={"Authorization": token, "Content-Type": "text/plain"},
    )
    await error_of(resp, 403, "NoAccessError")


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", ""])
async def test_non_json_body_is_415(client: Client, content_type: str) -> None:
    resp = await client.post(
        "/api/admin/api-tokens",
        data=b'{"tokenName": "x", "type": "client"}',
        headers={**ADMIN, "Content-Type": content_type},
    )
    await error_of(resp, 415, "ContentTypeerror")


async def test_json_with_charset_is_accepted(client: Client) -> None:
    resp = await client.post(
        "/api/admin/api-tokens",
        data=b'{"tokenName": "x", "type": "client"}',
        headers={**ADMIN, "Content-Type": "application/json; charset=utf-8"},
    )
    assert resp.status == 201


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"", "A JSON request body is required"),
        (b"{", "Malformed JSON"),
        (b"[1, 2]", "Expected `object`, got `array`"),
        (b'{"type": "client"}', "Object missing required field `tokenName`"),
        (
            b'{"tokenName": 5, "type": "client"}',
            "Expected `str | null`, got `int` - at `$.tokenName`",
        ),
        (
            b'{"tokenName": "x", "type": "client", "environment": "nope"}',
            "Environment=nope does not exist - at `$.environment`",
        ),
        (
            b'{"tokenName": "x", "type": "client", "projects": ["default", "nope"]}',
            "Project=nope does not exist - at `$.projects`",
        ),
        (
            b'{"tokenName": "", "type": "client"}',
            "Expected `str` of length >= 1 - at `$.tokenName`",
        ),
        (b'{"tokenName": "x", "type": "root"}', "type must be one of admin, client, frontend"),
    ],
)
async def test_bad_bodies_are_400_naming_the_field(
    client: Client, app: web.Application, body: bytes, message: str
) -> None:
    async with app[POOL].acquire() as conn:
        before = await conn.fetchval("SELECT count(*) FROM events")
    resp = await client.post("/api/admin/api-tokens", data=body, headers={**ADMIN, **JSON})
    assert (await error_of(resp, 400, "ValidationError")).startswith(message)
    async with app[POOL].acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM events") == before


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    body=st.one_of(
        st.binary(max_size=200),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=20),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.text(max_size=10), inner, max_size=3)
            ),
            max_leaves=8,
        ).map(lambda v: json.dumps(v).encode()),
    )
)
async def test_arbitrary_bodies_never_cause_a_500(client: Client, body: bytes) -> None:
    resp = await client.post("/api/admin/api-tokens", data=body, headers={**ADMIN, **JSON})
    assert resp.status in {201, 400}
    if resp.status == 400:
        await error_of(resp, 400, "ValidationError")


async def test_unexpected_exceptions_are_500_with_a_logged_id(
    app: web.Application, aiohttp_client: AiohttpClient
) -> None:
    async def boom(_request: web.Request) -> web.Response:
        raise RuntimeError("kaput")

    app.router.add_get("/boom", boom)
    buffer = io.StringIO()
    configure_logging("json", "info", buffer)
    client = await aiohttp_client(app)
    resp = await client.get("/boom")
    await error_of(resp, 500, "InternalError")
    error_id = (await resp.json())["id"]
    lines = [json.loads(line) for line in buffer.getvalue().splitlines()]
    crash = next(line for line in lines if line["event"] == "unhandled_error")
    assert crash["error_id"] == error_id
    assert "RuntimeError: kaput" in crash["exception"]
    request_line = next(line for line in lines if line["event"] == "request")
    assert (request_line["status"], request_line["error_id"]) == (500, error_id)


async def test_request_id_is_echoed_or_made(client: Client) -> None:
    resp = await client.get("/health", headers={"X-Request-Id": "abc-123"})
    assert resp.headers["X-Request-Id"] == "abc-123"
    resp = await client.get("/health")
    assert UUID_RE.match(resp.headers["X-Request-Id"])
    resp = await client.get("/health", headers={"X-Request-Id": "bad id\twith spaces"})
    assert UUID_RE.match(resp.headers["X-Request-Id"])


async def test_one_log_line_per_request_without_the_token(
    app: web.Application, aiohttp_client: AiohttpClient
) -> None:
    buffer = io.StringIO()
    configure_logging("json", "info", buffer)
    client = await aiohttp_client(app)
    await client.get("/api/admin/api-tokens", headers={**ADMIN, "X-Request-Id": "r-1"})
    await client.get("/api/admin/nope", headers={"X-Request-Id": "r-2"})
    output = buffer.getvalue()
    assert "test-admin-secret" not in output
    lines = [json.loads(line) for line in output.splitlines()]
    requests = [line for line in lines if line["event"] == "request"]
    assert len(requests) == 2
    first, second = requests
    assert {k: first[k] for k in ("request_id", "method", "path", "status", "route")} == {
        "request_id": "r-1",
        "method": "GET",
        "path": "/api/admin/api-tokens",
        "status": 200,
        "route": "/api/admin/api-tokens",
    }
    assert isinstance(first["duration_ms"], float)
    assert first["principal"].startswith("api-token:")
    assert (second["request_id"], second["status"], second["error"]) == (
        "r-2",
        401,
        "AuthenticationRequired",
    )


async def test_api_token_lifecycle(client: Client, app: web.Application) -> None:
    created = await api_token(client, "admin", name="t-admin")
    secret = created.pop("secret")
    assert re.fullmatch(r"\*:\*\.[0-9a-f]{64}", secret)
    assert created == {
        "id": created["id"],
        "tokenName": "t-admin",
        "username": "t-admin",
        "alias": None,
        "type": "admin",
        "environment": "*",
        "project": "*",
        "projects": ["*"],
        "createdAt": created["createdAt"],
        "expiresAt": None,
        "seenAt": None,
    }
    listed = (await (await client.get("/api/admin/api-tokens", headers=ADMIN)).json())["tokens"]
    assert [t["tokenName"] for t in listed] == ["admin", "t-admin"]
    assert listed[1]["secret"] == secret[:8] + "********"
    assert secret not in json.dumps(listed)
    mine = {"Authorization": secret}
    assert (await client.get("/api/admin/api-tokens", headers=mine)).status == 200
    resp = await client.delete(f"/api/admin/api-tokens/{created['id']}", headers=ADMIN)
    assert resp.status == 200
    await error_of(
        await client.get("/api/admin/api-tokens", headers=mine), 401, "AuthenticationRequired"
    )
    resp = await client.delete(f"/api/admin/api-tokens/{created['id']}", headers=ADMIN)
    await error_of(resp, 404, "NotFoundError")
    await error_of(
        await client.delete("/api/admin/api-tokens/x", headers=ADMIN), 404, "NotFoundError"
    )
    async with app[POOL].acquire() as conn:
        rows = await conn.fetch(
            "SELECT type FROM events WHERE stream_type = 'api-token' ORDER BY position"
        )
        assert [r["type"] for r in rows] == [
            "ApiTokenCreated",
            "ApiTokenCreated",
            "ApiTokenDeleted",
        ]
        assert secret not in await conn.fetchval("SELECT string_agg(data::text, '') FROM events")


async def test_client_token_defaults_and_format(client: Client) -> None:
    created = await api_token(client, name="t-client")
    assert re.fullmatch(r"\*:development\.[0-9a-f]{64}", created["secret"])
    assert (created["environment"], created["projects"]) == ("development", ["*"])


async def test_expired_tokens_are_rejected(client: Client) -> None:
    resp = await client.post(
        "/api/admin/api-tokens",
        json={"tokenName": "old", "type": "admin", "expiresAt": "2000-01-01T00:00:00Z"},
        headers=ADMIN,
    )
    assert (await error_of(resp, 400, "ValidationError")).startswith(
        "expiresAt must be in the future"
    )


async def test_request_ids_are_unique(client: Client) -> None:
    ids = {(await client.get("/nope")).headers["X-Request-Id"] for _ in range(5)}
    assert len(ids) == 5
    assert all(uuid.UUID(i) for i in ids)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"tokenName": "\xff", "type": "client"}', "Malformed JSON"),
        (b"[" * 400_000, "Expected `object`, got `array`"),
        (b'{"tokenName": "a\\u0000b", "type": "client"}', "Strings may not contain the NUL"),
        (
            b'{"tokenName": "x", "type": "client", "expiresAt": "2099-01-01T00:00:00"}',
            "Expected `datetime` with a timezone component - at `$.expiresAt`",
        ),
        (
            b'{"tokenName": "x", "type": "client", "expiresAt": "9999-12-31T23:59:59-14:00"}',
            "expiresAt must be within 100 years",
        ),
        (b'{"tokenName": "x", "type": "client", "environment": "a b"}', "Environment may only"),
        (b'{"tokenName": "x", "type": "client", "projects": ["default" ]}', None),
    ],
)
async def test_hostile_bodies_are_400_not_500(
    client: Client, body: bytes, message: str | None
) -> None:
    resp = await client.post("/api/admin/api-tokens", data=body, headers={**ADMIN, **JSON})
    if message is None:
        assert resp.status == 201
        return
    assert (await error_of(resp, 400, "ValidationError")).startswith(message)


async def test_an_escaped_backslash_before_u0000_is_just_text(client: Client) -> None:
    body = b'{"tokenName": "a\\\\u0000b", "type": "client"}'
    resp = await client.post("/api/admin/api-tokens", data=body, headers={**ADMIN, **JSON})
    assert resp.status == 201
    assert (await resp.json())["tokenName"] == "a\\u0000b"


def deflate(data: bytes, wbits: int) -> bytes:
    packer = zlib.compressobj(wbits=wbits)
    return packer.compress(data) + packer.flush()


@pytest.mark.parametrize(
    ("encoding", "wbits"),
    [("gzip", 16 + zlib.MAX_WBITS), ("x-gzip", 31), ("deflate", 15), ("DEFLATE", -15)],
)
async def test_compressed_bodies_are_read(client: Client, encoding: str, wbits: int) -> None:
    body = deflate(json.dumps({"name": f"zipped-{wbits}"}).encode(), wbits)
    headers = {**ADMIN, **JSON, "Content-Encoding": encoding}
    resp = await client.post(FEATURES, data=body, headers=headers)
    assert resp.status == 200, await resp.text()
    assert (await resp.json())["name"] == f"zipped-{wbits}"


@pytest.fixture(scope="module")
def gzip_bomb() -> bytes:
    """One gzip member of 1 MiB + 1 zero bytes... up to 64 MiB: far past the body limit."""
    return gzipped_zeros(2**20)


async def test_a_body_that_inflates_past_the_limit_is_413_without_inflating_it(
    client: Client, gzip_bomb: bytes
) -> None:
    headers = {**ADMIN, **JSON, "Content-Encoding": "gzip"}
    resp = await client.post(FEATURES, data=gzip_bomb, headers=headers)
    message = await error_of(resp, 413, "PayloadTooLargeError")
    assert message == "The request body is larger than 1048576 bytes once decompressed"
    just_over = deflate(b" " * (2**20 + 1), 31)
    resp = await client.post(FEATURES, data=just_over, headers=headers)
    await error_of(resp, 413, "PayloadTooLargeError")


async def test_a_compressed_body_is_not_inflated_before_authentication(
    client: Client, gzip_bomb: bytes
) -> None:
    resp = await client.post(FEATURES, data=gzip_bomb, headers={**JSON, "Content-Encoding": "gzip"})
    await error_of(resp, 401, "AuthenticationRequired")


@pytest.mark.parametrize(
    ("encoding", "body", "status", "message"),
    [
        (
            "br",
            b"{}",
            415,
            "The Content-Encoding is not supported: send gzip, deflate or none",
        ),
        ("gzip, gzip", b"{}", 415, "The Content-Encoding is not supported"),
        ("gzip", deflate(b'{"name": "cut-short"}', 31)[:-6], 400, "The request body is not one"),
        ("gzip", deflate(b"{}", 31) * 2, 400, "The request body is not one complete gzip stream"),
    ],
    ids=["brotli", "twice", "truncated", "two-members"],
)
async def test_bodies_with_an_encoding_that_cannot_be_read_are_refused(
    client: Client, encoding: str, body: bytes, status: int, message: str
) -> None:
    headers = {**ADMIN, **JSON, "Content-Encoding": encoding}
    resp = await client.post(FEATURES, data=body, headers=headers)
    name = "ContentTypeerror" if status == 415 else "ValidationError"
    assert (await error_of(resp, status, name)).startswith(message)


async def test_a_body_that_does_not_match_its_encoding_is_400(client: Client) -> None:
    resp = await client.post(
        "/api/admin/api-tokens",
        data=b"not gzip at all",
        headers={**ADMIN, **JSON, "Content-Encoding": "gzip"},
    )
    await error_of(resp, 400, "ValidationError")


async def test_a_non_utf8_token_is_401(client: Client) -> None:
    reader, writer = await asyncio.open_connection(client.server.host, client.server.port)
    writer.write(
        b"GET /api/admin/api-tokens HTTP/1.1\r\nHost: x\r\nAuthorization: \xff\xfe\r\n"
        b"Connection: close\r\n\r\n"
    )
    await writer.drain()
    answer = await reader.read()
    writer.close()
    assert answer.startswith(b"HTTP/1.1 401")
    assert b'"name":"AuthenticationRequired"' in answer


@pytest.mark.parametrize("path", ["/api/adminx", "/api/administrator"])
async def test_only_the_admin_prefix_itself_needs_a_token(client: Client, path: str) -> None:
    await error_of(await client.get(path), 404, "NotFoundError")


async def test_concurrent_deletes_of_one_token(client: Client, app: web.Application) -> None:
    token_id = (await api_token(client, name="t-client"))["id"]
    path = f"/api/admin/api-tokens/{token_id}"
    responses = await asyncio.gather(*(client.delete(path, headers=ADMIN) for _ in range(10)))
    assert sorted(r.status for r in responses) == [200] + [404] * 9
    async with app[POOL].acquire() as conn:
        count = await conn.fetchval("SELECT count(*) FROM events WHERE type = 'ApiTokenDeleted'")
    assert count == 1


async def test_token_ids_are_ascii_digits(client: Client) -> None:
    token_id = (await api_token(client, name="t-client"))["id"]
    arabic = "".join(chr(0x0660 + int(d)) for d in str(token_id))
    resp = await client.delete(f"/api/admin/api-tokens/{arabic}", headers=ADMIN)
    await error_of(resp, 404, "NotFoundError")


@pytest.mark.parametrize(
    ("secret", "hint"),
    [
        ("*:*.correct.horse.battery.staple", "*:*.********"),
        ("*:*.abcd", "*:*.********"),
        ("*:*." + "f" * 64, "*:*.ffff********"),
        ("default:development." + "a" * 64, "default:development.aaaa********"),
        ("user:" + "b" * 64, "user:bbbb********"),
    ],
)
def test_hints_never_reveal_a_chosen_secret(secret: str, hint: str) -> None:
    assert auth.secret_hint(secret) == hint


@pytest.mark.parametrize("path", ["/health", "/ready"])
async def test_probes_answer_head(client: Client, path: str) -> None:
    resp = await client.head(path)
    assert resp.status == 200


async def test_when_stopping_pipelined_requests_are_all_answered_the_last_closing(
    client: Client, app: web.Application
) -> None:
    app[LIFECYCLE].draining = True
    one = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
    answer = await raw_exchange(client, one * 3)
    heads = [part.split(b"\r\n\r\n")[0] for part in answer.split(b"HTTP/1.1 ")[1:]]
    assert [h.startswith(b"200 OK") for h in heads] == [True, True, True]
    assert [b"Connection: close" in h for h in heads] == [False, False, True]


async def raw_exchange(client: Client, request: bytes) -> bytes:
    """Send bytes as they are and read the whole answer (the server closes after it)."""
    reader, writer = await asyncio.open_connection(client.server.host, client.server.port)
    writer.write(request)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    return answer


def error_of_raw(answer: bytes, status: int, name: str) -> str:
    head, _, body = answer.partition(b"\r\n\r\n")
    # aiohttp answers a request it could not parse as HTTP/1.0, which closes after the answer.
    assert head.startswith((f"HTTP/1.0 {status} ".encode(), f"HTTP/1.1 {status} ".encode()))
    assert b"Content-Type: application/json" in head
    assert head.startswith(b"HTTP/1.0") or b"Connection: close" in head
    return error_body(json.loads(body), name)


OVERSIZED = "*:*.oversized-" + "s" * 9000


@pytest.mark.parametrize(
    ("request_bytes", "status", "name", "message"),
    [
        (
            f"GET /api/admin/api-tokens HTTP/1.1\r\nHost: x\r\nAuthorization: {OVERSIZED}\r\n\r\n",
            431,
            "RequestHeaderFieldsTooLarge",
            "The request line or a header is longer than 8190 bytes",
        ),
        (
            f"GET /{'oversized' * 1000} HTTP/1.1\r\nHost: x\r\n\r\n",
            431,
            "RequestHeaderFieldsTooLarge",
            "The request line or a header is longer than 8190 bytes",
        ),
        (
            (
                "GET /health HTTP/1.1\r\nHost: x\r\nAuthorization: *:*.oversized\r\n"
                "Content-Length: oversized\r\n\r\n"
            ),
            400,
            "BadRequest",
            "The request is not valid HTTP/1.1 (",
        ),
        (
            "OVERSIZED\x01 / HTTP/1.1\r\n\r\n",
            400,
            "BadRequest",
            "The request is not valid HTTP/1.1 (",
        ),
        (
            (
                "POST /api/admin/api-tokens HTTP/1.1\r\nHost: x\r\n"
                "Authorization: *:*.oversized\r\nTransfer-Encoding: chunked\r\n\r\n"
                "zz-oversized\r\n"
            ),
            400,
            "BadRequest",
            "The request is not valid HTTP/1.1 (",
        ),
    ],
    ids=["header", "request-line", "content-length", "method", "chunk-size"],
)
async def test_requests_the_http_parser_refuses_get_a_json_error_that_quotes_nothing(
    client: Client,
    capfd: pytest.CaptureFixture[str],
    *,
    request_bytes: str,
    status: int,
    name: str,
    message: str,
) -> None:
    logs = io.StringIO()
    configure_logging("json", "info", logs)
    answer = await raw_exchange(client, request_bytes.encode())
    assert error_of_raw(answer, status, name).startswith(message)
    assert b"oversized" not in answer.lower()
    lines = [json.loads(x) for x in logs.getvalue().splitlines()]
    requests = [x for x in lines if x["event"] == "request"]
    assert [(x["status"], x["error"]) for x in requests] == [(status, name)]
    body_id = json.loads(answer.partition(b"\r\n\r\n")[2])["id"]
    assert requests[0]["error_id"] == body_id
    uuid.UUID(requests[0]["request_id"])
    assert "oversized" not in logs.getvalue().lower() + capfd.readouterr().err.lower()


async def test_api_tokens_may_be_deleted_by_secret_which_is_not_logged(
    app: web.Application, aiohttp_client: AiohttpClient
) -> None:
    logs = io.StringIO()
    configure_logging("json", "info", logs)
    client = await aiohttp_client(app)
    created = await api_token(client, name="t-client")
    secret = created["secret"]
    resp = await client.delete(f"/api/admin/api-tokens/{secret}", headers=ADMIN)
    assert resp.status == 200
    await error_of(
        await client.get("/api/admin/projects", headers={"Authorization": secret}),
        401,
        "AuthenticationRequired",
    )
    resp = await client.delete(f"/api/admin/api-tokens/{secret}", headers=ADMIN)
    assert await error_of(resp, 404, "NotFoundError") == "No API token found"
    assert secret not in logs.getvalue()
    paths = [json.loads(x)["path"] for x in logs.getvalue().splitlines() if '"request"' in x]
    assert "/api/admin/api-tokens/*:development.********" in paths


async def test_token_projects_are_deduplicated_and_a_wildcard_means_all(client: Client) -> None:
    for projects, expected, prefix in (
        (["default", "default"], ["default"], "default:development."),
        (["*", "default"], ["*"], "*:development."),
    ):
        body = {"tokenName": "p", "type": "client", "projects": projects}
        created = await (
            await client.post("/api/admin/api-tokens", json=body, headers=ADMIN)
        ).json()
        assert created["projects"] == expected
        assert created["secret"].startswith(prefix)


async def test_a_chosen_admin_secret_shows_nothing_in_its_hint(dsn: str) -> None:
    chosen = "*:*.some-long-secret-value-1234567890"
    conn = await connections.connect(dsn)
    try:
        await bootstrap.seed(work(), conn, (chosen,))
        hints = [r["secret_hint"] for r in await conn.fetch("SELECT secret_hint FROM api_tokens")]
        generated = await bootstrap.seed(work(), conn, ())
    finally:
        await conn.close()
    assert hints == ["*:*.********"]
    assert generated is None  # an admin token exists: nothing generated
    assert auth.secret_hint("*:*." + "ab12" + "0" * 60) == "*:*.ab12********"


async def test_an_unknown_expectation_is_ignored_not_a_plain_text_417(client: Client) -> None:
    """aiohttp answers `Expect: <anything but 100-continue>` with a plain-text 417 before any
    middleware (no JSON body, no request id, no log line); the request is served instead."""
    resp = await client.get("/api/admin/projects", headers={**ADMIN, "Expect": "bogus"})
    assert resp.status == 200
    assert "X-Request-Id" in resp.headers
    resp = await client.post(
        "/api/admin/projects", headers={**ADMIN, "Expect": "bogus"}, data=b"{}"
    )
    await error_of(resp, 415, "ContentTypeerror")


async def test_expect_100_continue_still_gets_its_interim_answer(client: Client) -> None:
    body = {"id": "continued", "name": "Continued"}
    resp = await client.post("/api/admin/projects", json=body, headers=ADMIN, expect100=True)
    assert resp.status == 201
