"""HTTP handlers of the frontend API (Unleash's /api/frontend, for browser and mobile SDKs):
the flags enabled for a context, evaluated here by Unleash's engine; the SDKs' registration
accepted, their metrics counted as server SDKs' are. CORS: service/cors.py."""

from __future__ import annotations

import asyncio
import hashlib
from typing import TYPE_CHECKING, Any, Final

import msgspec
from aiohttp import web

from service import auth, errors
from service.appkeys import CLIENT_FEED, POOL, SETTINGS, WORK
from service.client import model as m
from service.frontend import context as ctx
from service.frontend.commands import EvaluateContext
from service.frontend.engine import FRONTEND_ENGINES, Evaluator
from service.frontend.responses import FrontendFeatures
from service.http.requests import etag_matches, forwarded_address, principal, read_json
from service.http.routes import Content, Param, Route
from service.telemetry.commands import RegisterClientApplication, RegisterClientMetrics
from service.telemetry.queries import record_metrics

if TYPE_CHECKING:
    from service.auth import Principal

# From this many flags to ask about (enough to hold the event loop noticeably), the engine is
# asked in a thread.
IN_THREAD_FROM: Final = 200
# What a token for every environment (an admin token) reads, as in Unleash.
DEFAULT_ENVIRONMENT: Final = "default"
_encoder = msgspec.json.Encoder()


async def get_frontend_features(request: web.Request) -> web.Response:
    """The flags enabled for the context the query gives, each with its variant, evaluated
    by Unleash's engine (yggdrasil). Any parameter other than the context's root fields is a
    context property, as is `properties[name]=value`. With the ETag of an earlier answer in
    If-None-Match, 304 while the answer is the same."""
    # Every parameter is part of the context, so the query is read whole here rather than
    # parameter by parameter (query_param reads only declared ones: these are declared as
    # the context's root fields and `properties`, a free-form object).
    fields, explicit = ctx.from_query(request.query.items())
    return await _answer(request, fields, explicit)


async def post_frontend_features(request: web.Request) -> web.Response:
    """The flags enabled for the context the body gives (`{"context": {...}}`; no body: the
    empty context), as GET answers for a query."""
    context = (await read_json(request, EvaluateContext)).context if request.body_exists else None
    fields, explicit = ctx.from_body(context)
    return await _answer(request, fields, explicit)


async def _answer(
    request: web.Request, fields: dict[str, str], explicit: dict[str, str]
) -> web.Response:
    """The answer for the context, or 304 when it is the one If-None-Match names: known
    without the engine when the context's answer is repeatable and was given before."""
    hops = request.app[SETTINGS].trusted_proxy_hops
    context = ctx.make(fields, explicit, forwarded_address(request, hops))
    scope = scope_of(request)
    engines = request.app[FRONTEND_ENGINES]
    evaluator = await _evaluator(request, scope)
    encoded = evaluator.encode(context)
    if_none_match = request.headers.get("If-None-Match")
    repeatable = evaluator.reads.repeatable(context)
    known = engines.etag(scope, evaluator, encoded) if repeatable else None
    if known is not None and etag_matches(if_none_match, known):
        return web.Response(status=304, headers=_headers(known))
    if len(evaluator.flags) < IN_THREAD_FROM:
        toggles = evaluator.toggles(encoded)
    else:  # the engine's calls let go of the GIL: the event loop goes on meanwhile
        toggles = await asyncio.to_thread(evaluator.toggles, encoded)
    body = _encoder.encode(FrontendFeatures(toggles=toggles))
    etag = f'"{hashlib.blake2b(body, digest_size=16).hexdigest()}"'
    if repeatable:
        engines.remember(scope, evaluator, encoded, etag)
    if etag_matches(if_none_match, etag):
        return web.Response(status=304, headers=_headers(etag))
    return web.Response(body=body, content_type="application/json", headers=_headers(etag))


async def _evaluator(request: web.Request, scope: m.Scope) -> Evaluator:
    """The scope's engine, with this process's own commits (read your own writes)."""
    feed = request.app[CLIENT_FEED]
    try:
        model = await feed.fresh(request.app[WORK].after.position)
    except TimeoutError:
        raise errors.ServiceUnavailable("The flags are not loaded yet; try again shortly") from None
    return await request.app[FRONTEND_ENGINES].evaluator(
        model, scope, lambda: feed.body(model, scope, gzipped=False)
    )


def _headers(etag: str) -> dict[str, str]:
    return {"ETag": etag, "Cache-Control": "no-cache"}


def scope_of(request: web.Request) -> m.Scope:
    """The token's environment and projects."""
    who = principal(request)
    return m.Scope(environment_of(who), None if "*" in who.projects else frozenset(who.projects))


def environment_of(who: Principal) -> str:
    """The token's environment, `default` for a token of every environment (as Unleash)."""
    return DEFAULT_ENVIRONMENT if who.environment == "*" else who.environment


async def register_frontend_client(request: web.Request) -> web.Response:
    """Validated as an SDK's registration, and not recorded, as in Unleash (which has it for
    SDKs that expect an answer)."""
    await read_json(request, RegisterClientApplication)
    return web.Response(text="OK")


async def register_frontend_metrics(request: web.Request) -> web.Response:
    """A browser SDK's evaluations since its last report, counted as a server SDK's are (in
    the token's environment; the flags evaluated there get their `lastSeenAt`)."""
    cmd = await read_json(request, RegisterClientMetrics)
    async with request.app[POOL].acquire() as conn:
        await record_metrics(conn, environment_of(principal(request)), cmd)
    return web.Response(text="OK")


_OK: Final = Content(("text/plain",), "OK")
_CONTEXT: Final = (
    Param("appName", str, "The application's name"),
    Param("environment", str, "The environment the application runs in (a context field)"),
    Param("userId", str, "Who uses the application"),
    Param("sessionId", str, "The session (made up when none is given)"),
    Param("remoteAddress", str, "The client's address (the request's when none is given)"),
    Param("currentTime", str, "The time to evaluate at, RFC 3339 (now when none is given)"),
    Param(  # any name: a free-form object (each of its values, in a query, is a string)
        "properties",
        dict[str, Any],
        "Context properties: every other parameter `name=value`, and `properties[name]=value` "
        "(which wins over a plain parameter of the same name)",
    ),
)

ROUTES = [
    Route(
        "GET",
        "/api/frontend",
        get_frontend_features,
        auth.FRONTEND,
        ok={200: FrontendFeatures, 304: None},
        query=_CONTEXT,
    ),
    Route(
        "POST",
        "/api/frontend",
        post_frontend_features,
        auth.FRONTEND,
        body=EvaluateContext,
        ok={200: FrontendFeatures, 304: None},
    ),
    Route(
        "POST",
        "/api/frontend/client/register",
        register_frontend_client,
        auth.FRONTEND,
        body=RegisterClientApplication,
        ok={200: _OK},
    ),
    Route(
        "POST",
        "/api/frontend/client/metrics",
        register_frontend_metrics,
        auth.FRONTEND,
        body=RegisterClientMetrics,
        ok={200: _OK},
    ),
]
