"""HTTP handlers of the client API's flags: /api/client/features (polled, with ETags) and
/api/client/streaming (server-sent events)."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from aiohttp import web

from eventlog import connections
from service import auth, errors
from service.appkeys import CLIENT_FEED, LIFECYCLE, POOL, RESOLVER, WORK
from service.client import model as m
from service.client.responses import Delta, Feature, Features
from service.http.answers import json_response
from service.http.requests import etag_matches, principal, query_param, query_values, takes_gzip
from service.http.routes import EventStream, Param, Route

if TYPE_CHECKING:
    from service.client.feed import Feed

# The Unleash-Client-Spec version from which an SDK evaluates segments itself (older ones get
# each segment's constraints inlined into the strategies that use it), as in Unleash.
SPEC_HEADER = "Unleash-Client-Spec"
SEGMENTS_SPEC = (4, 2, 0)
_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$"
)
DEFAULT_ENVIRONMENT = "default"  # what a token for every environment reads, as in Unleash
HEARTBEAT_SECONDS = 15.0  # a comment line this often keeps idle streams (and proxies) open
LOOK_SECONDS = 1.0  # a stream notices the service draining within this


@functools.lru_cache(maxsize=256)  # an SDK sends the same header with every poll
def supports_segments(spec: str | None) -> bool:
    """Whether the SDK's declared client spec evaluates segments (Unleash's rule: 4.2.0 or
    later; no header: no). A value that is not a version is a 400, as in Unleash."""
    if not spec:
        return False
    found = _SEMVER.match(spec)
    if found is None:
        kind = "prefix" if not spec[:1].isdigit() else "SemVer"
        raise errors.ValidationError(f'Invalid {kind} in the {SPEC_HEADER} header: "{spec}".')
    version = tuple(int(part) for part in found.groups()[:3])
    prerelease = found.group(4) is not None  # 4.2.0-beta.1 comes before 4.2.0 (semver)
    return version > SEGMENTS_SPEC or (version == SEGMENTS_SPEC and not prerelease)


def scope_of(request: web.Request) -> m.Scope:
    """The token's environment and projects, with the query's filters (a token for some
    projects sees those only, whatever the query asks; one for every environment may name
    one with `environment`)."""
    who = principal(request)
    environment = who.environment
    if environment == "*":
        environment = query_param(request, "environment") or DEFAULT_ENVIRONMENT
    token_projects = None if "*" in who.projects else frozenset(who.projects)
    asked = frozenset(query_values(request, "project")) - {"*"} or None
    projects = token_projects if token_projects is not None else asked
    tags: set[tuple[str, str]] = set()
    for value in query_values(request, "tag"):
        kind, sep, name = value.partition(":")
        if not sep or not kind or not name:
            raise errors.ValidationError(f'"tag" must be type:value, not "{value}" - at `tag`')
        tags.add((kind, name))
    return m.Scope(
        environment,
        projects,
        name_prefix=query_param(request, "namePrefix") or None,
        tags=frozenset(tags) or None,
        inline_segments=not supports_segments(request.headers.get(SPEC_HEADER)),
    )


async def _model(request: web.Request) -> tuple[Feed, m.Model]:
    feed = request.app[CLIENT_FEED]
    try:
        model = await feed.fresh(request.app[WORK].after.position)
    except TimeoutError:
        raise errors.ServiceUnavailable("The flags are not loaded yet; try again shortly") from None
    return feed, model


async def client_features(request: web.Request) -> web.Response:
    """Every flag the token may see, as its SDKs evaluate them. With the ETag of an earlier
    answer in If-None-Match, 304 while nothing changed (an idle SDK costs one lookup)."""
    scope = scope_of(request)
    feed, model = await _model(request)
    etag = model.etag(scope)
    headers = {"ETag": etag, "Cache-Control": "no-cache", "Vary": "Accept-Encoding"}
    if etag_matches(request.headers.get("If-None-Match"), etag):
        return web.Response(status=304, headers=headers)
    gzipped = takes_gzip(request.headers.get("Accept-Encoding"))
    if gzipped:
        headers["Content-Encoding"] = "gzip"
    body = feed.body(model, scope, gzipped=gzipped)
    return web.Response(body=body, content_type="application/json", headers=headers)


async def client_feature(request: web.Request) -> web.Response:
    """One flag, exactly as in the list (404 when the token may not see it)."""
    name = request.match_info["name"]
    scope = scope_of(request)
    _, model = await _model(request)
    flag = model.flags.get(name)
    if flag is None or not scope.shows(flag):
        raise errors.NotFound(f"Could not find feature flag {name}")
    etag = model.etag(scope, name)
    headers = {"ETag": etag, "Cache-Control": "no-cache"}
    if etag_matches(request.headers.get("If-None-Match"), etag):
        return web.Response(status=304, headers=headers)
    response = json_response(model.feature(flag, scope))
    response.headers.update(headers)
    return response


async def client_streaming(request: web.Request) -> web.StreamResponse:
    """Server-sent events, as Unleash's streaming SDKs read them: `unleash-connected` first
    (every flag, or what changed since the Last-Event-ID a reconnecting client sends), then
    `unleash-updated` for each change, the moment it is committed; each event's id is the
    revision it brings the client to."""
    # The SDKs' streams evaluate segments themselves (they declare spec 5.2.0 or later)
    scope = dataclasses.replace(scope_of(request), inline_segments=False)
    last = request.headers.get("Last-Event-ID", "").strip()
    last_event_id = int(last) if last.isascii() and last.isdigit() and len(last) <= 18 else None
    feed, _ = await _model(request)
    lifecycle = request.app[LIFECYCLE]
    response = web.StreamResponse(
        headers={
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",  # proxies must not hold events back
        }
    )
    subscriber, first = feed.subscribe(scope, last_event_id)
    try:
        await response.prepare(request)
        await response.write(first)
        quiet = 0.0
        while not lifecycle.draining:
            try:
                data = await asyncio.wait_for(subscriber.queue.get(), LOOK_SECONDS)
            except TimeoutError:
                data = None
            if data == b"" or not await _still_allowed(request):  # the feed stopped; revoked
                break
            if data is None:
                quiet += LOOK_SECONDS
                if quiet >= HEARTBEAT_SECONDS:
                    quiet = 0.0
                    await response.write(b": heartbeat\n\n")
                continue
            quiet = 0.0
            await response.write(data)
    except ConnectionResetError:  # the client went away
        pass
    finally:
        feed.unsubscribe(subscriber)
    return response


async def _still_allowed(request: web.Request) -> bool:
    """Whether the stream's token still works: a revoked or expired token's stream ends (its
    SDK reconnects and gets 401). Looked up through the cache of tokens, which forgets them
    the moment any token changes; while the database cannot say, the stream goes on."""
    who = principal(request)
    if who.expires_at is not None and who.expires_at <= datetime.now(UTC):
        return False
    token = auth.token_from_header(request.headers.get("Authorization"))
    if who.kind != "api-token" or not token:
        return True
    try:
        now = await request.app[RESOLVER](request.app[POOL], token)
    except Exception as exc:
        if connections.is_unavailable(exc):
            return True
        raise
    return now is not None and now.id == who.id


_FILTERS = (
    Param("project", list[str], "Only flags of these projects (within the token's)"),
    Param("namePrefix", str, "Only flags whose names start with this"),
    Param("tag", list[str], "Only flags with one of these tags, each `type:value`"),
    Param("environment", str, "The environment, for a token of every environment (else default)"),
)

ROUTES = [
    Route(
        "GET",
        "/api/client/features",
        client_features,
        auth.CLIENT,
        ok={200: Features, 304: None},
        query=_FILTERS,
    ),
    Route(
        "GET",
        "/api/client/features/{name}",
        client_feature,
        auth.CLIENT,
        ok={200: Feature, 304: None},
        query=_FILTERS,
    ),
    Route(
        "GET",
        "/api/client/streaming",
        client_streaming,
        auth.CLIENT,
        query=_FILTERS,
        ok={
            200: EventStream(
                ("unleash-connected", "unleash-updated"),
                Delta,
                "Server-sent events: unleash-connected, then unleash-updated",
            )
        },
    ),
]
