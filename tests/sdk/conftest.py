"""One service process for the SDK tests: started once, seeded through its admin API."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

from tests.processes import Harness
from tests.sdk.support import Service, start_service

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tests.pg import PgServer


@pytest.fixture(scope="package")
def service(pg18: PgServer) -> Iterator[Service]:
    harness = Harness()
    dsn = asyncio.run(pg18.new_database())
    try:
        yield start_service(harness, dsn)
    finally:
        harness.cleanup()
        asyncio.run(pg18.drop_database(dsn))
