"""Test data: plain functions with keyword defaults."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple

from service import auth, store
from service.accounts.events import (
    ApiTokenCreated,
    PersonalAccessTokenCreated,
    ServiceAccountCreated,
)
from service.events import Event, Metadata, RecordedEvent
from service.users.events import UserCreated

if TYPE_CHECKING:
    from service.connections import Conn

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


class Account(NamedTuple):
    """A user or service account made for a test, with one working personal access token."""

    id: int
    secret: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": self.secret}


async def account(
    conn: Conn,
    *,
    role: int = 3,
    service: bool = False,
    username: str | None = None,
    email: str | None = None,
    token_expires_at: datetime | None = None,
    created_at: datetime | None = None,
) -> Account:
    """An account with one token, appended as events (no HTTP, no password hashing)."""
    account_id = int(await conn.fetchval("SELECT nextval('user_ids')"))
    token_id = int(await conn.fetchval("SELECT nextval('personal_access_token_ids')"))
    now = datetime.now(UTC)
    created = created_at or now
    secret = auth.PAT_PREFIX + auth.new_secret()
    name = username or f"{'sa' if service else 'user'}-{account_id}"
    events: list[Event] = [
        ServiceAccountCreated(
            account_id=account_id, username=name, name=name, root_role=role, created_at=created
        )
        if service
        else UserCreated(
            user_id=account_id,
            name=name,
            username=name,
            email=email,
            root_role=role,
            created_at=created,
        ),
        PersonalAccessTokenCreated(
            token_id=token_id,
            user_id=account_id,
            description="test token",
            secret_hash=auth.hash_secret(secret),
            secret_hint=auth.secret_hint(secret),
            created_at=created,
            expires_at=token_expires_at or now + timedelta(days=30),
        ),
    ]
    kind = "service-account" if service else "user"
    await append(conn, events, stream=(kind, str(account_id)), expected="no-stream")
    return Account(account_id, secret)
