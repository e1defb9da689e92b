"""Every answer the test suite gets checked against the OpenAPI document (service/openapi.py):
its status is documented for its route, and its body is what the document says for that
status (JSON validated against the schema; no body where none is documented). The `app`
fixture adds the middleware; what it finds fails the test at its end."""

from __future__ import annotations

import functools
import gzip
from typing import TYPE_CHECKING, Any

import jsonschema_rs
import msgspec
from aiohttp import web

from service.appkeys import OPENAPI, ROUTE_TABLE
from service.openapi import openapi_path

if TYPE_CHECKING:
    from service.http.routes import Handler

VIOLATIONS = web.AppKey("openapi_violations", list[str])


@functools.cache
def _decoded(document: bytes) -> Any:
    return msgspec.json.decode(document)


@functools.cache
def _validator(document: bytes, pointer: str) -> Any:
    """A validator of the schema at this place of the document (its refs resolve there)."""
    whole = _decoded(document)
    schema = whole
    for part in pointer.split("/"):
        schema = schema[part.replace("~1", "/")]
    return jsonschema_rs.validator_for({**schema, "components": whole["components"]})


def _check(request: web.Request, response: web.StreamResponse) -> str | None:  # noqa: PLR0911
    route = request.app[ROUTE_TABLE].get(request.match_info.route)
    if route is None:  # no route: aiohttp's 404 or 405
        return None
    document = request.app[OPENAPI]
    documented = openapi_path(route.path)
    path = documented.replace("/", "~1")
    where = f"{route.method} {documented} -> {response.status}"
    operation = _decoded(document)["paths"][documented][route.method.lower()]
    answer = operation["responses"].get(str(response.status))
    if answer is None:
        return f"{where}: status not documented"
    if not isinstance(response, web.Response) or request.method == "HEAD":
        return None
    body = response.body
    content = answer.get("content")
    if content is None:
        return f"{where}: a body where none is documented" if body else None
    media_type = response.content_type
    if media_type not in content:
        return f"{where}: {media_type} is not among {sorted(content)}"
    if media_type != "application/json":
        return None
    assert isinstance(body, bytes)
    if response.headers.get("Content-Encoding") == "gzip":
        body = gzip.decompress(body)
    answer_at = ("paths", path, route.method.lower(), "responses", str(response.status))
    pointer = "/".join((*answer_at, "content", "application~1json", "schema"))
    errors = [str(e) for e in _validator(document, pointer).iter_errors(msgspec.json.decode(body))]
    return f"{where}: {'; '.join(errors[:3])}" if errors else None


@web.middleware
async def conformance(request: web.Request, handler: Handler) -> web.StreamResponse:
    response = await handler(request)
    problem = _check(request, response)
    if problem is not None:
        request.app[VIOLATIONS].append(problem[:500])
    return response


def install(app: web.Application) -> None:
    app[VIOLATIONS] = []
    app.middlewares.insert(0, conformance)
