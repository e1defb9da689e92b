"""Response bodies of the account routes (the user record of docs/behavior.md, "User records";
service accounts, personal access tokens, inactive users, search), built here and only here
from read-model rows."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from service.auth import ROOT_ROLES
from service.avatars import image_url

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    import asyncpg


def _account_fields(row: asyncpg.Record) -> dict[str, Any]:
    return {
        "id": row["id"],
        "name": row["name"],
        "email": row["email"],
        "username": row["username"],
        "image_url": image_url(row["email"], row["username"], row["id"]),
        "seen_at": row["seen_at"],
        "login_attempts": row["login_attempts"],
        "created_at": row["created_at"],
        "is_api": False,
        "root_role": row["root_role"],
        "account_type": row["account_type"],
        "email_sent": False,
    }


class _Account(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """What the records of people and service accounts share. As in Unleash, a name, e-mail or
    username that is not set is left out (`email` is a string, never null: docs/behavior.md,
    "User records"); every other field is always there."""

    id: int
    name: str | None = None
    email: str | None = None
    username: str | None = None
    image_url: str
    seen_at: datetime | None
    login_attempts: int
    created_at: datetime
    is_api: bool = msgspec.field(name="isAPI")
    root_role: int
    account_type: str
    email_sent: bool


class User(_Account, frozen=True, kw_only=True):
    """A user (Unleash's user record)."""

    permissions: list[str]
    scim_id: None

    @classmethod
    def from_row(cls, row: asyncpg.Record, permissions: Sequence[str] = ()) -> User:
        # Field by field rather than through _account_fields: a search builds up to a thousand.
        email, username, account_id = row["email"], row["username"], row["id"]
        return cls(
            id=account_id,
            name=row["name"],
            email=email,
            username=username,
            image_url=image_url(email, username, account_id),
            seen_at=row["seen_at"],
            login_attempts=row["login_attempts"],
            created_at=row["created_at"],
            is_api=False,
            root_role=row["root_role"],
            account_type=row["account_type"],
            email_sent=False,
            permissions=list(permissions),
            scim_id=None,
        )


class ServiceAccount(_Account, frozen=True, kw_only=True):
    """A service account: the user record without `permissions` and `scimId`."""

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> ServiceAccount:
        return cls(**_account_fields(row))


class RootRole(msgspec.Struct, frozen=True, kw_only=True):
    id: int
    type: Literal["root"]
    name: str
    description: str


def root_roles(role_ids: Iterable[int] | None = None) -> list[RootRole]:
    """Every root role, or the ones with these ids, in id order."""
    wanted = None if role_ids is None else set(role_ids)
    return [
        RootRole(id=role.id, type="root", name=role.name, description=role.description)
        for role_id, role in sorted(ROOT_ROLES.items())
        if wanted is None or role_id in wanted
    ]


class RoleList(msgspec.Struct, frozen=True, kw_only=True):
    version: int = 1
    roles: list[RootRole]


class UserList(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The users of a list or a search, with the root roles they refer to."""

    users: list[User]
    root_roles: list[RootRole]


class UserPage(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A UserList whose users are already encoded (service/users/records.py): the same JSON."""

    users: msgspec.Raw  # the JSON array of the page's encoded records
    root_roles: list[RootRole]


class ServiceAccountList(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    service_accounts: list[ServiceAccount]
    root_roles: list[RootRole]


class ApiUser(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Who calls with an API token: no account behind it."""

    is_api: bool = msgspec.field(name="isAPI")
    username: str
    permissions: list[str]


class Permission(msgspec.Struct, frozen=True, kw_only=True):
    permission: str


class Feedback(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A feedback prompt of the web UI a person answered (Unleash's feedbackResponseSchema)."""

    user_id: int
    feedback_id: str
    never_show: bool
    given: datetime

    @classmethod
    def from_row(cls, user_id: int, row: asyncpg.Record) -> Feedback:
        return cls(
            user_id=user_id,
            feedback_id=row["feedback_id"],
            never_show=row["never_show"],
            given=row["given"],
        )


class SplashAnswer(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A splash screen seen (Unleash's splashResponseSchema)."""

    user_id: int
    splash_id: str
    seen: bool


class Me(msgspec.Struct, frozen=True, kw_only=True):
    """GET /api/admin/user: the caller, in Unleash's shape (a person or service account), with
    the feedback prompts they answered and the splash screens they saw (`{id: true}`)."""

    user: User
    permissions: list[Permission]
    feedback: list[Feedback]
    splash: dict[str, bool]


class ApiMe(msgspec.Struct, frozen=True, kw_only=True):
    """GET /api/admin/user called with an API token (no feedback, no splash screens)."""

    user: ApiUser
    permissions: list[Permission]
    feedback: list[Feedback]
    splash: dict[str, bool]


class Profile(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """GET /api/admin/user/profile (Unleash's profileSchema)."""

    root_role: RootRole | None  # None only for a root role this version does not know
    projects: list[str]
    subscriptions: list[str]
    features: list[str]


class InactiveUser(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    id: int
    name: str | None
    email: str | None
    username: str | None
    seen_at: datetime | None
    created_at: datetime
    pat_seen_at: datetime | None

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> InactiveUser:
        return cls(
            id=row["id"],
            name=row["name"],
            email=row["email"],
            username=row["username"],
            seen_at=row["seen_at"],
            created_at=row["created_at"],
            pat_seen_at=row["pat_seen_at"],
        )


class InactiveUserList(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    version: int = 1
    inactive_users: list[InactiveUser]


class PersonalAccessToken(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A personal access token: `secret` is a masked hint, except in the answer that creates
    the token (the only place the secret ever appears)."""

    id: int
    secret: str
    created_at: datetime
    seen_at: datetime | None
    user_id: int
    description: str
    expires_at: datetime

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> PersonalAccessToken:
        return cls(
            id=row["id"],
            secret=row["secret_hint"],
            created_at=row["created_at"],
            seen_at=row["seen_at"],
            user_id=row["user_id"],
            description=row["description"],
            expires_at=row["expires_at"],
        )


class PersonalAccessTokenList(msgspec.Struct, frozen=True, kw_only=True):
    pats: list[PersonalAccessToken]

    @classmethod
    def from_rows(cls, rows: Sequence[asyncpg.Record]) -> PersonalAccessTokenList:
        return cls(pats=[PersonalAccessToken.from_row(row) for row in rows])


class AdminCount(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Admins (root role Admin) by kind (Unleash's adminCountSchema)."""

    password: int
    no_password: int
    service: int


class AccessUser(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """An account as the access overview names it: what is not set is left out, as in Unleash."""

    id: int
    name: str | None = None
    email: str | None = None
    username: str | None = None
    account_type: str

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> AccessUser:
        return cls(
            id=row["id"],
            name=row["name"],
            email=row["email"],
            username=row["username"],
            account_type=row["account_type"],
        )


class Access(msgspec.Struct, frozen=True, kw_only=True):
    """GET /api/admin/user-admin/access: every account; no groups (an Enterprise feature)."""

    users: list[AccessUser]
    groups: list[dict[str, Any]]  # always empty


class PermissionHeld(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    id: int
    name: str
    display_name: str
    type: str
    has_permission: bool


class EnvironmentPermissionHeld(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    environment: str
    id: int
    name: str
    display_name: str
    type: str
    has_permission: bool


class PermissionsOverview(msgspec.Struct, frozen=True, kw_only=True):
    root: list[PermissionHeld]
    project: list[PermissionHeld]
    environment: list[EnvironmentPermissionHeld]


class UserPermissions(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """GET /api/admin/user-admin/:id/permissions (Unleash's userAccessOverviewSchema)."""

    overview: PermissionsOverview
    user: User
    root_role: RootRole
    project_roles: list[dict[str, Any]]  # always empty: a root role holds in every project


class RoleInProject(msgspec.Struct, frozen=True, kw_only=True):
    """A role the caller holds in a project: their root role, which holds in every project."""

    id: int
    name: str
    type: Literal["root"]
    project: str
    description: str


class UserRoles(msgspec.Struct, frozen=True, kw_only=True):
    version: int = 1
    roles: list[RoleInProject]


class ResetLink(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    reset_password_url: str


class TokenUser(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Whom a reset link is for (Unleash's tokenUserSchema)."""

    id: int
    name: str
    email: str
    token: str
    created_by: str | None
    role: RootRole
