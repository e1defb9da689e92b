"""A person's own roles and password; the admin's password checks, reset links, admin count,
access overview and a user's permissions; and the public routes of the web UI's reset-password
page, which a reset link opens (docs/behavior.md, "Reset links")."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

from service import auth
from service.appkeys import POOL, REQUEST_ID
from service.errors import (
    InvalidToken,
    NotFound,
    PasswordMismatch,
    TooManyRequests,
    ValidationError,
    WeakPassword,
)
from service.http.answers import empty, json_response
from service.http.requests import actor, principal, query_param, read_json, unit_of_work
from service.http.routes import NUMBERED, Param, Route
from service.users import domain, passwords, permissions, queries
from service.users.commands import (
    ChangeOwnPassword,
    CheckPassword,
    RequestPasswordReset,
    ResetEmail,
    ResetPassword,
)
from service.users.failures import account_metadata
from service.users.handlers.sessions import set_session_cookie
from service.users.handlers.users import user_id_or_404
from service.users.responses import (
    Access,
    AccessUser,
    AdminCount,
    EnvironmentPermissionHeld,
    PermissionHeld,
    PermissionsOverview,
    ResetLink,
    RoleInProject,
    RootRole,
    TokenUser,
    User,
    UserPermissions,
    UserRoles,
    root_roles,
)

if TYPE_CHECKING:
    from aiohttp import web

    from eventlog.events.users import PasswordChanged, UserSignedIn

# Unleash gives a root role's assignment the project `default`, whatever project was asked for.
ROOT_ROLE_PROJECT: Final = "default"


def _own_id(request: web.Request) -> int:
    account_id = principal(request).account_id
    assert account_id is not None  # OWN_ACCOUNT: a person
    return account_id


def _role(role_id: int) -> RootRole:
    roles = root_roles([role_id])
    if not roles:  # a root role this version does not know: none of its permissions
        return RootRole(id=role_id, type="root", name=str(role_id), description="")
    return roles[0]


# --- one's own --------------------------------------------------------------------------------


async def own_roles(request: web.Request) -> web.Response:
    """The caller's roles in a project: their root role, which holds in every project."""
    project = query_param(request, "projectId")
    if not project:
        raise ValidationError("projectId is required - at `projectId`")
    row = await request.app[POOL].fetchrow(queries.GET_ACCOUNT, _own_id(request))
    if row is None:
        raise domain.user_missing(_own_id(request))
    role = _role(row["root_role"])
    return json_response(
        UserRoles(
            roles=[
                RoleInProject(
                    id=role.id,
                    name=role.name,
                    type="root",
                    project=ROOT_ROLE_PROJECT,
                    description=role.description,
                )
            ]
        )
    )


async def change_own_password(request: web.Request) -> web.Response:
    """A person's new password, given their current one. Every session of theirs ends with
    it but the one that asked, which goes on as a new session (a new cookie)."""
    user_id = _own_id(request)
    cmd = await read_json(request, ChangeOwnPassword)
    old = domain.own_password_request(cmd.password, cmd.confirm_password, cmd.old_password)
    passwords.check_strength(cmd.password)
    hashing = request.app[passwords.HASHING]
    stored = await request.app[POOL].fetchval(queries.PASSWORD_HASH, user_id)
    old_ok = await hashing.verify(stored, old)
    # The new hash is only worth its cost when the old password was right (else refused below).
    new_hash = await hashing.hash(cmd.password) if old_ok else ""
    who = principal(request)
    by_session = who.pat_id is None and bool(request.cookies.get(auth.SESSION_COOKIE))
    session = auth.new_secret() if by_session else None
    async with unit_of_work(request) as uow:
        account = await queries.lock_account(uow.conn, user_id)
        changed = domain.change_own_password(
            account,
            user_id=user_id,
            old_password_ok=old_ok,
            hash_unchanged=await uow.conn.fetchval(queries.PASSWORD_HASH, user_id) == stored,
            password_hash=new_hash,
        )
        events: list[PasswordChanged | UserSignedIn] = [changed]
        if session is not None:
            events.append(domain.continue_session(user_id, auth.hash_secret(session), _now()))
        await uow.append(domain.user_stream(user_id), events, actor(request))
    response = empty()
    if session is not None:
        set_session_cookie(response, request, session)
    return response


# --- admins -----------------------------------------------------------------------------------


async def validate_password(request: web.Request) -> web.Response:
    cmd = await read_json(request, CheckPassword)
    passwords.check_strength(cmd.password)
    return empty()


async def check_password_strength(request: web.Request) -> web.Response:
    """The same check for anyone: the reset-password page shows the rules a password breaks."""
    return await validate_password(request)


async def request_reset(request: web.Request) -> web.Response:
    """A reset link for a person, answered (nothing is mailed); its token is stored as its
    hash only, so this answer is the only place the link ever appears."""
    cmd = await read_json(request, RequestPasswordReset)
    token = auth.new_secret()
    async with unit_of_work(request) as uow:
        if isinstance(cmd.id, int):
            user_id: int | None = cmd.id
        else:
            user_id = await uow.conn.fetchval(queries.PERSON_BY_EMAIL_OR_USERNAME, cmd.id.strip())
        account = None if user_id is None else await queries.lock_account(uow.conn, user_id)
        event = domain.request_password_reset(
            account, token_hash=auth.hash_secret(token), now=_now()
        )
        await uow.append(domain.user_stream(event.user_id), [event], actor(request))
    url = f"{request.url.origin()}/reset-password?token={token}"
    return json_response(ResetLink(reset_password_url=url))


async def admin_count(request: web.Request) -> web.Response:
    row = await request.app[POOL].fetchrow(queries.ADMIN_COUNT)
    assert row is not None  # an aggregate without GROUP BY: always one row
    return json_response(
        AdminCount(password=row["password"], no_password=row["no_password"], service=row["service"])
    )


async def access(request: web.Request) -> web.Response:
    rows = await request.app[POOL].fetch(queries.ACCESS)
    return json_response(Access(users=[AccessUser.from_row(r) for r in rows], groups=[]))


async def user_permissions(request: web.Request) -> web.Response:
    """What a user may do: every Unleash permission of the root scope, of the project asked
    for (by default `default`) and of the environment asked for (none when it does not
    exist), each with whether the user's root role holds it here."""
    user_id = user_id_or_404(request.match_info["id"])
    environment = query_param(request, "environment")
    async with request.app[POOL].acquire() as conn:
        row = await conn.fetchrow(queries.GET_USER, user_id)
        if row is None:
            raise NotFound(domain.NO_USER)
        env_exists = bool(environment) and await conn.fetchval(
            queries.ENVIRONMENT_EXISTS, environment
        )
    held = permissions.held_names(row["root_role"])

    def has(name: str) -> bool:
        return held is None or name in held

    overview = PermissionsOverview(
        root=[
            PermissionHeld(id=i, name=n, display_name=d, type="root", has_permission=has(n))
            for i, n, d in permissions.ROOT
        ],
        project=[
            PermissionHeld(id=i, name=n, display_name=d, type="project", has_permission=has(n))
            for i, n, d in permissions.PROJECT
        ],
        environment=[
            EnvironmentPermissionHeld(
                environment=environment,
                id=i,
                name=n,
                display_name=d,
                type="environment",
                has_permission=has(n),
            )
            for i, n, d in permissions.ENVIRONMENT
            if environment and env_exists
        ],
    )
    return json_response(
        UserPermissions(
            overview=overview,
            user=User.from_row(row),
            root_role=_role(row["root_role"]),
            project_roles=[],
        )
    )


# --- the reset-password page (public) ---------------------------------------------------------


async def validate_reset_token(request: web.Request) -> web.Response:
    """Whom a reset link is for, while it holds; else one answer for unknown, used and expired."""
    token = query_param(request, "token") or ""
    async with request.app[POOL].acquire() as conn:
        link = await conn.fetchrow(queries.RESET_LINK, auth.hash_secret(token))
        row = None if link is None else await conn.fetchrow(queries.GET_USER, link["user_id"])
    if link is None or row is None or link["expires_at"] <= _now():
        raise InvalidToken(domain.INVALID_TOKEN)
    return json_response(
        TokenUser(
            id=row["id"],
            name=row["name"] or row["username"] or row["email"] or "",
            email=row["email"] or "",
            token=token,
            created_by=None,
            role=_role(row["root_role"]),
        )
    )


async def reset_with_token(request: web.Request) -> web.Response:
    """A new password with a reset link, which it uses up (its PasswordChanged ends the link)."""
    cmd = await read_json(request, ResetPassword)
    token_hash = auth.hash_secret(cmd.token)
    pool = request.app[POOL]
    link = await pool.fetchrow(queries.RESET_LINK, token_hash)
    if link is None or link["expires_at"] <= _now():  # before the strength rules and the hash
        raise InvalidToken(domain.INVALID_TOKEN)
    passwords.check_strength(cmd.password)
    password_hash = await request.app[passwords.HASHING].hash(cmd.password)
    user_id = link["user_id"]
    async with unit_of_work(request) as uow:
        account = await queries.lock_account(uow.conn, user_id)
        # Read again under the account's lock: a reset that committed meanwhile used the link.
        current = await uow.conn.fetchrow(queries.RESET_LINK, token_hash)
        event = domain.reset_password(
            account,
            link_user=None if current is None else current["user_id"],
            link_expires_at=None if current is None else current["expires_at"],
            password_hash=password_hash,
            now=_now(),
        )
        assert account is not None  # reset_password refuses an account that is gone
        who = account.name or account.username or account.email
        meta = account_metadata(account.id, who, request_id=request[REQUEST_ID])
        await uow.append(domain.user_stream(account.id), [event], meta)
    return empty()


async def reset_email(request: web.Request) -> web.Response:
    """Unleash mails a reset link here; this service mails nothing, and answers the same for
    every address, so that the route tells no one who has an account."""
    await read_json(request, ResetEmail)
    return empty()


def _now() -> datetime:
    return datetime.now(UTC)


PROJECT_ID: Final = Param("projectId", str, "The project whose roles are asked for", required=True)
PROJECT: Final = Param("project", str, "The project whose permissions are listed")
ENVIRONMENT: Final = Param("environment", str, "The environment whose permissions are listed")
TOKEN: Final = Param("token", str, "The token of a reset link")

ROUTES = [
    Route(
        "GET",
        "/api/admin/user/roles",
        own_roles,
        auth.OWN_ACCOUNT,
        ok={200: UserRoles},
        query=(PROJECT_ID,),
    ),
    Route(
        "POST",
        "/api/admin/user/change-password",
        change_own_password,
        auth.OWN_ACCOUNT,
        body=ChangeOwnPassword,
        errors=(WeakPassword, PasswordMismatch, TooManyRequests),
    ),
    Route(
        "POST",
        "/api/admin/user-admin/validate-password",
        validate_password,
        auth.READ,  # anyone signed in, as in Unleash: the rules are no secret
        body=CheckPassword,
        errors=(WeakPassword,),
    ),
    Route(
        "POST",
        "/api/admin/user-admin/reset-password",
        request_reset,
        auth.ADMIN,
        body=RequestPasswordReset,
        ok={200: ResetLink},
        errors=(NotFound,),
    ),
    Route(
        "GET", "/api/admin/user-admin/admin-count", admin_count, auth.ADMIN, ok={200: AdminCount}
    ),
    # Anyone signed in, as in Unleash (its project access dialogs list the people).
    Route("GET", "/api/admin/user-admin/access", access, auth.READ, ok={200: Access}),
    Route(
        "GET",
        "/api/admin/user-admin/{id:\\d+}/permissions",
        user_permissions,
        auth.ADMIN,
        ok={200: UserPermissions},
        query=(PROJECT, ENVIRONMENT),
        params=NUMBERED,
    ),
    Route(
        "GET",
        "/auth/reset/validate",
        validate_reset_token,
        auth.PUBLIC,
        ok={200: TokenUser},
        query=(TOKEN,),
        errors=(InvalidToken,),
    ),
    Route(
        "POST",
        "/auth/reset/password",
        reset_with_token,
        auth.PUBLIC,
        body=ResetPassword,
        errors=(InvalidToken, WeakPassword, TooManyRequests),
    ),
    Route(
        "POST",
        "/auth/reset/validate-password",
        check_password_strength,
        auth.PUBLIC,
        body=CheckPassword,
        errors=(WeakPassword,),
    ),
    Route("POST", "/auth/reset/password-email", reset_email, auth.PUBLIC, body=ResetEmail),
]
