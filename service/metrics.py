"""Prometheus metrics: the app's own registry, the series requests and committed appends feed,
and what a scrape reads at its time (the pool, the projections' lag, the process, the build)."""

from __future__ import annotations

import asyncio
import platform
from collections.abc import Awaitable, Callable, Iterator
from importlib import metadata
from typing import TYPE_CHECKING, Final

from aiohttp import web
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    Info,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily

from service.appkeys import POOL

if TYPE_CHECKING:
    from collections.abc import Sequence

    import asyncpg
    from prometheus_client.metrics_core import Metric

    from eventlog.connections import Conn
    from service.work import Appended

# The Prometheus text format (version 0.0.4), which every scraper reads.
CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"
# Fine steps across the latencies requests usually have, coarse ones up to the statement
# timeout (5 s) and past it.
BUCKETS: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# Label values stay bounded: any other method is "other", a path no route matched "unmatched".
METHODS: Final = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
OTHER_METHOD: Final = "other"
UNMATCHED: Final = "unmatched"
# No `_created` series beside each counter and histogram child (one more series per label set,
# for a start time that process_start_time_seconds gives). The library's switch, per process.
disable_created_metrics()  # type: ignore[no-untyped-call]  # the library leaves it unannotated
# A scrape waits this long for the database, then answers without what it reads there.
DATABASE_SECONDS: Final = 0.5

# Reads, on one connection, how many events each async projection is behind the log's head.
LagReader = Callable[["Conn"], Awaitable[dict[str, int]]]


def _version() -> str:
    try:
        return metadata.version("flagstore")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


VERSION: Final = _version()


class Metrics:
    """The series of one application, in a registry of its own (several apps in one process,
    as in the tests, never share a series)."""

    def __init__(self, read_lags: LagReader) -> None:
        self.registry = CollectorRegistry()
        labels = ("method", "route", "status")
        self._requests = Counter(
            "flagstore_http_requests",
            "HTTP requests answered, by method, route template and status",
            labels,
            registry=self.registry,
        )
        self._request_seconds = Histogram(
            "flagstore_http_request_duration_seconds",
            "Time from a request's routing to its answer, by method, route template and status",
            labels,
            buckets=BUCKETS,
            registry=self.registry,
        )
        self._appended = Counter(
            "flagstore_events_appended",
            "Events appended by committed transactions, by event type",
            ("type",),
            registry=self.registry,
        )
        self._append_seconds = Histogram(
            "flagstore_event_append_duration_seconds",
            "Time of one append (stream, inline projections, numbering, insert) and its COMMIT",
            buckets=BUCKETS,
            registry=self.registry,
        )
        self._deliveries = Counter(
            "flagstore_integration_deliveries",
            "Requests integrations made, by provider and outcome: success, retried (a failure "
            "that is tried again), failed (recorded, not retried) or given_up (retried for "
            "INTEGRATION_GIVE_UP_HOURS, then left)",
            ("provider", "outcome"),
            registry=self.registry,
        )
        self._delivery_lag = Histogram(
            "flagstore_integration_delivery_lag_seconds",
            "From an event's commit to its receiver's answer, for deliveries that succeeded",
            buckets=BUCKETS,
            registry=self.registry,
        )
        Info("flagstore_build", "The running version", registry=self.registry).info(
            {"version": VERSION, "python": platform.python_version()}
        )
        ProcessCollector(registry=self.registry)
        self.database = DatabaseCollector(read_lags)
        self.registry.register(self.database)
        # Children looked up once per label set: the request path pays two dict lookups.
        self._request_series: dict[tuple[str, str, int], tuple[Counter, Histogram]] = {}
        self._event_series: dict[str, Counter] = {}

    def request(self, method: str, route: str | None, status: int, seconds: float) -> None:
        """One answered request; `route` is its resource's template, None when none matched."""
        key = (method if method in METHODS else OTHER_METHOD, route or UNMATCHED, status)
        series = self._request_series.get(key)
        if series is None:
            values = (key[0], key[1], str(status))
            series = self._request_series[key] = (
                self._requests.labels(*values),
                self._request_seconds.labels(*values),
            )
        series[0].inc()
        series[1].observe(seconds)

    def committed(self, appends: Sequence[Appended]) -> None:
        """The appends of a transaction whose COMMIT succeeded (service/work.py)."""
        for append in appends:
            self._append_seconds.observe(append.seconds)
            for event_type in append.types:
                counter = self._event_series.get(event_type)
                if counter is None:
                    counter = self._event_series[event_type] = self._appended.labels(event_type)
                counter.inc()

    def delivered(self, provider: str, outcome: str, lag_seconds: float | None = None) -> None:
        """One request of an integration, and how it ended (service/addons/delivery.py)."""
        self._deliveries.labels(provider, outcome).inc()
        if lag_seconds is not None:
            self._delivery_lag.observe(lag_seconds)

    async def exposition(self, pool: asyncpg.Pool) -> bytes:
        """Every series as Prometheus text, the database's read first (at most DATABASE_SECONDS)."""
        await self.database.refresh(pool)
        # Writing a few hundred series out takes long enough to delay requests: in a thread, the
        # event loop is held one GIL switch interval (5 ms) at most instead of all of it.
        return await asyncio.to_thread(generate_latest, self.registry)


class DatabaseCollector:
    """What a scrape reads from the pool and the database: the pool's connections, and how far
    each async projection is behind the log. A database that is down or hangs costs a scrape
    DATABASE_SECONDS at most; it then answers the other series, with flagstore_database_up 0."""

    def __init__(self, read_lags: LagReader) -> None:
        self._read_lags = read_lags
        self._pool: asyncpg.Pool | None = None
        self._lags: dict[str, int] | None = None
        # At most one read at a time: while the database hangs, later scrapes wait on the same
        # read (bounded by the pool's connect and statement timeouts) instead of piling up.
        self._reading: asyncio.Task[dict[str, int]] | None = None

    async def refresh(self, pool: asyncpg.Pool) -> None:
        self._pool = pool
        if self._reading is None or self._reading.done():
            self._reading = asyncio.create_task(self._read(pool))
            self._reading.add_done_callback(_retrieve)
        reading = self._reading
        await asyncio.wait({reading}, timeout=DATABASE_SECONDS)
        ok = reading.done() and not reading.cancelled() and reading.exception() is None
        self._lags = reading.result() if ok else None

    async def _read(self, pool: asyncpg.Pool) -> dict[str, int]:
        async with pool.acquire(timeout=DATABASE_SECONDS) as conn:
            return await self._read_lags(conn)

    def close(self) -> None:
        """Before the pool closes: a read still waiting on the database is given up."""
        if self._reading is not None:
            self._reading.cancel()

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "flagstore_database_up",
            f"1 when this scrape read the database within {DATABASE_SECONDS} s, else 0",
            value=0 if self._lags is None else 1,
        )
        yield up
        if self._lags is not None:
            lag = GaugeMetricFamily(
                "flagstore_projection_lag_events",
                "Events an async projection is behind the log's head",
                labels=("projection",),
            )
            for name, behind in sorted(self._lags.items()):
                lag.add_metric((name,), behind)
            yield lag
        pool = self._pool
        if pool is not None:
            size, idle = pool.get_size(), pool.get_idle_size()
            yield GaugeMetricFamily(
                "flagstore_db_pool_open_connections",
                "Connections the pool holds open",
                value=size,
            )
            yield GaugeMetricFamily(
                "flagstore_db_pool_in_use_connections",
                "Connections lent out to requests and background work",
                value=size - idle,
            )
            yield GaugeMetricFamily(
                "flagstore_db_pool_max_connections",
                "Connections the pool opens at most (DB_POOL_SIZE)",
                value=pool.get_max_size(),
            )


def _retrieve(task: asyncio.Task[dict[str, int]]) -> None:
    """A read nobody waited for to the end: its failure is the scrape's `up 0`, not a log line."""
    if not task.cancelled():
        task.exception()


async def prometheus(request: web.Request) -> web.Response:
    """The metrics in Prometheus' text format, at Unleash's path and, as there, with no token."""
    body = await request.app[METRICS].exposition(request.app[POOL])
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})


METRICS = web.AppKey("metrics", Metrics)
