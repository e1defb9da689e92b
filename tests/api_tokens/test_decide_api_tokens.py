"""Pure decisions of API tokens: their name, scope, secret, expiry and revocation."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from eventlog.events.api_tokens import ApiTokenCreated, ApiTokenDeleted
from service.api_tokens import domain
from service.api_tokens.commands import CreateApiToken
from service.errors import NotFound, ValidationError

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
RANDOM = "0123456789abcdef" * 4  # 64 hex digits, as the handler draws them
ENVIRONMENTS = {"development", "production"}
PROJECTS = {"default", "shop", "blog"}
ALLOWED = "may only contain letters, digits and - _ . ! ~ * ' ( ), and may not be '.' or '..'"


def token_cmd(raw: bytes) -> CreateApiToken:
    return msgspec.json.decode(raw, type=CreateApiToken)


def create(cmd: CreateApiToken, *, now: datetime = NOW) -> tuple[ApiTokenCreated, str]:
    return domain.create_api_token(
        cmd, token_id=5, random=RANDOM, environments=ENVIRONMENTS, projects=PROJECTS, now=now
    )


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# --- token_name ---------------------------------------------------------------------------------


def test_token_name_prefers_token_name_to_the_older_username() -> None:
    assert domain.token_name(CreateApiToken(type="client", token_name="a", username="b")) == "a"
    assert domain.token_name(CreateApiToken(type="client", username="b")) == "b"


def test_token_name_is_required_under_one_of_its_names() -> None:
    with pytest.raises(ValidationError) as caught:
        domain.token_name(CreateApiToken(type="client"))
    assert caught.value.message == "Object missing required field `tokenName`"


# --- token_scope --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        b'{"type": "admin"}',
        b'{"type": "ADMIN", "environment": "production", "projects": ["shop"]}',
        b'{"type": "Admin", "environment": "bad env", "project": "bad project"}',
    ],
)
def test_token_scope_of_an_admin_token_is_everything_whatever_else_is_asked(raw: bytes) -> None:
    assert domain.token_scope(token_cmd(raw)) == ("admin", "*", ["*"])


@pytest.mark.parametrize(
    ("raw", "scope"),
    [
        (b'{"type": "client"}', ("client", "development", ["*"])),
        (b'{"type": "Frontend", "environment": "*"}', ("frontend", "*", ["*"])),
        (b'{"type": "client", "project": "shop"}', ("client", "development", ["shop"])),
        (
            b'{"type": "client", "project": "blog", "projects": ["shop", "default", "shop"]}',
            ("client", "development", ["shop", "default"]),
        ),
        (
            b'{"type": "client", "project": "blog", "projects": []}',
            ("client", "development", ["blog"]),
        ),
        (
            b'{"type": "client", "environment": "production", "projects": ["shop", "*", "blog"]}',
            ("client", "production", ["*"]),
        ),
    ],
)
def test_token_scope_applies_unleash_defaults_to_client_and_frontend_tokens(
    raw: bytes, scope: tuple[str, str, list[str]]
) -> None:
    assert domain.token_scope(token_cmd(raw)) == scope


@pytest.mark.parametrize("token_type", ["", "root", "admins", "client "])
def test_token_scope_refuses_an_unknown_type(token_type: str) -> None:
    with pytest.raises(ValidationError) as caught:
        domain.token_scope(CreateApiToken(type=token_type, environment="bad env"))
    assert caught.value.message == "type must be one of admin, client, frontend - at `$.type`"


def test_token_scope_refuses_a_project_name_that_is_not_url_safe() -> None:
    cmd = token_cmd(b'{"type": "client", "projects": ["shop", "my blog"], "environment": "a b"}')
    with pytest.raises(ValidationError) as caught:
        domain.token_scope(cmd)
    assert caught.value.message == f"Project {ALLOWED} - at `$.projects[1]`"


def test_token_scope_refuses_an_environment_name_that_is_not_url_safe() -> None:
    with pytest.raises(ValidationError) as caught:
        domain.token_scope(token_cmd(b'{"type": "frontend", "environment": ".."}'))
    assert caught.value.message == f"Environment {ALLOWED} - at `$.environment`"


# --- check_scope_exists -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "scope",
    [
        ("admin", "*", ["*"]),
        ("client", "production", ["shop", "blog"]),
        ("frontend", "*", ["*"]),
    ],
)
def test_check_scope_exists_accepts_existing_or_wildcard_names(
    scope: tuple[domain.TokenType, str, list[str]],
) -> None:
    domain.check_scope_exists(scope, environments=ENVIRONMENTS, projects=PROJECTS)  # no raise


def test_check_scope_exists_refuses_an_unknown_environment_before_unknown_projects() -> None:
    with pytest.raises(ValidationError) as caught:
        domain.check_scope_exists(
            ("client", "staging", ["ghost"]), environments=ENVIRONMENTS, projects=PROJECTS
        )
    assert caught.value.message == "Environment=staging does not exist - at `$.environment`"


def test_check_scope_exists_names_the_first_unknown_project() -> None:
    with pytest.raises(ValidationError) as caught:
        domain.check_scope_exists(
            ("client", "*", ["shop", "ghost", "phantom"]),
            environments=ENVIRONMENTS,
            projects=PROJECTS,
        )
    assert caught.value.message == "Project=ghost does not exist - at `$.projects`"


# --- issue_api_token ----------------------------------------------------------------------------


def test_issue_api_token_records_the_scope_hash_and_hint() -> None:
    expires_at = NOW + timedelta(days=1)
    event = domain.issue_api_token(
        token_id=5,
        name="backend",
        scope=("client", "production", ["shop", "blog"]),
        secret_hash="ab" * 32,
        hint="[]:production.0123********",
        now=NOW,
        expires_at=expires_at,
    )
    assert event == ApiTokenCreated(
        token_id=5,
        token_name="backend",
        token_type="client",
        environment="production",
        projects=["shop", "blog"],
        secret_hash="ab" * 32,
        secret_hint="[]:production.0123********",
        created_at=NOW,
        expires_at=expires_at,
    )


@pytest.mark.parametrize(
    ("expires_at", "message"),
    [
        (NOW, "expiresAt must be in the future - at `$.expiresAt`"),
        (NOW - timedelta(days=1), "expiresAt must be in the future - at `$.expiresAt`"),
        (
            NOW + timedelta(days=36525, microseconds=1),
            "expiresAt must be within 100 years - at `$.expiresAt`",
        ),
    ],
)
def test_issue_api_token_refuses_an_expiry_in_the_past_or_beyond_100_years(
    expires_at: datetime, message: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        domain.issue_api_token(
            token_id=5,
            name="n",
            scope=("admin", "*", ["*"]),
            secret_hash="h",
            hint="h",
            now=NOW,
            expires_at=expires_at,
        )
    assert caught.value.message == message


@given(st.none() | st.timedeltas(min_value=timedelta(microseconds=1), max_value=timedelta(36525)))
def test_issue_api_token_accepts_no_expiry_or_any_within_100_years(
    lifetime: timedelta | None,
) -> None:
    expires_at = None if lifetime is None else NOW + lifetime
    event = domain.issue_api_token(
        token_id=5,
        name="n",
        scope=("admin", "*", ["*"]),
        secret_hash="h",
        hint="h",
        now=NOW,
        expires_at=expires_at,
    )
    assert event.expires_at == expires_at


# --- create_api_token ---------------------------------------------------------------------------


def test_create_api_token_issues_a_client_token_and_returns_its_secret_once() -> None:
    cmd = token_cmd(
        b'{"tokenName": "backend", "type": "client", "environment": "production",'
        b' "project": "shop", "expiresAt": "2027-01-01T00:00:00+00:00"}'
    )
    event, secret = create(cmd)
    assert secret == f"shop:production.{RANDOM}"
    assert event == ApiTokenCreated(
        token_id=5,
        token_name="backend",
        token_type="client",
        environment="production",
        projects=["shop"],
        secret_hash=sha256(secret),
        secret_hint="shop:production.0123********",
        created_at=NOW,
        expires_at=datetime(2027, 1, 1, tzinfo=UTC),
    )
    assert RANDOM not in msgspec.json.encode(event).decode()  # the event never holds the secret


def test_create_api_token_issues_an_admin_token() -> None:
    event, secret = create(token_cmd(b'{"username": "ops", "type": "admin"}'))
    assert secret == f"*:*.{RANDOM}"
    assert event == ApiTokenCreated(
        token_id=5,
        token_name="ops",
        token_type="admin",
        environment="*",
        projects=["*"],
        secret_hash=sha256(secret),
        secret_hint="*:*.0123********",
        created_at=NOW,
        expires_at=None,
    )


@pytest.mark.parametrize(
    ("raw", "secret"),
    [
        (b'{"tokenName": "t", "type": "frontend"}', f"*:development.{RANDOM}"),
        (
            b'{"tokenName": "t", "type": "client", "projects": ["shop", "blog"]}',
            f"[]:development.{RANDOM}",
        ),
        (
            b'{"tokenName": "t", "type": "client", "projects": ["blog", "blog"]}',
            f"blog:development.{RANDOM}",
        ),
        (b'{"tokenName": "t", "type": "client", "environment": "*"}', f"*:*.{RANDOM}"),
    ],
)
def test_create_api_token_writes_the_secret_in_unleash_format(raw: bytes, secret: str) -> None:
    event, issued = create(token_cmd(raw))
    assert issued == secret
    assert event.secret_hash == sha256(secret)


def test_create_api_token_keeps_a_short_random_part_out_of_the_hint() -> None:
    event, secret = domain.create_api_token(
        token_cmd(b'{"tokenName": "t", "type": "admin"}'),
        token_id=5,
        random="abcdef",
        environments=ENVIRONMENTS,
        projects=PROJECTS,
        now=NOW,
    )
    assert (secret, event.secret_hint) == ("*:*.abcdef", "*:*.********")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"type": "client"}', "Object missing required field `tokenName`"),
        (
            b'{"tokenName": "t", "type": "superuser"}',
            "type must be one of admin, client, frontend - at `$.type`",
        ),
        (
            b'{"tokenName": "t", "type": "client", "environment": "staging"}',
            "Environment=staging does not exist - at `$.environment`",
        ),
        (
            b'{"tokenName": "t", "type": "client", "projects": ["shop", "ghost"]}',
            "Project=ghost does not exist - at `$.projects`",
        ),
        (
            b'{"tokenName": "t", "type": "client", "expiresAt": "2026-01-02T03:04:05Z"}',
            "expiresAt must be in the future - at `$.expiresAt`",
        ),
    ],
)
def test_create_api_token_refuses_an_invalid_request(raw: bytes, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        create(token_cmd(raw))
    assert caught.value.message == message
    assert caught.value.status == 400


def test_create_api_token_checks_name_then_type_then_scope_then_expiry() -> None:
    past = b', "expiresAt": "2020-01-01T00:00:00Z"'
    steps = [
        (b'{"type": "nope", "environment": "staging"' + past + b"}", "missing required field"),
        (b'{"tokenName": "t", "type": "nope", "environment": "staging"' + past + b"}", "type must"),
        (b'{"tokenName": "t", "type": "client", "environment": "st ag"' + past + b"}", "may only"),
        (b'{"tokenName": "t", "type": "client", "environment": "staging"' + past + b"}", "staging"),
        (b'{"tokenName": "t", "type": "client"' + past + b"}", "in the future"),
    ]
    for raw, message in steps:
        with pytest.raises(ValidationError, match=message):
            create(token_cmd(raw))


# --- delete_api_token ---------------------------------------------------------------------------


def test_delete_api_token_revokes_the_token_found() -> None:
    assert domain.delete_api_token((5, "backend")) == ApiTokenDeleted(
        token_id=5, token_name="backend"
    )


def test_delete_api_token_refuses_a_token_that_is_not_there() -> None:
    with pytest.raises(NotFound) as caught:
        domain.delete_api_token(None)
    assert caught.value.message == "No API token found"
    assert caught.value.status == 404
