"""Metrics at /internal-backstage/prometheus: known traffic scraped back as counts by route
template, committed appends only, projection lag, pool, build and process; no token needed; a
database that is down or hangs never fails or holds up a scrape."""

from __future__ import annotations

import asyncio
import platform
import time
import uuid
from importlib import metadata
from typing import TYPE_CHECKING, Any

import pytest
from aiohttp.test_utils import TestClient
from prometheus_client.parser import text_string_to_metric_families

import eventlog
from eventlog import connections, migrations
from projections.registry import ASYNC
from service import bootstrap, metrics
from service.app import create_app
from service.appkeys import POOL, WORK
from service.metrics import CONTENT_TYPE, METRICS, Metrics
from tests import factories
from tests.conftest import AiohttpClient, ServiceTestServer
from tests.factories import ADMIN, ADMIN_TOKEN, FEATURES, create_flag, head, work

if TYPE_CHECKING:
    import asyncpg
    from aiohttp import web
    from prometheus_client.metrics_core import Metric

    from service.settings import Settings
    from service.work import UnitOfWork
    from tests.pg import Cluster

Client = TestClient[Any, Any]
SCRAPE = "/internal-backstage/prometheus"
FLAGS_ROUTE = "/api/admin/projects/{projectId}/features"
FLAG_ROUTE = "/api/admin/projects/{projectId}/features/{featureName}"
SEARCH_ROUTE = "/api/admin/user-admin/search"


class Scrape:
    """One scrape, parsed: samples by name, each as {labels: value}."""

    def __init__(self, text: str) -> None:
        self.families: dict[str, Metric] = {
            family.name: family for family in text_string_to_metric_families(text)
        }
        self.samples: dict[str, dict[frozenset[tuple[str, str]], float]] = {}
        for family in self.families.values():
            for sample in family.samples:
                labels = frozenset(sample.labels.items())
                self.samples.setdefault(sample.name, {})[labels] = sample.value

    def series(self, name: str, *keys: str) -> dict[tuple[str, ...], float]:
        """The samples of `name` keyed by the values of the labels `keys`."""
        return {
            tuple(dict(labels)[key] for key in keys): value
            for labels, value in self.samples.get(name, {}).items()
        }

    def value(self, name: str, **labels: str) -> float | None:
        return self.samples.get(name, {}).get(frozenset(labels.items()))


async def scrape(client: Client, headers: dict[str, str] | None = None) -> Scrape:
    resp = await client.get(SCRAPE, headers=headers)
    assert resp.status == 200
    assert resp.headers["Content-Type"] == CONTENT_TYPE
    return Scrape(await resp.text())


async def events_after(pool: asyncpg.Pool, position: int) -> dict[str, int]:
    async with pool.acquire() as conn:
        counts: dict[str, int] = {}
        async for batch in eventlog.read_all(conn, after=position):
            for record in batch:
                name = record.event.type_name()
                counts[name] = counts.get(name, 0) + 1
        return counts


def assert_histograms_match_counts(found: Scrape) -> None:
    """Each request series has its histogram: count equal to the counter, +Inf bucket equal to
    the count, buckets that never decrease, and a positive sum."""
    counts = found.series("flagstore_http_requests_total", "method", "route", "status")
    name = "flagstore_http_request_duration_seconds"
    assert found.series(f"{name}_count", "method", "route", "status") == counts
    sums = found.series(f"{name}_sum", "method", "route", "status")
    assert set(sums) == set(counts)
    assert all(total > 0 for total in sums.values())
    buckets = found.series(f"{name}_bucket", "method", "route", "status", "le")
    for key, count in counts.items():
        ladder = sorted((float(le), n) for (*labels, le), n in buckets.items() if (*labels,) == key)
        assert len(ladder) == 14
        assert ladder[-1] == (float("inf"), count)
        assert [n for _, n in ladder] == sorted(n for _, n in ladder)


@pytest.fixture
def patient_scrapes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests that want the database's series: a scrape waits for them 5 s instead of 0.5, so
    that a busy machine's slow read is not taken for a database that is down."""
    monkeypatch.setattr(metrics, "DATABASE_SECONDS", 5.0)


@pytest.mark.usefixtures("patient_scrapes")
async def test_a_scrape_counts_the_traffic_sent_by_route_template(
    client: Client, app: web.Application, settings: Settings
) -> None:
    before = await head(app)
    for name in ("metrics-one", "metrics-two", "metrics-three"):
        assert await create_flag(client, name) == 200
    assert (await client.get("/api/admin/no-such-thing", headers=ADMIN)).status == 404
    assert (await client.get(f"{FEATURES}/missing-flag", headers=ADMIN)).status == 404
    assert (await client.get(f"{SEARCH_ROUTE}?q=ad", headers=ADMIN)).status == 200
    for _ in range(4):
        assert (await client.get("/health")).status == 200
    assert (await client.request("PROPFIND", "/health")).status == 405

    found = await scrape(client)

    assert found.series("flagstore_http_requests_total", "method", "route", "status") == {
        ("POST", FLAGS_ROUTE, "200"): 3,
        ("GET", "unmatched", "404"): 1,
        ("GET", FLAG_ROUTE, "404"): 1,
        ("GET", SEARCH_ROUTE, "200"): 1,
        ("GET", "/health", "200"): 4,
        ("other", "unmatched", "405"): 1,  # an unknown method is no new label value
    }
    assert_histograms_match_counts(found)
    written = await events_after(app[POOL], before)
    assert written == {"FeatureCreated": 3}
    assert found.series("flagstore_events_appended_total", "type") == {
        (kind,): count for kind, count in written.items()
    }
    assert found.value("flagstore_event_append_duration_seconds_count") == 3
    assert found.value("flagstore_event_append_duration_seconds_bucket", le="+Inf") == 3
    assert (found.value("flagstore_event_append_duration_seconds_sum") or 0) > 0

    assert found.value("flagstore_database_up") == 1
    lags = found.series("flagstore_projection_lag_events", "projection")
    assert set(lags) == {(projection.name,) for projection in ASYNC}
    assert all(lag >= 0 for lag in lags.values())

    open_ = found.value("flagstore_db_pool_open_connections")
    in_use = found.value("flagstore_db_pool_in_use_connections")
    assert open_ is not None
    assert in_use is not None
    assert 0 <= in_use <= open_ <= settings.db_pool_size
    assert open_ >= 1
    assert found.value("flagstore_db_pool_max_connections") == settings.db_pool_size

    version = metadata.version("flagstore")
    assert version == "0.1.0"
    assert found.series("flagstore_build_info", "version", "python") == {
        (version, platform.python_version()): 1
    }
    assert (found.value("process_resident_memory_bytes") or 0) > 0
    assert found.value("process_cpu_seconds_total") is not None
    assert found.value("process_open_fds") is not None
    assert found.families["process_start_time_seconds"].type == "gauge"
    assert found.families["flagstore_http_requests"].type == "counter"
    assert found.families["flagstore_http_request_duration_seconds"].type == "histogram"

    again = await scrape(client)  # the first scrape is counted once it was answered
    assert (
        again.value("flagstore_http_requests_total", method="GET", route=SCRAPE, status="200") == 1
    )


async def test_a_refused_create_counts_no_event(client: Client, app: web.Application) -> None:
    """A 409 on a duplicate name, refused by the decision or, in a race, by the append's
    unique stream key: one FeatureCreated in the log, one in the metrics."""
    before = await head(app)
    assert await create_flag(client, "taken") == 200
    assert await create_flag(client, "taken") == 409
    raced = await asyncio.gather(*(create_flag(client, "raced") for _ in range(8)))
    assert sorted(raced) == [200] + [409] * 7

    found = await scrape(client)
    assert await events_after(app[POOL], before) == {"FeatureCreated": 2}
    assert found.series("flagstore_events_appended_total", "type") == {("FeatureCreated",): 2}
    assert found.value("flagstore_event_append_duration_seconds_count") == 2
    requests = found.series("flagstore_http_requests_total", "method", "route", "status")
    assert requests == {("POST", FLAGS_ROUTE, "200"): 2, ("POST", FLAGS_ROUTE, "409"): 8}


class Rollback(Exception):
    pass


async def append_then_roll_back(uow: UnitOfWork, number: int) -> None:
    await uow.append(("test", f"rolled-back-{number}"), [factories.noted(number)], ACTOR)
    raise Rollback


async def test_a_rolled_back_transaction_counts_no_event(
    client: Client, app: web.Application
) -> None:
    """The append itself succeeds, then the transaction rolls back: nothing counted. A savepoint
    rolled back inside a committed transaction counts only what the transaction kept."""
    metrics = app[METRICS]
    units = app[WORK]
    before = await head(app)
    async with app[POOL].acquire() as conn:
        with pytest.raises(Rollback):
            async with units.begin(conn) as uow:
                await append_then_roll_back(uow, 1)
        assert (await scrape(client)).series("flagstore_events_appended_total", "type") == {}

        async with units.begin(conn) as uow:
            await uow.append(("test", "kept"), [factories.noted(2)], ACTOR)
            with pytest.raises(Rollback):  # a savepoint, rolled back
                async with uow.savepoint():
                    await append_then_roll_back(uow, 3)
            async with uow.savepoint():
                await uow.append(("test", "kept"), [factories.noted(4)], ACTOR)
            # Nothing is counted before the outer COMMIT.
            assert (
                metrics.registry.get_sample_value(
                    "flagstore_events_appended_total", {"type": "SegmentDeleted"}
                )
                is None
            )

    assert await events_after(app[POOL], before) == {"SegmentDeleted": 2}
    found = await scrape(client)
    assert found.series("flagstore_events_appended_total", "type") == {("SegmentDeleted",): 2}
    assert found.value("flagstore_event_append_duration_seconds_count") == 2


ACTOR = factories.TEST_ACTOR


@pytest.mark.usefixtures("patient_scrapes")
async def test_the_endpoint_needs_no_token(client: Client) -> None:
    for headers in (None, {"Authorization": "*:*.not-a-token"}, ADMIN):
        found = await scrape(client, headers)
        assert found.value("flagstore_database_up") == 1


def test_apps_in_one_process_keep_their_own_series() -> None:
    async def no_lags(_conn: object) -> dict[str, int]:
        return {}

    first, second = Metrics(no_lags), Metrics(no_lags)
    first.request("GET", "/health", 200, 0.001)
    labels = {"method": "GET", "route": "/health", "status": "200"}
    assert first.registry.get_sample_value("flagstore_http_requests_total", labels) == 1
    assert second.registry.get_sample_value("flagstore_http_requests_total", labels) is None


# --- a database that goes away --------------------------------------------------------------


@pytest.fixture
async def cluster_client(cluster: Cluster, aiohttp_client: AiohttpClient) -> Client:
    """The application on a PostgreSQL of its own, which the test may stop or freeze."""
    dsn = await cluster.create_database()
    conn = await connections.connect(dsn)
    try:
        await migrations.migrate(conn)
        await bootstrap.seed(work(), conn, (ADMIN_TOKEN,))
    finally:
        await conn.close()
    settings = factories.settings_for(dsn)
    return await aiohttp_client(ServiceTestServer(create_app(settings, dsn)))


async def timed_scrape(client: Client) -> tuple[Scrape, float]:
    started = time.monotonic()
    found = await scrape(client)
    return found, time.monotonic() - started


def assert_answered_without_the_database(found: Scrape, seconds: float) -> None:
    assert seconds < metrics.DATABASE_SECONDS + 1.0  # not the pool's or the database's timeouts
    assert found.value("flagstore_database_up") == 0
    assert "flagstore_projection_lag_events" not in found.families  # no stale value
    assert found.value("flagstore_http_requests_total", method="GET", route=SCRAPE, status="200")
    assert found.value("flagstore_db_pool_max_connections") == 10
    assert found.value("process_resident_memory_bytes")
    assert found.series("flagstore_build_info", "version")


async def test_a_scrape_answers_at_once_while_the_database_is_stopped_or_frozen(
    cluster: Cluster, cluster_client: Client
) -> None:
    assert await create_flag(cluster_client, f"up-{uuid.uuid4().hex[:8]}") == 200
    found, _ = await timed_scrape(cluster_client)
    assert found.value("flagstore_database_up") == 1

    await asyncio.to_thread(cluster.freeze)  # up, answering nothing: the pool's connections hang
    try:
        for _ in range(3):  # the later ones wait on the same read, never pile up more
            found, seconds = await timed_scrape(cluster_client)
            assert_answered_without_the_database(found, seconds)
    finally:
        await asyncio.to_thread(cluster.thaw)

    await asyncio.to_thread(cluster.stop, "immediate")
    for _ in range(3):
        found, seconds = await timed_scrape(cluster_client)
        assert_answered_without_the_database(found, seconds)
    assert (await cluster_client.get(FEATURES, headers=ADMIN)).status == 503

    await asyncio.to_thread(cluster.start)
    deadline = time.monotonic() + 10
    while (await scrape(cluster_client)).value("flagstore_database_up") != 1:
        assert time.monotonic() < deadline, "the scrape never read the database again"
        await asyncio.sleep(0.1)
