"""API tokens, service accounts and personal access tokens: pure decisions, no I/O."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, cast

from service.accounts.events import (
    ApiTokenCreated,
    PersonalAccessTokenCreated,
    ServiceAccountCreated,
    ServiceAccountUpdated,
    TokenType,
)
from service.errors import NameExists, PatLimit, ValidationError
from service.names import validate_name
from service.users.domain import clean_text, root_role_id

if TYPE_CHECKING:
    from datetime import datetime

    from service.accounts.commands import (
        CreateApiToken,
        CreateServiceAccount,
        UpdateServiceAccount,
    )

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


def create_api_token(  # noqa: PLR0913 - every part of the new token is decided here
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


PAT_LIMIT = 10  # a person's own tokens, as Unleash's default
# Service accounts are machines an admin manages, often one token per deployment: a wider bound.
SERVICE_ACCOUNT_TOKEN_LIMIT = 1000


def account_stream(account_type: str, account_id: int) -> tuple[str, str]:
    """Personal access tokens live on their owner's stream."""
    kind = "user" if account_type == "User" else "service-account"
    return (kind, str(account_id))


def create_personal_access_token(  # noqa: PLR0913 - every part of the new token is decided here
    *,
    token_id: int,
    user_id: int,
    description: str,
    existing: list[str],
    secret_hash: str,
    hint: str,
    now: datetime,
    expires_at: datetime,
    limit: int = PAT_LIMIT,
) -> PersonalAccessTokenCreated:
    """`existing`: descriptions of the account's current tokens."""
    description = description.strip()
    if not description:
        raise ValidationError("PAT description cannot be empty. - at `$.description`")
    if expires_at <= now:
        raise ValidationError("The expiry date should be in future. - at `$.expiresAt`")
    if expires_at - now > MAX_LIFETIME:
        raise ValidationError("expiresAt must be within 100 years - at `$.expiresAt`")
    if len(existing) >= limit:  # Unleash's order: expiry, then the limit, then the name
        raise PatLimit(f"Too many PATs ({limit}) already exist for this user.")
    if description in existing:
        raise NameExists("PAT description already exists.")
    return PersonalAccessTokenCreated(
        token_id=token_id,
        user_id=user_id,
        description=description,
        secret_hash=secret_hash,
        secret_hint=hint,
        created_at=now,
        expires_at=expires_at,
    )


def create_service_account(
    cmd: CreateServiceAccount, *, account_id: int, now: datetime
) -> ServiceAccountCreated:
    username = clean_text(cmd.username, "$.username")
    if username is None:
        raise ValidationError("username must not be blank - at `$.username`")
    return ServiceAccountCreated(
        account_id=account_id,
        username=username,
        name=clean_text(cmd.name, "$.name"),
        root_role=root_role_id(cmd.root_role),
        created_at=now,
    )


def update_service_account(
    current: ServiceAccountUpdated, cmd: UpdateServiceAccount
) -> ServiceAccountUpdated | None:
    name = clean_text(cmd.name, "$.name") or current.name
    role = current.root_role if cmd.root_role is None else root_role_id(cmd.root_role)
    updated = ServiceAccountUpdated(account_id=current.account_id, name=name, root_role=role)
    return None if updated == current else updated
