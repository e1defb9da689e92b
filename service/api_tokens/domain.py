"""API tokens: pure decisions, no I/O."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Literal, cast

import msgspec

from eventlog.events.api_tokens import (
    ApiTokenCreated,
    ApiTokenDeleted,
    ApiTokenExpiryChanged,
    ApiTokensSeen,
    ApiTokenUse,
)
from service.auth import hash_secret, secret_hint
from service.errors import NotFound, ValidationError
from service.names import validate_name

if TYPE_CHECKING:
    from datetime import datetime

    from service.api_tokens.commands import CreateApiToken

TokenType = Literal["admin", "client", "frontend"]
TOKEN_TYPES = ("admin", "client", "frontend")
DEFAULT_ENVIRONMENT = "development"
MAX_LIFETIME = timedelta(days=36525)


def stream(token_id: int) -> tuple[str, str]:
    return ("api-token", str(token_id))


def token_name(cmd: CreateApiToken) -> str:
    name = cmd.token_name or cmd.username
    if name is None:
        raise ValidationError("Object missing required field `tokenName`")
    return name


def check_scope_exists(
    scope: tuple[TokenType, str, list[str]], *, environments: set[str], projects: set[str]
) -> None:
    """A client or frontend token names an environment and projects that exist."""
    _, environment, wanted = scope
    if environment != "*" and environment not in environments:
        raise ValidationError(f"Environment={environment} does not exist - at `$.environment`")
    for project in wanted:
        if project != "*" and project not in projects:
            raise ValidationError(f"Project={project} does not exist - at `$.projects`")


def token_scope(cmd: CreateApiToken) -> tuple[TokenType, str, list[str]]:
    """Validated (type, environment, projects) of a create request, Unleash's defaults applied."""
    token_type = cmd.type.lower()
    if token_type not in TOKEN_TYPES:
        raise ValidationError(f"type must be one of {', '.join(TOKEN_TYPES)} - at `$.type`")
    if token_type == "admin":
        return "admin", "*", ["*"]
    projects = list(dict.fromkeys(cmd.projects or ([cmd.project] if cmd.project else ["*"])))
    if "*" in projects:  # all projects: naming some of them as well changes nothing
        projects = ["*"]
    for i, project in enumerate(projects):
        if project != "*":
            validate_name(project, f"$.projects[{i}]", "Project")
    environment = cmd.environment or DEFAULT_ENVIRONMENT
    if environment != "*":
        validate_name(environment, "$.environment", "Environment")
    return cast("TokenType", token_type), environment, projects


def token_secret(token_type: TokenType, environment: str, projects: list[str], random: str) -> str:
    """Unleash's format: `<project>:<environment>.<random>`, `[]` for several projects."""
    if token_type == "admin":
        return f"*:*.{random}"
    project = projects[0] if len(projects) == 1 else "[]"
    return f"{project}:{environment}.{random}"


def issue_api_token(  # noqa: PLR0913 - every part of the new token is decided here
    *,
    token_id: int,
    name: str,
    scope: tuple[TokenType, str, list[str]],
    secret_hash: str,
    hint: str,
    now: datetime,
    expires_at: datetime | None,
) -> ApiTokenCreated:
    if expires_at is not None and expires_at <= now:
        raise ValidationError("expiresAt must be in the future - at `$.expiresAt`")
    if expires_at is not None and expires_at - now > MAX_LIFETIME:
        raise ValidationError("expiresAt must be within 100 years - at `$.expiresAt`")
    token_type, environment, projects = scope
    return ApiTokenCreated(
        token_id=token_id,
        token_name=name,
        token_type=token_type,
        environment=environment,
        projects=projects,
        secret_hash=secret_hash,
        secret_hint=hint,
        created_at=now,
        expires_at=expires_at,
    )


def create_api_token(  # noqa: PLR0913 - the facts the rules need
    cmd: CreateApiToken,
    *,
    token_id: int,
    random: str,
    environments: set[str],
    projects: set[str],
    now: datetime,
) -> tuple[ApiTokenCreated, str]:
    """`POST /api/admin/api-tokens`: the event and the secret (shown once, in the answer).
    random: the secret's random part; environments, projects: those that exist."""
    name = token_name(cmd)
    scope = token_scope(cmd)
    check_scope_exists(scope, environments=environments, projects=projects)
    secret = token_secret(*scope, random)
    event = issue_api_token(
        token_id=token_id,
        name=name,
        scope=scope,
        secret_hash=hash_secret(secret),
        hint=secret_hint(secret),
        now=now,
        expires_at=cmd.expires_at,
    )
    return event, secret


def delete_api_token(token: tuple[int, str] | None) -> ApiTokenDeleted:
    """token: (id, name) of the token found by id or by its secret, locked; None: no such."""
    if token is None:
        raise NotFound("No API token found")
    token_id, name = token
    return ApiTokenDeleted(token_id=token_id, token_name=name)


def change_expiry(
    token: tuple[int, str] | None, expires_at: datetime, now: datetime
) -> ApiTokenExpiryChanged:
    """`PUT /api/admin/api-tokens/{token}`. token: (id, name), locked; None: no such. An expiry
    in the past is allowed, as in Unleash: the token stops authenticating at once."""
    if token is None:
        raise NotFound("No API token found")
    if expires_at - now > MAX_LIFETIME:
        raise ValidationError("expiresAt must be within 100 years - at `$.expiresAt`")
    token_id, name = token
    return ApiTokenExpiryChanged(token_id=token_id, token_name=name, expires_at=expires_at)


def project_missing() -> NotFound:
    return NotFound("No project found")  # Unleash's words


def project_token_command(cmd: CreateApiToken, project: str) -> CreateApiToken:
    """A project's token is a client or frontend token of that project alone (Unleash's
    project token route): the project is the path's unless the body names the same one."""
    if cmd.type.lower() == "admin":
        raise ValidationError("Project level tokens can not be admin tokens - at `$.type`")
    wanted = cmd.projects or ([cmd.project] if cmd.project else [project])
    if wanted != [project]:
        raise ValidationError(
            "Project level tokens can only be created for one project - at `$.projects`"
        )
    return msgspec.structs.replace(cmd, project=None, projects=[project])


def delete_project_token(token: tuple[int, str, list[str]] | None, project: str) -> ApiTokenDeleted:
    """token: (id, name, projects) of a client or frontend token of the project, locked."""
    if token is None or project not in token[2]:
        raise NotFound("No API token found")
    token_id, name, projects = token
    if projects != [project]:
        raise ValidationError("The token belongs to other projects too; delete it as an admin")
    return ApiTokenDeleted(token_id=token_id, token_name=name)


def record_token_use(last_use: dict[int, datetime]) -> ApiTokensSeen | None:
    """The last use of each API token since the previous record, in token order."""
    if not last_use:
        return None
    return ApiTokensSeen(
        seen=[ApiTokenUse(token_id=t, seen_at=at) for t, at in sorted(last_use.items())]
    )
