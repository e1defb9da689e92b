"""create_app(settings, dsn): keys, cleanup contexts, middlewares, routes. Only wiring."""

from __future__ import annotations

import asyncio
import functools
import importlib.metadata
from typing import TYPE_CHECKING, Any, Literal

import asyncpg
import msgspec
from aiohttp import web

from eventlog import connections, migrations
from projections.follower import projection_lags, run_async_projections
from projections.inline import apply_inline
from service import admin_ui, auth, docs, openapi, ui
from service.addons import handlers as addons
from service.addons.delivery import Deliveries
from service.api_tokens import handlers as api_tokens
from service.appkeys import (
    CLIENT_FEED,
    FRONTEND_ORIGINS,
    LIFECYCLE,
    OPENAPI,
    PAST_READS,
    POOL,
    RESOLVER,
    ROUTE_TABLE,
    SCHEMA_VERSION,
    SETTINGS,
    TOKEN_USAGE,
    WORK,
    Resolver,
)
from service.applications import handlers as applications
from service.audit import handlers as audit
from service.client import handlers as client
from service.client.feed import RELEVANT, Feed
from service.context import handlers as context_fields
from service.dashboard import handlers as dashboard
from service.errors import NotReady
from service.favorites import handlers as favorites
from service.feature_types import handlers as feature_types
from service.features.handlers import (
    archive,
    clone,
    constraints,
    dependencies,
    environments,
    flag_extras,
    flags,
    segments,
    strategies,
    tags,
)
from service.frontend import handlers as frontend
from service.frontend.engine import FRONTEND_ENGINES, Engines
from service.http.answers import json_response
from service.http.middlewares import MIDDLEWARES
from service.http.requests import BODY_LIMIT, expect
from service.http.routes import Content, EventStream, Route
from service.insight import handlers as insight
from service.instance import handlers as instance
from service.instance.domain import SETTING_STREAM
from service.instance.state import Origins
from service.invites import handlers as invites
from service.lifecycle import Lifecycle
from service.metrics import METRICS, Metrics, prometheus
from service.playground import handlers as playground
from service.playground.engine import PLAYGROUND_ENGINES, Explainers
from service.privacy import erasure
from service.projects import handlers as projects
from service.projects import overview
from service.search import handlers as flag_search
from service.search.queries import Totals
from service.strategies import handlers as strategy_types
from service.tag_types import handlers as tag_types
from service.telemetry import handlers as telemetry
from service.telemetry import retention, usage
from service.token_usage import TokenUsage
from service.transfer import handlers as transfer
from service.users import deletions
from service.users.failures import FAILED_SIGN_INS, FailedSignIns
from service.users.handlers import (
    accounts,
    inactive,
    preferences,
    search,
    service_accounts,
    sessions,
    tokens,
    users,
)
from service.users.limits import SIGN_IN_LIMITS, SignInLimits
from service.users.passwords import HASHING, PasswordHashing
from service.users.records import Records
from service.work import AfterCommit, Committed, Work

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Coroutine

    from service.settings import Settings

VERSION = importlib.metadata.version("flagstore")
READY_TIMEOUT = 2.0
PAST_READS_AT_ONCE = 2  # one a core here: the others wait (service/http/past.py)
CLOSE_SECONDS = 2.0  # each of the runner and the pool get this long to stop, then are cut


class Health(msgspec.Struct, frozen=True):
    health: Literal["GOOD"]


GOOD = Health(health="GOOD")


def _streams(route: Route) -> bool:
    return any(isinstance(body, EventStream) for body in route.ok.values())


async def health(_request: web.Request) -> web.Response:
    """Liveness: the event loop answers; no database access."""
    return json_response(GOOD)


async def ready(request: web.Request) -> web.Response:
    """Readiness: not draining, the database answers, and its schema has our migrations."""
    if request.app[LIFECYCLE].draining:
        raise NotReady("The service is shutting down")
    try:
        async with asyncio.timeout(READY_TIMEOUT), request.app[POOL].acquire() as conn:
            version = await migrations.schema_version(conn)
    except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError):
        raise NotReady("The database does not answer") from None
    # A schema ahead of ours is the next release's, applied by its migration Job before its
    # pods roll out: migrations keep the previous release working (docs/operations.md), so the
    # old replicas stay in the Service until the new ones replace them.
    if version < request.app[SCHEMA_VERSION]:
        raise NotReady(f"Database schema is at {version}, expected {request.app[SCHEMA_VERSION]}")
    return json_response(GOOD)


ROUTES: list[Route] = [
    Route("GET", "/health", health, auth.PUBLIC, ok={200: Health}),
    Route("HEAD", "/health", health, auth.PUBLIC, ok={200: Health}),
    Route("GET", "/ready", ready, auth.PUBLIC, ok={200: Health}, errors=(NotReady,)),
    Route("HEAD", "/ready", ready, auth.PUBLIC, ok={200: Health}, errors=(NotReady,)),
    Route(  # as Unleash
        "GET",
        "/internal-backstage/prometheus",
        prometheus,
        auth.PUBLIC,
        ok={200: Content(("text/plain",), "Metrics in Prometheus' text format")},
    ),
    *sessions.ROUTES,
    *search.ROUTES,  # before /user-admin/{id}, which would take `search` for an id
    *inactive.ROUTES,
    *users.ROUTES,
    *accounts.ROUTES,
    *tokens.ROUTES,
    *service_accounts.ROUTES,
    *api_tokens.ROUTES,
    *invites.ROUTES,
    *projects.ROUTES,
    *flags.ROUTES,
    *flag_extras.ROUTES,
    *archive.ROUTES,
    *strategies.ROUTES,
    *environments.ROUTES,
    *tags.ROUTES,
    *dependencies.ROUTES,
    *clone.ROUTES,
    *transfer.ROUTES,
    *segments.ROUTES,
    *tag_types.ROUTES,
    *feature_types.ROUTES,
    *strategy_types.ROUTES,
    *context_fields.ROUTES,
    *constraints.ROUTES,
    *audit.ROUTES,
    *client.ROUTES,
    *telemetry.ROUTES,
    *usage.ROUTES,
    *applications.ROUTES,
    *insight.ROUTES,
    *frontend.ROUTES,
    *playground.ROUTES,
    *favorites.ROUTES,
    *overview.ROUTES,
    *dashboard.ROUTES,
    *flag_search.ROUTES,
    *admin_ui.ROUTES,
    *instance.ROUTES,
    *addons.ROUTES,
    *preferences.ROUTES,
    *docs.ROUTES,
    *ui.ROUTES,  # last: its fallback takes what no other route does (service/ui.py)
]


@functools.cache
def _openapi_document() -> bytes:
    """The encoded OpenAPI document. It depends on the route table alone, so a process builds
    it once (about 0.1 s), however many applications it creates."""
    return msgspec.json.encode(openapi.document(ROUTES, VERSION))


def create_app(
    settings: Settings,
    dsn: str,
    *,
    async_projections: bool = True,
    resolver: Resolver = auth.resolve_token,
) -> web.Application:
    app = web.Application(middlewares=MIDDLEWARES, client_max_size=BODY_LIMIT)
    app[SETTINGS] = settings
    tokens = auth.CachedTokens(resolver)
    cached: Resolver = tokens
    app[RESOLVER] = cached
    app[LIFECYCLE] = Lifecycle()
    app[SCHEMA_VERSION] = len(migrations.load_migrations())
    app[ROUTE_TABLE] = {}
    app[PAST_READS] = asyncio.Semaphore(PAST_READS_AT_ONCE)
    metrics = app[METRICS] = Metrics(projection_lags)
    # What follows each commit, in this order (the feed is added with the pool, below).
    after = AfterCommit()
    after.add(lambda committed: metrics.committed(committed.appends))
    after.add(_forgetting_tokens(tokens))
    origins = app[FRONTEND_ORIGINS] = Origins(settings.frontend_api_origins)
    after.add(_forgetting_origins(origins))
    work = app[WORK] = Work(apply_inline, after)
    usage = app[TOKEN_USAGE] = TokenUsage(work)
    app[HASHING] = PasswordHashing(settings.password_hash_concurrency)
    app[SIGN_IN_LIMITS] = SignInLimits.from_settings(settings)
    failures = app[FAILED_SIGN_INS] = FailedSignIns(work)
    app[FRONTEND_ENGINES] = Engines()
    app[PLAYGROUND_ENGINES] = Explainers()
    app[deletions.DELETIONS] = deletions.deletions(app)
    app[search.RECORDS] = Records()
    app[flag_search.TOTALS] = Totals()
    app[OPENAPI] = _openapi_document()
    app[ui.UI] = ui.load(settings)
    declared = {(r.method, r.path) for r in ROUTES}
    for route in ROUTES:
        added = app.router.add_route(route.method, route.path, route.handler, expect_handler=expect)
        app[ROUTE_TABLE][added] = route
        if route.method == "GET" and ("HEAD", route.path) not in declared and not _streams(route):
            # HEAD wherever GET (RFC 9110, 9.3.2): uptime probes and link checkers ask it of the
            # UI's pages and files. aiohttp leaves a Response's body out; an event stream never
            # ends, so it keeps GET alone. Left out of the OpenAPI document, as GET's twin.
            head = app.router.add_route("HEAD", route.path, route.handler)
            app[ROUTE_TABLE][head] = route

    async def database(app: web.Application) -> AsyncIterator[None]:
        app[POOL] = await connections.create_pool(
            dsn, settings.db_pool_size, settings.db_command_timeout_seconds
        )
        # The feed also sees other replicas' changes to API tokens and settings in the log.
        watchers = {auth.API_TOKEN_STREAM: [tokens.forget], SETTING_STREAM: [origins.forget]}
        feed = app[CLIENT_FEED] = Feed(app[POOL], dsn, watchers)
        after.add(lambda committed: feed.committed(committed.position), positions_of=RELEVANT)
        yield
        metrics.database.close()
        try:
            await asyncio.wait_for(app[POOL].close(), CLOSE_SECONDS)
        except TimeoutError:  # a connection is stuck in a query: do not wait for it
            app[POOL].terminate()

    background = {
        "token_usage": lambda stop: usage.run(app[POOL], stop),
        # what is still counted is recorded before the pool closes
        "failed_sign_ins": lambda stop: failures.run(app[POOL], stop),
        "erasures": lambda stop: erasure.run(
            app[POOL], stop, settings.erasure_interval_seconds, work
        ),
        "search_records": app[search.RECORDS].run,
        "deliveries": lambda stop: Deliveries(app[POOL], dsn, settings, metrics).run(stop),
        "telemetry_retention": lambda stop: retention.run(
            app[POOL], stop, settings.client_metrics_retention_days
        ),
    }
    background["client_feed"] = lambda stop: app[CLIENT_FEED].run(stop)  # noqa: PLW0108 - made with the pool
    if async_projections:
        background["projections"] = lambda stop: run_async_projections(app[POOL], dsn, stop)
    app.cleanup_ctx.append(database)
    # INTEGRATION_DELIVERY=false leaves delivery to `deliver` processes (service/delivering.py).
    app.cleanup_ctx.append(
        _in_background(
            [
                task
                for name, task in background.items()
                if name != "deliveries" or settings.integration_delivery
            ]
        )
    )
    return app


def _forgetting_tokens(tokens: auth.CachedTokens) -> Callable[[Committed], None]:
    """The cache of API tokens forgets them once a change to one committed here, before the
    request that made it is answered."""

    def forget(committed: Committed) -> None:
        if auth.API_TOKEN_STREAM in committed.stream_types:
            tokens.forget()

    return forget


def _forgetting_origins(origins: Origins) -> Callable[[Committed], None]:
    """The frontend API's CORS origins are read again once a change of a setting committed
    here, before the request that made it is answered."""

    def forget(committed: Committed) -> None:
        if SETTING_STREAM in committed.stream_types:
            origins.forget()

    return forget


def _in_background(
    tasks: list[Callable[[asyncio.Event], Coroutine[Any, Any, None]]],
) -> Callable[[web.Application], AsyncIterator[None]]:
    """Tasks for the app's lifetime: started once the pool is, told to stop together (each
    one's last flush runs before the pool closes) and given CLOSE_SECONDS in all, so that a
    database that hangs costs a stop that long once, not once per task."""

    async def context(_app: web.Application) -> AsyncIterator[None]:
        stops = [asyncio.Event() for _ in tasks]
        running = [asyncio.create_task(task(stop)) for task, stop in zip(tasks, stops, strict=True)]
        yield
        for stop in stops:
            stop.set()
        _, late = await asyncio.wait(running, timeout=CLOSE_SECONDS)
        for task in late:
            task.cancel()
        if late:
            await asyncio.wait(late)
        for task in running:
            error = None if task.cancelled() else task.exception()
            if error is not None:
                raise error  # aiohttp reports it with the rest of the cleanup

    return context
