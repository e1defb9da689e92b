"""Fixtures: one PostgreSQL per session, a fresh database per test cloned from a template."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from eventlog import connections
from eventlog.privacy import master
from eventlog.privacy.crypto import MasterKey
from eventlog.privacy.keys import Masters
from service import auth, embedded, protocol
from service.app import create_app
from service.appkeys import SETTINGS
from service.auth import Principal
from tests import conformance
from tests.factories import seed_database, settings_for
from tests.harness import Harness
from tests.pg import PG15_BIN, Cluster, PgServer, Roles, start_pg15, tune_for_tests

# Every test process and every service or command it starts seals personal data with this key
# (the embedded-key tests unset it for their own processes).
TEST_MASTER_KEY = "ZmxhZ3N0b3JlIHRlc3QgbWFzdGVyIGtleSAzMiBieXQ="
os.environ["PII_MASTER_KEY"] = TEST_MASTER_KEY
master.install(Masters(MasterKey.parse(TEST_MASTER_KEY)))

if TYPE_CHECKING:
    import asyncpg
    from aiohttp.web_runner import BaseRunner

    from service.settings import Settings

AiohttpClient = Callable[[web.Application | TestServer], Awaitable[TestClient[Any, Any]]]


@pytest.fixture(scope="session")
def pg18() -> Iterator[PgServer]:
    """The embedded PostgreSQL (or TEST_DATABASE_URL), started once per session."""
    url = os.environ.get("TEST_DATABASE_URL")
    if url:
        server = PgServer(url, "external")
        yield server
        server.close()
        return
    base = Path(tempfile.mkdtemp(prefix="flags-test-", dir="/tmp"))
    try:
        with embedded.embedded_postgres(base) as dsn:
            admin = dsn.replace(f"/{embedded.DATABASE_NAME}?", "/postgres?")
            asyncio.run(tune_for_tests(admin))
            server = PgServer(admin, "pg18")
            yield server
            server.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    """A throwaway PostgreSQL 15 of the test's own, to stop, freeze and start (tests/pg.py)."""
    if not (PG15_BIN / "postgres").exists():
        pytest.skip("PostgreSQL 15 binaries (/usr/lib/postgresql/15/bin) are absent here")
    cluster = Cluster()
    try:
        yield cluster
    finally:
        cluster.destroy()


@pytest.fixture
async def roles() -> AsyncIterator[Roles]:
    """Roles (logins) a test creates on its server, dropped at its end."""
    made = Roles()
    yield made
    await made.drop()


@pytest.fixture(scope="session")
def pg15() -> Iterator[PgServer]:
    server = start_pg15()
    if server is None:
        pytest.skip("PostgreSQL 15 binaries (/usr/lib/postgresql/15/bin) are absent here")
    yield server
    server.stop()


@pytest.fixture(params=["pg18", "pg15"])
def pg_server(request: pytest.FixtureRequest) -> PgServer:
    """Both server versions: for the event store, migrations and projections."""
    server: PgServer = request.getfixturevalue(request.param)
    return server


@pytest.fixture
async def dsn(pg18: PgServer) -> AsyncIterator[str]:
    url = await pg18.new_database()
    yield url
    await pg18.drop_database(url)


@pytest.fixture
async def any_dsn(pg_server: PgServer) -> AsyncIterator[str]:
    url = await pg_server.new_database()
    yield url
    await pg_server.drop_database(url)


@pytest.fixture
async def conn(dsn: str) -> AsyncIterator[asyncpg.Connection]:
    connection = await connections.connect(dsn)
    yield connection
    await connection.close()


@pytest.fixture
async def any_conn(any_dsn: str) -> AsyncIterator[asyncpg.Connection]:
    connection = await connections.connect(any_dsn)
    yield connection
    await connection.close()


@pytest.fixture
def settings(dsn: str) -> Settings:
    return settings_for(dsn)


@pytest.fixture
async def app(settings: Settings, dsn: str) -> AsyncIterator[web.Application]:
    """The service; every answer it gives a test is checked against its OpenAPI document."""
    await seed_database(dsn, settings.init_admin_api_tokens)
    app = create_app(settings, dsn, resolver=resolve_with_test_principals)
    conformance.install(app)
    yield app
    violations = app[conformance.VIOLATIONS]
    assert not violations, f"answers the OpenAPI document does not describe: {violations}"


TEST_PRINCIPAL = "test-principal:"


def as_principal(*permissions: str) -> dict[str, str]:
    """Headers that authenticate as a principal holding exactly these permissions."""
    return {"Authorization": TEST_PRINCIPAL + ",".join(permissions)}


async def resolve_with_test_principals(pool: asyncpg.Pool, token: str) -> Principal | None:
    """Until accounts exist, tests build principals with chosen permissions directly."""
    if token.startswith(TEST_PRINCIPAL):
        permissions = frozenset(p for p in token.removeprefix(TEST_PRINCIPAL).split(",") if p)
        return Principal(kind="user", id="user:test", name="tester", permissions=permissions)
    return await auth.resolve_token(pool, token)


class ServiceTestServer(TestServer):
    """The application served as `serve` serves it: through service.protocol's Runner."""

    async def _make_runner(self, **kwargs: Any) -> BaseRunner:
        settings = self.app[SETTINGS]
        options = protocol.runner_options(settings, protocol.raise_open_files_limit())
        return protocol.Runner(self.app, **{**kwargs, **options})


@pytest.fixture
async def client(app: web.Application, aiohttp_client: AiohttpClient) -> TestClient[Any, Any]:
    return await aiohttp_client(ServiceTestServer(app))


@pytest.fixture
def harness() -> Iterator[Harness]:
    """Every process and directory a process test creates, removed at its end."""
    harness = Harness()
    try:
        yield harness
    finally:
        harness.cleanup()
