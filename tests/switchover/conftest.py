"""Fixtures of the import tests: a source that speaks Unleash's admin API (this service, served
on a real port: it answers the routes the importer reads as Unleash 6.10.1 does) and a target
database the import writes into, with the target served too so results are read through its
API."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from eventlog import connections
from projections.inline import apply_inline
from service.app import create_app
from service.switchover import kinds, run
from service.switchover.progress import Progress
from service.switchover.source import Unleash
from service.work import Work
from tests import conformance
from tests.conftest import ServiceTestServer, resolve_with_test_principals
from tests.factories import ADMIN_TOKEN, seed_database, settings_for

if TYPE_CHECKING:
    import io
    from collections.abc import AsyncIterator, Sequence

    import asyncpg
    from aiohttp.test_utils import TestClient
    from pytest_aiohttp import AiohttpClient

    from tests.pg import PgServer


@dataclass
class Source:
    """The source server: its address, an admin token, and a client of its API."""

    url: str
    token: str
    client: TestClient[Any, Any]


@dataclass
class Target:
    """The target database, a connection to it, and its API (served, so answers are checked
    against the OpenAPI document like every test's)."""

    dsn: str
    conn: asyncpg.Connection
    client: TestClient[Any, Any]

    async def events(self) -> int:
        """The target's events, tokens' use aside (its app writes that every 2 s)."""
        return int(
            await self.conn.fetchval(
                "SELECT count(*) FROM events WHERE stream_type <> 'token-usage'"
            )
        )

    async def run(
        self,
        source: Source,
        *,
        dry_run: bool = False,
        prefer_source: bool = False,
        token: str | None = None,
        only: Sequence[run.Kind] | None = None,
        progress: io.StringIO | None = None,
    ) -> run.Report:
        """An import in this process, as `python -m service import-unleash` runs one."""
        async with Unleash(source.url, source.token if token is None else token) as unleash:
            return await run.run(
                unleash,
                kinds.all_kinds() if only is None else only,
                Work(apply_inline),
                self.conn,
                Progress(progress, tty=False) if progress is not None else Progress(tty=False),
                dry_run=dry_run,
                prefer_source=prefer_source,
            )


@pytest.fixture
async def source(client: TestClient[Any, Any]) -> Source:
    """This service as the source (the suite's `client`: a real port, the admin token)."""
    return Source(url=str(client.make_url("")).rstrip("/"), token=ADMIN_TOKEN, client=client)


@pytest.fixture
async def target(pg18: PgServer, aiohttp_client: AiohttpClient) -> AsyncIterator[Target]:
    """A second database, seeded as a first start seeds one (the import command does that
    too), and served."""
    dsn = await pg18.new_database()
    await seed_database(dsn)
    app = create_app(settings_for(dsn), dsn, resolver=resolve_with_test_principals)
    conformance.install(app)
    served: TestClient[Any, Any] = await aiohttp_client(ServiceTestServer(app))
    conn = await connections.connect(dsn)
    try:
        yield Target(dsn=dsn, conn=conn, client=served)
    finally:
        await conn.close()
        await served.close()
        violations = app[conformance.VIOLATIONS]
        await pg18.drop_database(dsn)
    assert not violations, f"answers the OpenAPI document does not describe: {violations}"
