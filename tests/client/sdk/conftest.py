"""One service process for the SDK tests: started once, seeded through its admin API."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest

from tests.client.sdk.support import Service, frontend_answers, start_service
from tests.harness import Harness

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


@pytest.fixture(scope="package")
def frontend(service: Service) -> list[list[dict[str, Any]]]:
    """What /api/frontend answers for every context and flag (support.FLAGS, CONTEXTS): what
    the SDKs must answer (test_frontend_reference.py checks it is worth comparing with)."""
    return frontend_answers(service, "POST")
