"""What the SDK tests compare the official SDKs with: /api/frontend's answers for 50 contexts
and 10 flags. They are the same by GET and by POST, the same as Unleash's engine (yggdrasil)
gives when it reads GET /api/client/features (the SDKs' input), and they exercise every rule
of the flags (support.assert_meaningful)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.client.sdk.support import (
    CONTEXTS,
    Service,
    assert_meaningful,
    client_features,
    engine_answers,
    frontend_answers,
)

pytestmark = pytest.mark.process


def test_the_frontend_api_answers_as_the_engine_reads_the_client_api(
    service: Service, frontend: list[list[dict[str, Any]]]
) -> None:
    assert len(CONTEXTS) == 50
    assert_meaningful(frontend)
    assert frontend_answers(service, "GET") == frontend
    engine = engine_answers(client_features(service))
    for context, want, got in zip(CONTEXTS, engine, frontend, strict=True):
        assert got == want, context
