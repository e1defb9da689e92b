"""Tokens, hashing, principals and permissions."""

from __future__ import annotations

import hashlib
import secrets
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final, Literal

import msgspec

from eventlog.events.base import Metadata

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    import asyncpg

    from eventlog.connections import Conn

ActorKind = Literal["api-token", "user", "service-account", "system"]
# The tokens whose last use is recorded (service.token_usage).
TokenKind = Literal["personal-access-token", "api-token"]

# Permissions. ADMIN implies every other one; READ is held by any admin-API principal.
ADMIN: Final = "ADMIN"
READ: Final = "READ"
CREATE_FEATURE: Final = "CREATE_FEATURE"
UPDATE_FEATURE: Final = "UPDATE_FEATURE"
DELETE_FEATURE: Final = "DELETE_FEATURE"
CREATE_PROJECT: Final = "CREATE_PROJECT"
UPDATE_PROJECT: Final = "UPDATE_PROJECT"
DELETE_PROJECT: Final = "DELETE_PROJECT"
CREATE_SEGMENT: Final = "CREATE_SEGMENT"
UPDATE_SEGMENT: Final = "UPDATE_SEGMENT"
DELETE_SEGMENT: Final = "DELETE_SEGMENT"
CREATE_TAG_TYPE: Final = "CREATE_TAG_TYPE"
UPDATE_TAG_TYPE: Final = "UPDATE_TAG_TYPE"
DELETE_TAG_TYPE: Final = "DELETE_TAG_TYPE"
CREATE_STRATEGY: Final = "CREATE_STRATEGY"
UPDATE_STRATEGY: Final = "UPDATE_STRATEGY"
DELETE_STRATEGY: Final = "DELETE_STRATEGY"
CREATE_CONTEXT_FIELD: Final = "CREATE_CONTEXT_FIELD"
UPDATE_CONTEXT_FIELD: Final = "UPDATE_CONTEXT_FIELD"
DELETE_CONTEXT_FIELD: Final = "DELETE_CONTEXT_FIELD"
UPDATE_APPLICATION: Final = "UPDATE_APPLICATION"
DELETE_APPLICATION: Final = "DELETE_APPLICATION"
CREATE_ADDON: Final = "CREATE_ADDON"
UPDATE_ADDON: Final = "UPDATE_ADDON"
DELETE_ADDON: Final = "DELETE_ADDON"
# Reading the client and frontend API tokens (an admin reads the admin tokens too).
READ_API_TOKEN: Final = "READ_API_TOKEN"
PUBLIC: Final = "PUBLIC"  # declared by routes that need no principal at all
# The client API (SDKs: flags to evaluate, registration, metrics): client tokens hold it, and
# admin tokens through ADMIN, as in Unleash. The frontend API: frontend tokens (and ADMIN).
CLIENT: Final = "CLIENT"
FRONTEND: Final = "FRONTEND"
# Held by people only (a session or their own personal access token), never by API tokens or
# service accounts: managing one's own personal access tokens.
OWN_ACCOUNT: Final = "OWN_ACCOUNT"

ADMIN_PERMISSIONS: Final = frozenset({ADMIN, READ})
NO_PERMISSIONS: Final = frozenset[str]()
TOKEN_PERMISSIONS: Final = {
    "admin": ADMIN_PERMISSIONS,
    "client": frozenset({CLIENT}),
    "frontend": frozenset({FRONTEND}),
}


class RootRole(msgspec.Struct, frozen=True, kw_only=True):
    id: int
    name: str
    description: str
    permissions: frozenset[str]

    def json(self) -> dict[str, object]:
        return {"id": self.id, "type": "root", "name": self.name, "description": self.description}


ROOT_ROLES: Final = {
    role.id: role
    for role in (
        RootRole(
            id=1,
            name="Admin",
            description="Users with the root admin role have superuser access to Unleash and "
            "can perform any operation within the Unleash platform.",
            permissions=ADMIN_PERMISSIONS,
        ),
        RootRole(
            id=2,
            name="Editor",
            description="Users with the root editor role have access to most features in "
            "Unleash, but can not manage users and roles in the root scope. Editors will be "
            "added as project owners when creating projects and get superuser rights within "
            "the context of these projects. Users with the editor role will also get access to "
            "most permissions on the default project by default.",
            permissions=frozenset(
                {
                    READ,
                    CREATE_FEATURE,
                    UPDATE_FEATURE,
                    DELETE_FEATURE,
                    CREATE_PROJECT,
                    UPDATE_PROJECT,
                    CREATE_SEGMENT,
                    UPDATE_SEGMENT,
                    DELETE_SEGMENT,
                    CREATE_TAG_TYPE,
                    UPDATE_TAG_TYPE,
                    DELETE_TAG_TYPE,
                    # Unleash's Editor holds these too (its role seeding).
                    CREATE_STRATEGY,
                    UPDATE_STRATEGY,
                    DELETE_STRATEGY,
                    READ_API_TOKEN,
                    CREATE_CONTEXT_FIELD,
                    UPDATE_CONTEXT_FIELD,
                    DELETE_CONTEXT_FIELD,
                    UPDATE_APPLICATION,
                    DELETE_APPLICATION,
                    CREATE_ADDON,
                    UPDATE_ADDON,
                    DELETE_ADDON,
                }
            ),
        ),
        RootRole(
            id=3,
            name="Viewer",
            description="Users with the root viewer role can only read root resources in "
            "Unleash. Viewers can be added to specific projects as project members. Users with "
            "the viewer role may not view API tokens.",
            permissions=frozenset({READ}),
        ),
    )
}


class Principal(msgspec.Struct, frozen=True, kw_only=True):
    """Who is calling, resolved once per request."""

    kind: ActorKind
    id: str
    name: str
    permissions: frozenset[str]
    account_id: int | None = None  # users and service accounts
    pat_id: int | None = None  # when authenticated by a personal access token
    api_token_id: int | None = None  # when authenticated by an API token
    # What an API token may see of the flags: its environment and projects ("*": all).
    environment: str = "*"
    projects: tuple[str, ...] = ("*",)
    expires_at: datetime | None = None  # an API token's expiry (it is refused from then on)

    def can(self, permission: str) -> bool:
        if permission == OWN_ACCOUNT:  # a person's own business: ADMIN does not imply it
            return OWN_ACCOUNT in self.permissions
        return permission == PUBLIC or ADMIN in self.permissions or permission in self.permissions

    def metadata(self, request_id: str | None) -> Metadata:
        return Metadata(
            actor_id=self.id, actor_name=self.name, actor_kind=self.kind, request_id=request_id
        )


def hash_secret(secret: str) -> str:
    """Tokens are stored and looked up only by this hash (hex sha256).

    Header values that were not UTF-8 arrive with surrogate escapes; they hash like any
    other unknown token instead of failing.
    """
    return hashlib.sha256(secret.encode("utf-8", "surrogateescape")).hexdigest()


HINT_REVEALS_FROM = 32  # and only long ones show their first 4 characters
HINT_MASK: Final = "*" * 8  # how every hint ends


def secret_hint(secret: str, *, reveal: bool = True) -> str:
    """A masked hint that lets a person recognise a token without revealing it.

    The scope before the first `.` is shown (`*:*`, `default:development`, `user`); of the
    secret itself, only the first 4 characters of one we generated (64 hex digits, so 4 of
    them give nothing away). A secret a person chose (INIT_ADMIN_API_TOKENS) shows nothing:
    `reveal=False`.
    """
    separator = "." if "." in secret else ":"
    scope, _, rest = secret.partition(separator)
    shown = rest[:4] if reveal and len(rest) >= HINT_REVEALS_FROM else ""
    return f"{scope}{separator}{shown}{HINT_MASK}"


def new_secret() -> str:
    """256 random bits, hex encoded."""
    return secrets.token_hex(32)


def token_from_header(value: str | None) -> str | None:
    """The token in an Authorization header; a `Bearer ` prefix (any case) is accepted."""
    if not value:
        return None
    token = value.strip()
    if token[:7].lower() == "bearer ":
        token = token[7:].strip()
    return token or None


PAT_PREFIX: Final = "user:"
SESSION_COOKIE: Final = "unleash-session"  # the name Unleash uses
# One indexed lookup per request, whichever kind of credential it is (client and frontend
# tokens' answers are then kept a while: CachedTokens).
RESOLVE_API_TOKEN = """
SELECT id, token_name, type, environment, projects, expires_at FROM api_tokens
WHERE secret_hash = $1
"""
RESOLVE_PAT = """
SELECT p.id AS pat_id, p.expires_at, u.id, u.account_type, u.name, u.username, u.email, u.root_role
FROM personal_access_tokens p JOIN users u ON u.id = p.user_id
WHERE p.secret_hash = $1
"""
RESOLVE_SESSION = """
SELECT s.expires_at, u.id, u.account_type, u.name, u.username, u.email, u.root_role
FROM sessions s JOIN users u ON u.id = s.user_id
WHERE s.session_hash = $1
"""


def _expired(expires_at: datetime | None) -> bool:
    return expires_at is not None and expires_at <= datetime.now(UTC)


async def resolve_token(conn: Conn | asyncpg.Pool, token: str) -> Principal | None:
    """An API token or a personal access token; None for unknown or expired ones."""
    if token.startswith(PAT_PREFIX):
        row = await conn.fetchrow(RESOLVE_PAT, hash_secret(token))
        if row is None or _expired(row["expires_at"]):
            return None
        return account_principal(row, pat_id=row["pat_id"])
    row = await conn.fetchrow(RESOLVE_API_TOKEN, hash_secret(token))
    if row is None or _expired(row["expires_at"]):
        return None
    return Principal(
        kind="api-token",
        id=f"api-token:{row['id']}",
        name=row["token_name"],
        api_token_id=row["id"],
        permissions=TOKEN_PERMISSIONS[row["type"]],
        environment=row["environment"],
        projects=tuple(row["projects"]),
        expires_at=row["expires_at"],
    )


API_TOKEN_STREAM: Final = "api-token"  # the stream type of API tokens' events
CACHED_SECONDS: Final = 5.0
CACHED_MOST: Final = 10_000
# Only tokens that hold nothing but these are kept: client and frontend tokens (SDKs' polls).
CACHED_PERMISSIONS: Final = frozenset({CLIENT, FRONTEND})


class CachedTokens:
    """Client and frontend tokens' principals by the hash of their secret, so that an SDK's
    poll costs no database round trip. Wraps a resolver (`auth.resolve_token`); admin tokens,
    personal access tokens and unknown tokens always go to it, so that an admin credential
    deleted on another replica fails here from the deletion's commit on (that replica's
    `forget` reaches this one only milliseconds later: docs/operations.md).

    Revocation: `forget` empties the cache; it is called at once when this process commits an
    event of an API token (service/app.py), and when the client feed sees another process's
    (woken by the log's NOTIFY, within milliseconds). An entry also lives CACHED_SECONDS at
    most, whatever happened, and never past the token's expiry. A lookup that was under way
    while the cache was emptied does not put its (perhaps stale) answer in.
    """

    def __init__(
        self,
        resolve: Callable[[asyncpg.Pool, str], Awaitable[Principal | None]],
        seconds: float = CACHED_SECONDS,
    ) -> None:
        self._resolve = resolve
        self._seconds = seconds
        self._entries: dict[str, tuple[Principal, float]] = {}  # hash -> (it, until monotonic)
        self._generation = 0

    async def __call__(self, pool: asyncpg.Pool, token: str) -> Principal | None:
        if token.startswith(PAT_PREFIX):
            return await self._resolve(pool, token)
        key = hash_secret(token)
        entry = self._entries.get(key)
        if entry is not None:
            if entry[1] > time.monotonic():
                return entry[0]
            del self._entries[key]
        generation = self._generation
        principal = await self._resolve(pool, token)
        if principal is None or not _cached(principal):
            return principal
        if generation == self._generation:  # not forgotten meanwhile
            self._keep(key, principal)
        return principal

    def _keep(self, key: str, principal: Principal) -> None:
        now = time.monotonic()
        until = now + self._seconds
        if principal.expires_at is not None:
            left = (principal.expires_at - datetime.now(UTC)).total_seconds()
            until = min(until, now + left)
        if len(self._entries) >= CACHED_MOST:
            self._entries.pop(next(iter(self._entries)))
        self._entries[key] = (principal, until)

    def forget(self) -> None:
        """Every token is looked up again (one was created, changed or revoked)."""
        self._entries.clear()
        self._generation += 1


def _cached(principal: Principal) -> bool:
    """A client or frontend token (not an admin token, nor a test's principal)."""
    return principal.kind == "api-token" and principal.permissions <= CACHED_PERMISSIONS


async def resolve_session(conn: Conn | asyncpg.Pool, cookie: str) -> Principal | None:
    """The person signed in with this session cookie; None for unknown or expired sessions."""
    row = await conn.fetchrow(RESOLVE_SESSION, hash_secret(cookie))
    if row is None or _expired(row["expires_at"]):
        return None
    return account_principal(row)


def account_principal(row: asyncpg.Record, *, pat_id: int | None = None) -> Principal:
    """A user or service account acts with its root role's permissions."""
    role = ROOT_ROLES.get(row["root_role"])
    permissions = role.permissions if role is not None else NO_PERMISSIONS
    person = row["account_type"] == "User"
    if person:
        permissions |= {OWN_ACCOUNT}
    return Principal(
        kind="user" if person else "service-account",
        id=f"{'user' if person else 'service-account'}:{row['id']}",
        name=row["name"] or row["username"] or row["email"] or str(row["id"]),
        permissions=permissions,
        account_id=row["id"],
        pat_id=pat_id,
    )


# GET /api/admin/user shows the caller's permissions by Unleash's names, which its web UI checks
# to enable its buttons. Where Unleash splits one of ours into finer ones, ours stands for all
# of them: UPDATE_FEATURE is what our routes for environments, strategies, variants and
# dependencies of a flag declare. Any other permission is shown by its own name (ours are
# Unleash's names).
UNLEASH_PERMISSIONS: Final = {
    READ_API_TOKEN: ("READ_CLIENT_API_TOKEN", "READ_FRONTEND_API_TOKEN"),
    UPDATE_FEATURE: (
        UPDATE_FEATURE,
        "UPDATE_FEATURE_ENVIRONMENT",
        "CREATE_FEATURE_STRATEGY",
        "UPDATE_FEATURE_STRATEGY",
        "DELETE_FEATURE_STRATEGY",
        "UPDATE_FEATURE_VARIANTS",
        "UPDATE_FEATURE_ENVIRONMENT_VARIANTS",
        "UPDATE_FEATURE_DEPENDENCY",
    ),
}
# Held but never shown: reading (everyone may), a person's own account, the SDKs' APIs.
UNSHOWN_PERMISSIONS: Final = frozenset({READ, OWN_ACCOUNT, CLIENT, FRONTEND, PUBLIC})


def unleash_permissions(held: frozenset[str]) -> list[str]:
    """The permissions a principal holds, by Unleash's names, sorted: `ADMIN` alone for an
    admin (Unleash's UI takes it for every other one); none for a viewer."""
    if ADMIN in held:
        return [ADMIN]
    return sorted(
        {name for p in held - UNSHOWN_PERMISSIONS for name in UNLEASH_PERMISSIONS.get(p, (p,))}
    )
