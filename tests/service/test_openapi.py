"""The OpenAPI document (GET /docs/openapi.json) and its page (GET /docs/openapi/).

Every answer the rest of the suite gets is also checked against the document
(tests/conformance.py); the page in a real browser is tests/browser/test_page.py."""

from __future__ import annotations

import gzip
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import jsonschema_rs
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openapi_spec_validator import validate

from service import auth, openapi
from service.app import ROUTES, VERSION, create_app
from service.appkeys import ROUTE_TABLE
from service.docs import assets
from service.errors import ValidationError
from service.http.answers import json_response
from service.http.instants import DAY_OR_TIME_PATTERN, INSTANT_PATTERN, parse_instant
from service.http.requests import query_param, read_json, takes_gzip
from service.http.routes import Param, Route
from service.names import validate_name
from service.openapi import openapi_path
from service.projects.commands import CreateProject
from tests.factories import ADMIN, error

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    from service.settings import Settings

    Client = TestClient[Any, Any]

DOCUMENT = "/docs/openapi.json"
PAGE = "/docs/openapi/"


async def served(client: Client) -> dict[str, Any]:
    response = await client.get(DOCUMENT)
    assert response.status == 200
    assert response.content_type == "application/json"
    return msgspec.json.decode(await response.read())  # type: ignore[no-any-return]


async def test_the_document_is_valid_openapi_3_1(client: Client) -> None:
    document = await served(client)
    assert document["openapi"] == "3.1.0"
    assert document["info"]["version"] == VERSION
    validate(document)  # openapi-spec-validator: the 3.1 schema, refs, unique operation ids


async def test_every_route_has_an_operation_and_every_operation_a_route(
    client: Client, app: web.Application
) -> None:
    document = await served(client)
    operations = {
        (method.upper(), path) for path, methods in document["paths"].items() for method in methods
    }
    routes = {
        (route.method, route.resource.canonical)
        for route in app.router.routes()
        if route.resource is not None
    }
    # Every GET but an event stream's answers HEAD too, undocumented as GET's twin.
    heads = {(m, p) for m, p in routes if m == "HEAD"} - operations
    assert heads == {
        ("HEAD", p)
        for m, p in operations
        if m == "GET" and ("HEAD", p) not in operations and p != "/api/client/streaming"
    }
    assert routes - heads == operations
    assert len(operations) == len(ROUTES)


async def test_each_operation_says_who_may_call_it(client: Client) -> None:
    document = await served(client)
    schemes = document["components"]["securitySchemes"]
    assert schemes["apiKey"] == {
        "type": "apiKey",
        "in": "header",
        "name": "Authorization",
        "description": schemes["apiKey"]["description"],
    }
    assert schemes["session"]["in"] == "cookie"
    assert schemes["session"]["name"] == auth.SESSION_COOKIE
    for route in ROUTES:
        operation = document["paths"][openapi_path(route.path)][route.method.lower()]
        assert operation["x-permission"] == route.permission
        assert route.permission in operation["description"] or route.permission in (
            auth.PUBLIC,
            auth.OWN_ACCOUNT,
        )
        if route.permission == auth.PUBLIC:
            assert operation["security"] == []
            assert "AuthenticationRequired" not in str(operation["responses"])
        else:
            assert operation["security"] == [{"apiKey": []}, {"session": []}]
            assert {"401", "403"} <= set(operation["responses"])


async def test_each_operation_documents_what_it_reads_and_answers(client: Client) -> None:
    document = await served(client)
    error_ref = {"$ref": "#/components/schemas/Error"}
    for route in ROUTES:
        operation = document["paths"][openapi_path(route.path)][route.method.lower()]
        path_names = re.findall(r"{(\w+)}", openapi_path(route.path))
        parameters = {(p["in"], p["name"]) for p in operation.get("parameters", [])}
        assert parameters == {("path", n) for n in path_names} | {
            ("query", p.name) for p in route.query
        } | ({("query", "at")} if route.past else set())
        assert ("requestBody" in operation) == (route.body is not None)
        statuses = {int(s) for s in operation["responses"]}
        assert set(route.ok) <= statuses
        assert 503 in statuses  # the database can always be down
        for kind in openapi.error_kinds(route):
            answer = operation["responses"][str(kind.status)]
            # The admin API's 401 may carry Unleash's sign-in hints for its web UI.
            hints = route.path.startswith("/api/admin/") and kind.status == 401
            ref = {"$ref": "#/components/schemas/SignInError"} if hints else error_ref
            assert answer["content"]["application/json"]["schema"] == ref
            assert kind.name in answer["description"]
        assert {400, 408, 431} <= statuses  # before routing: a bad query, a slow or long head
        if route.body is not None:
            assert {413, 415} <= statuses


async def test_a_request_line_too_long_is_a_431_every_operation_documents(
    client: Client,
) -> None:
    """A query longer than 8190 bytes (schemathesis, make fuzz, sends them) gets the parser's
    431, which every operation documents."""
    response = await client.get(f"/api/admin/search/events?type=IS:{'x' * 9000}", headers=ADMIN)
    await error(response, 431, "RequestHeaderFieldsTooLarge")
    for methods in (await served(client))["paths"].values():
        for operation in methods.values():
            answer = operation["responses"]["431"]
            assert answer["content"]["application/json"]["schema"] == {
                "$ref": "#/components/schemas/Error"
            }


async def test_an_empty_whole_number_parameter_is_its_default_and_the_document_says_so(
    client: Client,
) -> None:
    """An empty whole number (`?offset=`, `?before=`: schemathesis, make fuzz, sends them) is
    the parameter's default, as http.int_param reads it, and the document takes it too."""
    document = await served(client)
    numbers = 0
    for path, methods in document["paths"].items():
        for operation in methods.values():
            for parameter in operation.get("parameters", []):
                validator = jsonschema_rs.validator_for(parameter["schema"])
                if validator.is_valid(7) and parameter["in"] == "query":
                    numbers += 1
                    assert validator.is_valid(""), (path, parameter["name"])
                    assert not validator.is_valid("x"), (path, parameter["name"])
                    concrete = re.sub(r"\{[^}]+\}", "x", path)  # a flag named `x`
                    response = await client.get(f"{concrete}?{parameter['name']}=", headers=ADMIN)
                    plain = await client.get(concrete, headers=ADMIN)
                    assert (response.status, _without_id(await response.json())) == (
                        plain.status,
                        _without_id(await plain.json()),
                    )
    # limit and offset of the three searches (users, events, flags) and of an integration's
    # deliveries, before and after of the events', a flag's hoursBack
    assert numbers == 11


def _without_id(body: Any) -> Any:
    """An answer without an error's id (each error has its own)."""
    return {k: v for k, v in body.items() if k != "id"} if isinstance(body, dict) else body


async def test_the_error_schema_is_id_name_message(client: Client) -> None:
    schema = (await served(client))["components"]["schemas"]["Error"]
    assert schema["required"] == ["id", "name", "message"]
    assert set(schema["properties"]) == {"id", "name", "message", "details", "permissions"}


async def test_request_limits_come_from_the_command_structs(client: Client) -> None:
    """Not written by hand: the document says what msgspec enforces."""
    schemas = (await served(client))["components"]["schemas"]
    name = schemas["CreateFeature"]["properties"]["name"]
    assert name["type"] == "string"
    assert schemas["CreateFeature"]["required"] == ["name"]
    variants = schemas["SegmentBody"]["properties"]
    assert "constraints" in variants
    # Two Structs named alike (a request's and an answer's) keep apart.
    assert {"Variant", "VariantRequest", "Tag", "AuditTag"} <= set(schemas)


async def test_every_request_struct_shows_a_valid_example(client: Client) -> None:
    """The examples phase of the fuzzing starts from these; the document is only made when
    each one decodes into its Struct."""
    paths = (await served(client))["paths"]
    for route in ROUTES:
        if route.body is None:
            continue
        content = paths[openapi_path(route.path)][route.method.lower()]["requestBody"]["content"]
        media = content["application/json"]
        # A Struct's example, or a bare list's (PUT .../variants) in its schema.
        example = (
            media["example"] if isinstance(route.body, type) else media["schema"]["examples"][0]
        )
        assert msgspec.convert(example, route.body) is not None
    parameters = paths["/api/admin/projects/{projectId}/features"]["get"]["parameters"]
    assert parameters[0] == {
        "name": "projectId",
        "in": "path",
        "required": True,
        "schema": {"type": "string"},
        "example": "default",
    }


async def test_create_routes_link_to_the_route_that_reads_what_they_made(client: Client) -> None:
    paths = (await served(client))["paths"]
    links = paths["/api/admin/user-admin"]["post"]["responses"]["201"]["links"]
    assert links == {"user": {"operationId": "getUser", "parameters": {"id": "$response.body#/id"}}}
    ids = {op["operationId"] for methods in paths.values() for op in methods.values()}
    for methods in paths.values():
        for operation in methods.values():
            for answer in operation["responses"].values():
                for link in answer.get("links", {}).values():
                    assert link["operationId"] in ids


async def test_a_handler_that_reads_what_its_route_does_not_declare_fails(
    settings: Settings, dsn: str, aiohttp_client: Any
) -> None:
    """The document cannot drift from the code: an undeclared query parameter or body is an
    error in every test that reaches the handler."""

    async def reads_q(request: web.Request) -> web.Response:
        return json_response({"q": query_param(request, "q")})

    async def reads_a_body(request: web.Request) -> web.Response:
        await read_json(request, dict)
        return json_response({})

    app = create_app(settings, dsn)
    for route in (
        Route("GET", "/declared", reads_q, auth.PUBLIC, query=(Param("q", str, "q"),)),
        Route("GET", "/undeclared", reads_q, auth.PUBLIC),
        Route("POST", "/body", reads_a_body, auth.PUBLIC, body=list),
    ):
        app[ROUTE_TABLE][app.router.add_route(route.method, route.path, route.handler)] = route
    client = await aiohttp_client(app)
    assert (await client.get("/declared?q=x")).status == 200
    response = await client.get("/undeclared?q=x")
    assert response.status == 500
    response = await client.post("/body", json={})
    assert response.status == 500
    assert (await response.json())["name"] == "InternalError"


async def test_the_page_is_swagger_ui_from_the_wheel_and_nothing_from_elsewhere(
    client: Client,
) -> None:
    response = await client.get(PAGE)
    assert response.status == 200
    assert response.content_type == "text/html"
    policy = response.headers["Content-Security-Policy"]
    assert "default-src 'none'" in policy
    assert "script-src 'self';" in policy
    assert "connect-src 'self'" in policy
    html = await response.text()
    sources = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert sources
    assert all("//" not in s and not s.startswith("/") for s in sources)  # all relative, here
    for source in sources:
        asset = await client.get(PAGE + source)
        assert asset.status == 200, source
        assert await asset.read()
    bundle = await client.get(PAGE + "swagger-ui-bundle.js")
    assert await bundle.read() == (assets() / "swagger-ui-bundle.js").read_bytes()
    start = await (await client.get(PAGE + "start.js")).text()
    assert "validatorUrl: null" in start  # Swagger UI would otherwise ask validator.swagger.io
    assert 'url: "../openapi.json"' in start


@pytest.mark.parametrize("name", ["index.html", "..%2Fapp.py", "swagger-editor.js", "x"])
async def test_only_the_page_files_are_served(client: Client, name: str) -> None:
    response = await client.get(PAGE + name)
    assert response.status == 404
    body = await response.json()
    assert set(body) == {"id", "name", "message"}


async def test_the_page_address_without_its_slash_redirects(client: Client) -> None:
    response = await client.get(PAGE.rstrip("/"), allow_redirects=False)
    assert response.status == 302
    assert response.headers["Location"] == PAGE


async def test_the_document_and_page_need_no_token(client: Client) -> None:
    assert (await client.get(DOCUMENT)).status == 200
    assert (await client.get(DOCUMENT, headers=ADMIN)).status == 200
    assert (await client.get(PAGE)).status == 200


@pytest.mark.parametrize(
    ("path", "name", "schema"),
    [
        ("/api/admin/user-admin/{id}", "id", {"type": "integer", "minimum": 1}),
        ("/api/admin/segments/{id}", "id", {"type": "integer", "minimum": 1}),
        (
            "/api/admin/service-account/{id}/token/{tokenId}",
            "tokenId",
            {"type": "integer", "minimum": 1},
        ),
        ("/api/admin/api-tokens/{token}", "token", {"type": "string"}),  # an id, a secret, a name
        ("/api/admin/projects/{projectId}", "projectId", {"type": "string"}),
    ],
)
async def test_path_parameters_have_their_types(
    client: Client, path: str, name: str, schema: dict[str, Any]
) -> None:
    """Numbers where ids are numbers, so generated clients and the fuzzer send real ids."""
    methods = (await served(client))["paths"][path]
    for operation in methods.values():
        found = {p["name"]: p["schema"] for p in operation["parameters"]}
        assert found[name] == schema


async def test_the_page_files_are_an_enumeration(client: Client) -> None:
    operation = (await served(client))["paths"]["/docs/openapi/{asset}"]["get"]
    assert set(operation["parameters"][0]["schema"]["enum"]) == {
        "swagger-ui-bundle.js",
        "swagger-ui.css",
        "start.js",
        "favicon-16x16.png",
        "favicon-32x32.png",
    }


@given(st.text(alphabet=st.sampled_from("aZ09-_.!~*'() /:%é"), max_size=110))
@settings(max_examples=300, deadline=None)
def test_the_name_rule_in_the_document_is_the_one_the_service_applies(name: str) -> None:
    """CreateProject.id, CreateFeature.name, CreateEnvironment.name, CloneFeature.name: the
    JSON Schema says what validate_name refuses (it still checks, with Unleash's messages)."""
    schema = msgspec.json.schema(CreateProject)["$defs"]["CreateProject"]["properties"]["id"]
    described = (
        schema["minLength"] <= len(name) <= schema["maxLength"]
        and re.search(schema["pattern"], name) is not None
        and name not in schema["not"]["enum"]
    )
    try:
        validate_name(name)
        valid = True
    except ValidationError:
        valid = False
    assert described == valid


@given(st.datetimes(timezones=st.just(UTC)), st.integers(0, 10**18 - 1))
@settings(max_examples=200, deadline=None)
def test_every_instant_the_service_reads_matches_the_documented_pattern(
    moment: datetime, position: int
) -> None:
    for raw in (moment.isoformat(), moment.isoformat().replace("+00:00", "Z"), str(position)):
        parse_instant(raw, "at")
        assert re.fullmatch(INSTANT_PATTERN, raw), raw
        assert re.fullmatch(DAY_OR_TIME_PATTERN, f"IS:{raw}") or raw.isdigit()
    assert re.fullmatch(DAY_OR_TIME_PATTERN, f"IS:{moment.date().isoformat()}")


async def test_the_page_files_are_whole_gzipped_when_taken_and_revalidated(client: Client) -> None:
    """No ranges, no conditional answers (412, 416, 304 would be undocumented statuses of the
    file server); gzip for a client that takes it; no-cache, so an upgrade never mixes versions."""
    plain = await client.get(PAGE + "swagger-ui-bundle.js", headers={"Accept-Encoding": "identity"})
    whole = await plain.read()
    assert plain.headers.get("Content-Encoding") is None
    assert whole == (assets() / "swagger-ui-bundle.js").read_bytes()
    for headers in (
        {"Range": "bytes=abc"},
        {"Range": "bytes=0-9"},
        {"Range": "bytes=9999999-"},
        {"If-Match": '"nope"'},
        {"If-Unmodified-Since": "Mon, 01 Jan 2001 00:00:00 GMT"},
        {"If-Modified-Since": "Mon, 01 Jan 2001 00:00:00 GMT"},
    ):
        resp = await client.get(PAGE + "swagger-ui-bundle.js", headers=headers)
        assert resp.status == 200, headers
        assert await resp.read() == whole
    zipped = await client.get(
        PAGE + "swagger-ui-bundle.js", headers={"Accept-Encoding": "gzip"}, auto_decompress=False
    )
    assert zipped.headers["Content-Encoding"] == "gzip"
    assert zipped.headers["Cache-Control"] == "no-cache"
    assert zipped.headers["Vary"] == "Accept-Encoding"
    assert gzip.decompress(await zipped.read()) == whole
    document = await client.get(
        DOCUMENT, headers={"Accept-Encoding": "gzip"}, auto_decompress=False
    )
    assert document.headers["Content-Encoding"] == "gzip"
    assert document.headers["X-Content-Type-Options"] == "nosniff"
    icon = await client.get(PAGE + "favicon-32x32.png", headers={"Accept-Encoding": "gzip"})
    assert icon.content_type == "image/png"
    assert "Content-Encoding" not in icon.headers  # a PNG is compressed already


@pytest.mark.parametrize(
    ("field", "takes"),
    [
        (None, False),
        ("", False),
        ("gzip", True),
        ("GZIP", True),
        ("gzip, deflate, br", True),
        ("br;q=1.0, gzip;q=0.5", True),
        ("gzip;q=0", False),
        ("gzip; q=0.0", False),
        ("identity, gzip;q=0", False),
        ("gzipx", False),
        ("xgzip", False),
        ("*", True),
        ("*;q=0", False),
        ("*, gzip;q=0", False),
        ("gzip;q=abc", False),
    ],
)
def test_gzip_only_for_a_client_that_takes_it(field: str | None, takes: bool) -> None:
    assert takes_gzip(field) is takes
