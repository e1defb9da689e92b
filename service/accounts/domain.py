"""API tokens: pure decisions, no I/O."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, cast

from service.accounts.events import ApiTokenCreated, TokenType
from service.errors import ValidationError
from service.names import validate_name

if TYPE_CHECKING:
    from datetime import datetime

    from service.accounts.commands import CreateApiToken

TOKEN_TYPES = ("admin", "client", "frontend")
DEFAULT_ENVIRONMENT = "development"
MAX_LIFETIME = timedelta(days=36525)


def stream(token_id: int) -> tuple[str, str]:
    return ("api-token", str(token_id))


def token_scope(cmd: CreateApiToken) -> tuple[TokenType, str, list[str]]:
    """Validated (type, environment, projects) of a create request, Unleash's defaults applied."""
    token_type = cmd.type.lower()
    if token_type not in TOKEN_TYPES:
        raise ValidationError(f"type must be one of {', '.join(TOKEN_TYPES)} - at `$.type`")
    if token_type == "admin":
        return "admin", "*", ["*"]
    projects = cmd.projects or ([cmd.project] if cmd.project else ["*"])
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
