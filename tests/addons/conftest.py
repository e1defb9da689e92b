"""Integrations' tests: receivers on loopback (allowed, as the issue's tests set it), and a
delivery clock a thousand times faster than the wall clock."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.factories import settings_for

if TYPE_CHECKING:
    from service.settings import Settings

LOOPBACK = "127.0.0.0/8"


@pytest.fixture
def settings(dsn: str) -> Settings:
    return settings_for(dsn, integration_allowed_networks=LOOPBACK, integration_time_scale=1000.0)
