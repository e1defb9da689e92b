"""Test data: plain functions with keyword defaults."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from service import store
from service.accounts.events import ApiTokenCreated
from service.events import Event, Metadata, RecordedEvent

if TYPE_CHECKING:
    from service.db import Conn

TEST_ACTOR = Metadata(actor_id="test", actor_name="test", actor_kind="system", source="test")


class Noted(Event, frozen=True, kw_only=True, tag="TestNoted"):
    """A test-only event type: a stream of numbered notes."""

    n: int
    text: str = ""


def noted(n: int = 1, text: str = "") -> Noted:
    return Noted(n=n, text=text)


async def append(
    conn: Conn,
    events: list[Event] | None = None,
    *,
    stream: tuple[str, str] | None = None,
    expected: Any = "any",
    metadata: Metadata = TEST_ACTOR,
) -> list[RecordedEvent]:
    async with conn.transaction():
        return await store.append(
            conn,
            stream or ("test", uuid.uuid4().hex),
            expected,
            events or [noted()],
            metadata,
        )


def api_token_created(token_id: int = 1, **overrides: Any) -> ApiTokenCreated:
    from datetime import UTC, datetime  # noqa: PLC0415

    fields: dict[str, Any] = {
        "token_id": token_id,
        "token_name": f"token-{token_id}",
        "token_type": "client",
        "environment": "development",
        "projects": ["*"],
        "secret_hash": uuid.uuid4().hex,
        "secret_hint": "*:dev.abcd********",
        "created_at": datetime.now(UTC),
    } | overrides
    return ApiTokenCreated(**fields)
