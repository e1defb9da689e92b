"""The route table's row type: a route, the permission it needs and what the OpenAPI document
says of it (service/openapi.py). A feature lists its routes in its `ROUTES`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Final, NamedTuple

import msgspec
from aiohttp import web

if TYPE_CHECKING:
    from service import errors

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


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
class EventStream:
    """Server-sent events (`text/event-stream`): the names the events take, and the Struct
    each event's `data` is, as JSON. The document describes one event (service/openapi.py)."""

    events: tuple[str, ...]
    data: Any
    description: str


@dataclass(frozen=True)
class Route:
    """One row of the route table: the route, the permission it needs (the only place that is
    declared), and what the OpenAPI document says of it (service/openapi.py): what it reads
    (path, query, body) and every answer it gives. The handler reads its body and its query
    parameters through service.http.requests (read_json, query_param), which check that they
    are the ones declared here, so the document cannot drift from the code."""

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
    past: bool = False  # True: `?at=` reads the state at a past instant (service/http/past.py)

    def reads(self, name: str) -> bool:
        return any(p.name == name for p in self.query) or (self.past and name == PAST)


PAST: Final = "at"  # the query parameter of routes that read a past state
# The path parameter `id` of the routes whose ids are numbers (users, accounts, segments, tokens).
NUMBERED: Final[Mapping[str, Any]] = {"id": Annotated[int, msgspec.Meta(ge=1)]}


MAX_DIGITS: Final = 9  # a whole-number query parameter (limit, offset) has at most this many
# The types of such parameters in the OpenAPI document (int_param reads them).
Count = Annotated[int, msgspec.Meta(ge=0, le=10**MAX_DIGITS - 1)]
Positive = Annotated[int, msgspec.Meta(ge=1, le=10**MAX_DIGITS - 1)]
