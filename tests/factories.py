"""Test data, and the requests that make it and check the answers, shared by every area: plain
functions with keyword defaults. Events appended directly (tests of the log itself), accounts,
and the admin API's requests (a `client` is a TestClient, or an aiohttp session with a base URL
for the service as a process)."""

from __future__ import annotations

import hashlib
import re
import uuid
import zlib
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple

import eventlog
from eventlog import appends, connections
from eventlog.codec import RecordedEvent
from eventlog.events.api_tokens import ApiTokenCreated
from eventlog.events.base import Metadata
from eventlog.events.features import SegmentDeleted
from eventlog.events.users import (
    PersonalAccessTokenCreated,
    PersonalAccessTokensSeen,
    ServiceAccountCreated,
    TokenUse,
    UserCreated,
    UserSignedIn,
)
from projections.inline import apply_inline
from service import auth, bootstrap
from service.appkeys import POOL
from service.avatars import image_url
from service.settings import Settings
from service.work import AfterCommit, Committed, Work
from tests import ROOT

if TYPE_CHECKING:
    from collections.abc import Callable, Collection

    from aiohttp import web

    from eventlog.codec import DomainEvent
    from eventlog.connections import Conn

# The admin token every test's service is seeded with (the settings fixture's), and its headers.
ADMIN_TOKEN = "*:*.test-admin-secret-0123456789abcdefghijklmnop"
ADMIN = {"Authorization": ADMIN_TOKEN}
# Unleash's sign-in hints on the admin API's 401 to a browser (docs/behavior.md, "Errors").
SIGN_IN_HINTS = {
    "type": "password",
    "path": "/auth/simple/login",
    "defaultHidden": False,
    "options": [],
}
# A stand-in for the web UI's build, in its layout (service/ui.py serves it in the tests).
UI_SAMPLE = ROOT / "tests" / "ui_sample"
TEST_ACTOR = Metadata(actor_id="test", actor_name="test", actor_kind="system", source="test")


def work(*hooks: Callable[[Committed], None], positions_of: Collection[str] = ()) -> Work:
    """Units of work as the service's: with the inline projections, and these after-commit
    hooks (which get the positions of appends to `positions_of`)."""
    after = AfterCommit()
    for hook in hooks:
        after.add(hook, positions_of=positions_of)
    return Work(apply_inline, after)


def settings_for(dsn: str, **overrides: Any) -> Settings:
    """The service's settings on the test's database, seeding the admin token, and any others on
    top (the settings fixture's, unless a test says otherwise)."""
    return Settings(
        database_url=dsn,
        init_admin_api_tokens=(ADMIN_TOKEN,),
        **{"ui_dir": str(UI_SAMPLE), **overrides},
    )


async def seed_database(dsn: str, tokens: tuple[str, ...] = (ADMIN_TOKEN,)) -> None:
    """The defaults and the admin tokens, as the service seeds them when it starts."""
    conn = await connections.connect(dsn)
    try:
        await bootstrap.seed(work(), conn, tokens)
    finally:
        await conn.close()


def noted(n: int = 1, text: str = "") -> SegmentDeleted:
    """A numbered event that changes no read model (a segment that never existed is deleted):
    for tests of the log itself, where what the events say does not matter."""
    return SegmentDeleted(segment_id=n, name=text)


def recorded(
    event: DomainEvent,
    position: int = 1,
    *,
    stream: tuple[str, str] = ("test", "1"),
    version: int | None = None,
    at: datetime | None = None,
    metadata: Metadata = TEST_ACTOR,
) -> RecordedEvent:
    """An event as the log hands it out, made in memory (no database): for code that reads
    records. Its stream version is its position unless `version` says otherwise."""
    return RecordedEvent(
        position=position,
        stream_type=stream[0],
        stream_key=stream[1],
        stream_version=position if version is None else version,
        event_id=uuid.uuid4(),
        recorded_at=at or datetime.now(UTC),
        metadata=metadata,
        event=event,
    )


async def append(
    conn: Conn,
    events: list[DomainEvent] | None = None,
    *,
    stream: tuple[str, str] | None = None,
    expected: appends.Expected = "any",
    metadata: Metadata = TEST_ACTOR,
) -> list[RecordedEvent]:
    """Append in a transaction of its own, with the inline projections (and any expected
    stream version: the event store's own contract, below the write path's)."""
    async with conn.transaction():
        return await appends.append(
            conn,
            stream or ("test", uuid.uuid4().hex),
            expected,
            events or [noted()],
            metadata,
            inline=apply_inline,
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
    events: list[DomainEvent] = [
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


# --- the admin API: requests and what their answers must be -----------------------------------

FEATURES = "/api/admin/projects/default/features"
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")  # a timestamp as answers write it


async def ok(resp: Any, *statuses: int) -> Any:
    """The answer's JSON body (None when it has none), once its status is one of `statuses`
    (200 or 201 when none is given)."""
    assert resp.status in (statuses or (200, 201)), (resp.status, await resp.text())
    if resp.status == 204 or not resp.content_type.endswith("json"):
        return None
    return await resp.json()


def error_body(body: Any, name: str) -> str:
    """An error's body: exactly an id, a name (this one) and a message (a 401 of the admin API
    to a request without an Authorization header also the sign-in hints, a 409 the message as
    Unleash's `details`, a weak password the rules it breaks); the message."""
    assert isinstance(body, dict)
    assert body["name"] == name
    extra = {key: value for key, value in body.items() if key not in {"id", "name", "message"}}
    assert set(body) >= {"id", "name", "message"}
    if name == "AuthenticationRequired":
        assert extra in ({}, SIGN_IN_HINTS)
    elif name in {"NameExistsError", "ConflictError"}:  # a 409: Unleash's details, for its UI
        assert extra == {"details": [{"message": body["message"]}]}
    elif name == "OwaspValidationError":  # every rule broken, the first one the message
        (detail,) = extra["details"]
        assert detail["message"] == body["message"] == detail["validationErrors"][0]
    else:
        assert extra == {}
    return str(body["message"])


async def error(resp: Any, status: int, name: str) -> str:
    """An error answer of this status and name; its message."""
    assert resp.status == status, await resp.text()
    return error_body(await resp.json(), name)


async def create(
    client: Any, body: Any, project: str = "default", *, headers: dict[str, str] = ADMIN
) -> Any:
    """POST `body` to the project's flags; the answer, whatever it is."""
    return await client.post(f"/api/admin/projects/{project}/features", json=body, headers=headers)


async def create_flag(client: Any, name: str) -> int:
    """The status of creating the flag `name` in the default project."""
    resp = await create(client, {"name": name})
    return int(resp.status)


async def flag(client: Any, name: str, project: str = "default", **extra: Any) -> None:
    """A flag made through the admin API (200), with any other fields of its body."""
    await ok(await create(client, {"name": name, **extra}, project), 200)


async def api_token(
    client: Any, kind: str = "client", *, name: str | None = None, **fields: Any
) -> dict[str, Any]:
    """An API token made through the admin API (201): the whole answer, its secret among it.
    Named after its kind unless `name` says otherwise; its other fields (environment, projects,
    expiresAt) are the service's defaults unless given."""
    body = {"tokenName": name or kind, "type": kind, **fields}
    return dict(await ok(await client.post("/api/admin/api-tokens", json=body, headers=ADMIN), 201))


def gzipped_zeros(chunk: int, chunks: int = 64) -> bytes:
    """`chunks` times `chunk` zero bytes in one gzip member (a body that inflates far past its
    size), compressed a chunk at a time."""
    packer = zlib.compressobj(9, wbits=31)
    return b"".join(packer.compress(bytes(chunk)) for _ in range(chunks)) + packer.flush()


async def event_count(app: web.Application, event_type: str | None = None) -> int:
    """Events in the log (of this type). Without a type, tokens' use aside: the service writes
    it in the background (service.token_usage), whenever a tick falls."""
    async with app[POOL].acquire() as conn:
        if event_type is None:
            return int(
                await conn.fetchval(
                    "SELECT count(*) FROM events WHERE stream_type <> 'token-usage'"
                )
            )
        return int(await conn.fetchval("SELECT count(*) FROM events WHERE type = $1", event_type))


async def head(app: web.Application) -> int:
    """The log's head: the position of its last event."""
    async with app[POOL].acquire() as conn:
        return await eventlog.head(conn)


# --- accounts: through the admin API, or appended as events -----------------------------------

USERS = "/api/admin/user-admin"
INACTIVE = f"{USERS}/inactive"
DELETE_INACTIVE = f"{INACTIVE}/delete"
LOGIN = "/auth/simple/login"
STRONG = "Str0ng!Passw0rd#2026"  # a password the policy accepts
ROOT_ROLES = [
    {
        "id": 1,
        "type": "root",
        "name": "Admin",
        "description": "Users with the root admin role have superuser access to Unleash and "
        "can perform any operation within the Unleash platform.",
    },
    {
        "id": 2,
        "type": "root",
        "name": "Editor",
        "description": "Users with the root editor role have access to most features in "
        "Unleash, but can not manage users and roles in the root scope. Editors will be added "
        "as project owners when creating projects and get superuser rights within the context "
        "of these projects. Users with the editor role will also get access to most permissions "
        "on the default project by default.",
    },
    {
        "id": 3,
        "type": "root",
        "name": "Viewer",
        "description": "Users with the root viewer role can only read root resources in Unleash. "
        "Viewers can be added to specific projects as project members. Users with the viewer "
        "role may not view API tokens.",
    },
]


async def create_user(client: Any, body: dict[str, Any] | None = None) -> dict[str, Any]:
    resp = await client.post(USERS, json={"rootRole": 3, **(body or {})}, headers=ADMIN)
    assert resp.status == 201, await resp.text()
    created: dict[str, Any] = await resp.json()
    return created


async def make_account(app: web.Application, **fields: Any) -> Account:
    async with app[POOL].acquire() as conn:
        return await account(conn, **fields)


def gravatar(key: str) -> str:
    return (
        f"https://gravatar.com/avatar/{hashlib.sha256(key.encode()).hexdigest()}?s=42&d=retro&r=g"
    )


async def sign_in(client: Any, username: str, password: str = STRONG) -> tuple[Any, str]:
    """The response and the session cookie's value (empty when none was set)."""
    resp = await client.post(LOGIN, json={"username": username, "password": password})
    client.session.cookie_jar.clear()  # tests send the cookie they mean, explicitly
    cookie = resp.cookies.get(auth.SESSION_COOKIE)
    return resp, cookie.value if cookie is not None else ""


def session(cookie: str) -> dict[str, str]:
    return {"Cookie": f"{auth.SESSION_COOKIE}={cookie}"}


async def sign_in_events(app: web.Application, user_id: int) -> list[tuple[str, Any, Any]]:
    """(type, attempts, login_attempts) of the account's sign-in events, in log order."""
    async with app[POOL].acquire() as conn:
        rows = await conn.fetch(
            "SELECT type, (data->>'attempts')::int AS attempts,"
            " (data->>'login_attempts')::int AS login_attempts FROM events"
            " WHERE stream_type = 'user' AND stream_key = $1 AND type LIKE 'UserSign%'"
            " ORDER BY position",
            str(user_id),
        )
    return [(r["type"], r["attempts"], r["login_attempts"]) for r in rows]


def in_days(days: float) -> str:
    return (datetime.now(UTC) + timedelta(days=days)).isoformat()


def ago(days: float) -> datetime:
    return datetime.now(UTC) - timedelta(days=days)


async def person(
    app: web.Application,
    *,
    created: float = 400,
    seen: float | None = None,
    token_seen: float | None = None,
    service: bool = False,
    username: str | None = None,
) -> Account:
    """An account created `created` days ago, last signed in `seen` days ago (None: never),
    whose one token was last used `token_seen` days ago (None: never)."""
    async with app[POOL].acquire() as conn:
        made = await account(
            conn, role=3, service=service, created_at=ago(created), username=username
        )
        if seen is not None:
            signed_in = UserSignedIn(
                user_id=made.id,
                seen_at=ago(seen),
                session_hash=f"{made.id:064x}",
                session_expires_at=ago(seen) + timedelta(hours=48),
            )
            await append(conn, [signed_in], stream=("user", str(made.id)))
        if token_seen is not None:
            token_id = await conn.fetchval(
                "SELECT id FROM personal_access_tokens WHERE user_id = $1", made.id
            )
            used = PersonalAccessTokensSeen(
                seen=[TokenUse(token_id=token_id, seen_at=ago(token_seen))]
            )
            await append(conn, [used], stream=("token-usage", "personal-access-tokens"))
    return made


# --- a flag's authors, as its page shows them (createdBy, collaborators) -----------------------


def collaborator(
    user_id: int, name: str, email: str | None = None, username: str | None = None
) -> dict[str, Any]:
    """A flag's creator or collaborator as answers show one (-42: any API token)."""
    return {"id": user_id, "name": name, "imageUrl": image_url(email, username, user_id)}


# The seeded admin token (named `admin` at bootstrap) as a flag's author.
ADMIN_AUTHOR = collaborator(-42, "admin")
