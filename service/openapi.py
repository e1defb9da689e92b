"""The OpenAPI 3.1 document of the service, made at start from the route table
(service/http/routes.py, Route) and the request and response Structs (msgspec's JSON Schema):
never written by hand.

Every route is one operation: its path and query parameters, its request body, each answer it
gives with its body's schema, the errors its kind of route can give (below) and those it
declares, who may call it (the security schemes and `x-permission`), and the links from what
it creates to the route that reads it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal

import msgspec

from service import auth, errors
from service.http.instants import INSTANT_PATTERN
from service.http.middlewares import ADMIN_PREFIX
from service.http.routes import PAST, Content, EventStream, Param, Route

if TYPE_CHECKING:
    from service.http.routes import Handler

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

OPENAPI_VERSION: Final = "3.1.0"
REF: Final = "#/components/schemas/{name}"
# `{name}`, or `{name:regex}` (aiohttp's form; the regex holds no braces here).
_PATH_PARAMETER = re.compile(r"{(\w+)(?::[^{}]*)?}")


class ErrorDetail(msgspec.Struct, frozen=True):
    message: str
    # A weak password's (400 OwaspValidationError): every strength rule it breaks.
    validationErrors: list[str] | msgspec.UnsetType = msgspec.UNSET  # noqa: N815 - Unleash's name
    # An import refused (400 ValidationError): what one error concerns.
    affectedItems: list[str] | msgspec.UnsetType = msgspec.UNSET  # noqa: N815 - Unleash's name


class Error(msgspec.Struct, frozen=True):
    """Every error answer: an id that names the log line, the error's name and a message; a
    409 also Unleash's `details` (the message again), which its UI shows, a weak password's 400
    the rules it breaks there, which the UI's strength meter reads, an import's 400 each of its
    errors, and an import's 403 the permissions it lacks."""

    id: str
    name: str
    message: str
    details: list[ErrorDetail] | msgspec.UnsetType = msgspec.UNSET
    permissions: list[str] | msgspec.UnsetType = msgspec.UNSET


class SignInError(msgspec.Struct, frozen=True):
    """A 401 of the admin API to a request without an Authorization header (a browser's):
    the error, and Unleash's sign-in hints that its UI reads to offer its sign-in form."""

    id: str
    name: str
    message: str
    type: Literal["password"] | msgspec.UnsetType = msgspec.UNSET
    path: str | msgspec.UnsetType = msgspec.UNSET
    defaultHidden: bool | msgspec.UnsetType = msgspec.UNSET  # noqa: N815 - Unleash's name
    options: list[Any] | msgspec.UnsetType = msgspec.UNSET


# Who may call: an API token or personal access token in the Authorization header (as Unleash
# takes them, with or without `Bearer `), or the session cookie that sign-in sets.
SECURITY_SCHEMES: Final = {
    "apiKey": {
        "type": "apiKey",
        "in": "header",
        "name": "Authorization",
        "description": "An admin API token, or a personal access token (`user:...`).",
    },
    "session": {
        "type": "apiKey",
        "in": "cookie",
        "name": auth.SESSION_COOKIE,
        "description": "The session that `POST /auth/simple/login` starts.",
    },
}

# The operations are grouped by the module of their handler.
TAGS: Final = {
    "service.app": "Operations",
    "service.metrics": "Operations",
    "service.docs": "Documentation",
    "service.ui": "Web UI",
    "service.admin_ui": "Web UI",
    "service.users.handlers.preferences": "Web UI",
    "service.users.handlers.sessions": "Auth",
    "service.users.handlers.users": "Users",
    "service.users.handlers.search": "Users",
    "service.users.handlers.inactive": "Users",
    "service.users.handlers.tokens": "Personal access tokens",
    "service.users.handlers.service_accounts": "Service accounts",
    "service.api_tokens.handlers": "API tokens",
    "service.projects.handlers": "Projects",
    "service.features.handlers.flags": "Features",
    "service.features.handlers.clone": "Features",
    "service.features.handlers.strategies": "Strategies",
    "service.features.handlers.tags": "Tags",
    "service.features.handlers.dependencies": "Dependencies",
    "service.features.handlers.segments": "Segments",
    "service.strategies.handlers": "Strategies",
    "service.context.handlers": "Context",
    "service.audit.handlers": "Events and audit",
    "service.client.handlers": "Client",
    "service.telemetry.handlers": "Client",
    "service.frontend.handlers": "Frontend API",
}

PAST_PARAMETER: Final = Param(
    PAST,
    Annotated[str, msgspec.Meta(pattern=INSTANT_PATTERN)],
    "The answer as it was at this instant of the log: an RFC 3339 time with its offset "
    "(`2026-11-24T14:02:00Z`) or a log position (the `id` of an event in the event log).",
)


# What every new install has (service/bootstrap.py): the examples of path parameters that name it.
PATH_EXAMPLES: Final = {"projectId": "default", "environment": "development"}


def operation_id(handler: Handler) -> str:
    """The handler's name in camelCase (`create_feature` -> `createFeature`)."""
    first, *rest = handler.__name__.split("_")
    return first + "".join(word.capitalize() for word in rest)


def _operation_id(route: Route) -> str:
    """A HEAD route shares its GET's handler: `headHealth` beside `health`."""
    name = operation_id(route.handler)
    return "head" + name[0].upper() + name[1:] if route.method == "HEAD" else name


def error_kinds(route: Route) -> list[type[errors.AppError]]:
    """The errors a route can give: those of its kind, then those it declares.

    - 400 always: a bad body or query parameter, or `?at=` on a route without past states;
    - 431 always: a request line (a long query) or a header longer than the parser reads;
    - 408 always: the request's head (or its body) did not arrive in time;
    - 413 and 415 when it reads a body;
    - 401 and 403 when it needs a principal (client and frontend tokens hold only their API's);
    - 404 when its path has parameters (what they name may not exist);
    - 503 always: the database can be unavailable, the service stopping.
    """
    kinds: list[type[errors.AppError]] = [
        errors.ValidationError,
        errors.RequestTimeout,
        errors.HeaderFieldsTooLarge,
    ]
    if route.permission != auth.PUBLIC:
        kinds += [errors.AuthenticationRequired, errors.NoAccess]
    if _PATH_PARAMETER.search(route.path):
        kinds.append(errors.NotFound)
    if route.body is not None:
        kinds += [errors.PayloadTooLarge, errors.ContentTypeError]
    kinds.append(errors.ServiceUnavailable)
    return kinds + [kind for kind in route.errors if kind not in kinds]


def document(routes: Sequence[Route], version: str) -> dict[str, Any]:
    """The whole document: one operation per route, the schemas they refer to."""
    types = sorted({t for route in routes for t in _types(route)}, key=lambda t: (repr(t), id(t)))
    schemas, components = msgspec.json.schema_components(types, ref_template=REF)
    for component in components.values():  # a docstring's line breaks and indents
        if "description" in component:
            component["description"] = " ".join(component["description"].split())
    schema_of = dict(zip(types, schemas, strict=True))
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        paths.setdefault(openapi_path(route.path), {})[route.method.lower()] = _operation(
            route, schema_of
        )
    ids = [op["operationId"] for methods in paths.values() for op in methods.values()]
    if len(set(ids)) != len(ids):
        msg = f"two operations have one operationId: {sorted(ids)}"
        raise ValueError(msg)
    renamed, names = _short_names(components)
    whole: dict[str, Any] = _rename(
        {
            "openapi": OPENAPI_VERSION,
            "info": {
                "title": "flagstore",
                "version": version,
                "description": (
                    "Unleash's admin API, event-sourced: every change is a stored event. "
                    "Each operation says the permission it needs (`x-permission`); ADMIN "
                    "holds every permission."
                ),
            },
            "paths": paths,
            "components": {"schemas": renamed, "securitySchemes": SECURITY_SCHEMES},
            "tags": [{"name": name} for name in dict.fromkeys(TAGS.values())],
        },
        names,
    )
    return whole


def _types(route: Route) -> Iterable[Any]:
    yield Error
    if _signs_in(route):
        yield SignInError
    if route.body is not None:
        yield route.body
    for param in route.query:
        yield param.schema
    yield from route.params.values()
    for body in route.ok.values():
        if isinstance(body, EventStream):
            yield body.data
        elif isinstance(body, tuple) and not isinstance(body, Content):
            yield from body  # any of these
        elif body is not None and not isinstance(body, Content):
            yield body
    if route.past:
        yield PAST_PARAMETER.schema


def _signs_in(route: Route) -> bool:
    """Its 401 may carry the sign-in hints (service/http/middlewares.py, authenticate)."""
    admin = route.path == ADMIN_PREFIX or route.path.startswith(ADMIN_PREFIX + "/")
    return admin and route.permission != auth.PUBLIC


def openapi_path(path: str) -> str:
    """A route's path as the document names it: `{id:\\d+}` is `{id}`."""
    return _PATH_PARAMETER.sub(lambda m: "{" + m[1] + "}", path)


def _operation(route: Route, schema_of: dict[Any, Any]) -> dict[str, Any]:
    handler = route.handler
    operation: dict[str, Any] = {
        "operationId": _operation_id(route),
        "tags": [TAGS.get(handler.__module__, handler.__module__)],
        "summary": _summary(handler),
        "description": _description(route, handler.__doc__ or ""),
        "x-permission": route.permission,
        "security": [] if route.permission == auth.PUBLIC else [{"apiKey": []}, {"session": []}],
        "parameters": _parameters(route, schema_of),
        "responses": _responses(route, schema_of),
    }
    if route.body is not None:
        content: dict[str, Any] = {"schema": schema_of[route.body]}
        example = getattr(route.body, "example", None)
        if example is not None:
            msgspec.convert(example, route.body)  # a valid request, or the service does not start
            content["example"] = example
        operation["requestBody"] = {"required": True, "content": {"application/json": content}}
    if not operation["parameters"]:
        del operation["parameters"]
    return operation


def _summary(handler: Handler) -> str:
    """The handler's name in words (`create_api_token` -> `Create API token`); what it does in
    more words is its docstring, the description."""
    words = [_WORDS.get(word, word) for word in handler.__name__.split("_")]
    return " ".join(words)[0].upper() + " ".join(words)[1:]


_WORDS: Final = {"api": "API", "openapi": "OpenAPI"}


def _description(route: Route, details: str) -> str:
    if route.permission == auth.PUBLIC:
        who = "Needs no authentication."
    elif route.permission == auth.OWN_ACCOUNT:
        who = "Needs a person: a session or their personal access token (no API token)."
    else:
        who = f"Needs the {route.permission} permission."
    paragraphs = [" ".join(p.split()) for p in details.split("\n\n")]
    return "\n\n".join(p for p in (*paragraphs, who) if p)


def _parameters(route: Route, schema_of: dict[Any, Any]) -> list[dict[str, Any]]:
    found = [
        {
            "name": name,
            "in": "path",
            "required": True,
            "schema": schema_of[route.params[name]] if name in route.params else {"type": "string"},
        }
        | ({"example": PATH_EXAMPLES[name]} if name in PATH_EXAMPLES else {})
        for name in _PATH_PARAMETER.findall(route.path)
    ]
    found += [
        {
            "name": param.name,
            "in": "query",
            "required": param.required,
            "description": param.description,
            "schema": _query_schema(schema_of[param.schema]),
        }
        for param in (*route.query, *((PAST_PARAMETER,) if route.past else ()))
    ]
    return found


def _query_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A whole-number query parameter given empty (`?offset=`) is its default (http.int_param,
    as an absent one): the document admits the empty string beside the number."""
    if schema.get("type") != "integer":
        return schema
    return {"anyOf": [schema, {"type": "string", "maxLength": 0}]}


def _responses(route: Route, schema_of: dict[Any, Any]) -> dict[str, Any]:
    responses: dict[str, Any] = {}
    for status, body in route.ok.items():
        if body is None:
            responses[str(status)] = {"description": _SUCCESS.get(status, "Done")}
        elif isinstance(body, EventStream):
            responses[str(status)] = {
                "description": body.description,
                "content": {"text/event-stream": {"schema": _event(body, schema_of)}},
            }
        elif isinstance(body, Content):
            responses[str(status)] = {
                "description": body.description,
                "content": {
                    kind: {"schema": {"type": "object" if kind == "application/json" else "string"}}
                    for kind in body.media_types
                },
            }
        else:
            schema = (
                {"anyOf": [schema_of[one] for one in body]}
                if isinstance(body, tuple)
                else schema_of[body]
            )
            responses[str(status)] = {
                "description": _SUCCESS.get(status, "Done"),
                "content": {"application/json": {"schema": schema}},
            }
    by_status: dict[int, list[type[errors.AppError]]] = {}
    for kind in error_kinds(route):
        by_status.setdefault(kind.status, []).append(kind)
    for status, kinds in sorted(by_status.items()):
        body = SignInError if status == 401 and _signs_in(route) else Error
        response: dict[str, Any] = {
            "description": "; ".join(_meaning(kind) for kind in kinds),
            "content": {"application/json": {"schema": schema_of[body]}},
        }
        if any(kind.retry_after is not None for kind in kinds) or status == 429:
            response["headers"] = {
                "Retry-After": {
                    "description": "Seconds to wait before trying again",
                    "schema": {"type": "integer"},
                }
            }
        responses[str(status)] = response
    if route.links:
        responses[str(min(route.ok))]["links"] = {
            name: {"operationId": operation_id(link.to), "parameters": dict(link.parameters)}
            for name, link in route.links.items()
        }
    return responses


def _event(stream: EventStream, schema_of: dict[Any, Any]) -> dict[str, Any]:
    """One server-sent event, as the fields a client reads from it: its name, its id and its
    data (JSON). OpenAPI 3.1 has no word for a stream of them; the `schema` of
    `text/event-stream` describing one event is how tools read it (schemathesis validates each
    event against it, and the data against `contentSchema`), and what 3.2 calls `itemSchema`."""
    return {
        "type": "object",
        "required": ["event", "id", "data"],
        "properties": {
            "event": {"type": "string", "enum": list(stream.events)},
            "id": {
                "type": "string",
                "pattern": "^[0-9]+$",
                "description": "The revision the event brings the client to (its Last-Event-ID)",
            },
            "data": {
                "type": "string",
                "contentMediaType": "application/json",
                "contentSchema": schema_of[stream.data],
            },
        },
        "additionalProperties": False,
    }


_SUCCESS: Final = {200: "OK", 201: "Created", 202: "Accepted", 204: "No content", 302: "Found"}


def _meaning(kind: type[errors.AppError]) -> str:
    doc = " ".join((kind.__doc__ or "").split())
    return f"{kind.name}: {doc}" if doc else kind.name


def _short_names(components: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """msgspec names a Struct whose name is taken twice by its module path
    (`service.features.commands.Variant`). The document says `Variant` for an answer's
    (`*.responses`), `VariantRequest` for a request's (`*.commands`), and puts the package
    first for any other (`service.audit.history.Tag`: `AuditTag`). The client API's Structs
    (what SDKs read) take `Client` first (`ClientFeature`)."""
    names: dict[str, str] = {}
    for name in components:
        if "." not in name:
            continue
        module, _, short = name.rpartition(".")
        if module.startswith("service.client."):
            names[name] = "Client" + short
        elif module.endswith(".responses"):
            names[name] = short
        elif module.endswith(".commands"):
            names[name] = short + "Request"
        else:
            names[name] = module.split(".")[1].capitalize() + short
    if len(set(names.values()) | (set(components) - set(names))) != len(components):
        msg = f"two schemas would share a name: {sorted(names.values())}"
        raise ValueError(msg)
    return {names.get(k, k): v for k, v in components.items()}, names


def _rename(value: Any, names: dict[str, str]) -> Any:
    if not names:
        return value
    if isinstance(value, dict):
        return {k: _rename(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_rename(v, names) for v in value]
    if isinstance(value, str) and value.startswith("#/components/schemas/"):
        name = value.removeprefix("#/components/schemas/")
        return REF.format(name=names.get(name, name))
    return value
