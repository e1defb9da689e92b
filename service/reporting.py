"""Logins for reporting tools: LOGIN roles in `flagstore_reporting` (sql/0013), read-only."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote, urlsplit, urlunsplit

import asyncpg

if TYPE_CHECKING:
    from eventlog.connections import Conn

REPORTING_ROLE = "flagstore_reporting"
# Unquoted PostgreSQL identifiers as they are stored (lower case), at most NAMEDATALEN - 1.
_ROLE_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
SCRAM_ITERATIONS = 4096  # PostgreSQL's default (scram_iterations)
# The connecting user's credentials in a DSN's query: the new login has only its password.
_CREDENTIALS = {"user", "password", "passfile", "sslcert", "sslkey", "sslpassword"}

ROLE_EXISTS = "SELECT EXISTS (SELECT FROM pg_roles WHERE rolname = $1)"
# Utility statements take no parameters: format() quotes as PostgreSQL itself does (%I is
# quote_ident, %L quote_literal). Read-only by default stops accidents, not intent (a session
# may turn it off): the grants are what keep a login from writing (docs/reporting.md).
CREATE_LOGIN = """
SELECT ARRAY[
    format('CREATE ROLE %I LOGIN PASSWORD %L IN ROLE flagstore_reporting', $1::text, $2::text),
    format('ALTER ROLE %I SET default_transaction_read_only = on', $1::text)
]
"""


class LoginRefused(Exception):
    """The login was not created; the message says why and what to do instead."""


class NameRefused(LoginRefused):
    """The name is a word of SQL: a role so named could not be dropped or altered by name."""


# A word SQL reserves in some way (all but the unreserved ones: `user`, `all`, `select`,
# `current_user`...): as a role's name it would need quotes wherever it is written.
KEYWORD = "SELECT catcode <> 'U' FROM pg_get_keywords() WHERE word = $1"


def check_role_name(name: str) -> str:
    """The name itself, or ValueError saying what a role name may be."""
    if not _ROLE_NAME.fullmatch(name):
        raise ValueError(
            f"{name!r} is not a role name: 1 to 63 lower-case letters, digits and underscores, "
            "not starting with a digit"
        )
    if name.startswith("pg_") or name in {"public", "none"}:
        raise ValueError(f"{name!r} is reserved by PostgreSQL")
    return name


def new_password() -> str:
    """256 random bits, URL-safe: usable as it is inside a connection string."""
    return secrets.token_urlsafe(32)


def scram_sha_256(password: str, salt: bytes | None = None) -> str:
    """The verifier PostgreSQL stores for a password (RFC 5802/7677), computed here as psql's
    \\password does, so that the password itself never reaches the server, nor its log. (Our
    passwords are ASCII: SASLprep leaves them as they are.)"""
    salt = secrets.token_bytes(16) if salt is None else salt
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, SCRAM_ITERATIONS)
    stored_key = hashlib.sha256(hmac.digest(salted, b"Client Key", "sha256")).digest()
    server_key = hmac.digest(salted, b"Server Key", "sha256")
    return f"SCRAM-SHA-256${SCRAM_ITERATIONS}:{_b64(salt)}${_b64(stored_key)}:{_b64(server_key)}"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


async def create_login(conn: Conn, name: str, password: str) -> None:
    """Create the LOGIN role `name` in flagstore_reporting, read-only by default."""
    if not await conn.fetchval(ROLE_EXISTS, REPORTING_ROLE):
        raise LoginRefused(
            f"role {REPORTING_ROLE} does not exist in this cluster: run "
            "`python -m service migrate` first"
        )
    if await conn.fetchval(KEYWORD, name):
        raise NameRefused(
            f"{name!r} is a word of SQL: a role so named could not be dropped or altered "
            "by name; choose another"
        )
    if await conn.fetchval(ROLE_EXISTS, name):
        raise LoginRefused(f"role {name} already exists; nothing was changed")
    statements = await conn.fetchval(CREATE_LOGIN, name, scram_sha_256(password))
    try:
        async with conn.transaction():
            for statement in statements:
                await conn.execute(statement)
    except (asyncpg.DuplicateObjectError, asyncpg.UniqueViolationError):
        raise LoginRefused(f"role {name} already exists; nothing was changed") from None
    except asyncpg.InsufficientPrivilegeError as exc:
        user = await conn.fetchval("SELECT current_user")
        raise LoginRefused(_not_allowed(user, name, exc)) from None


def _not_allowed(user: str, name: str, exc: asyncpg.PostgresError) -> str:
    return (
        f"{user} may not create the login {name}: {exc.message}; nothing was changed.\n"
        "It takes a superuser, or a role with CREATEROLE (on PostgreSQL 16 or later also "
        f"holding ADMIN OPTION on {REPORTING_ROLE}): run this command with DATABASE_URL "
        "naming one.\nOn CloudNativePG, declare the login in the Cluster instead "
        f"(docs/reporting.md):\n  spec.managed.roles: [{{name: {name}, login: true, "
        f"inRoles: [{REPORTING_ROLE}], passwordSecret: {{name: <a basic-auth Secret>}}}}]"
    )


def connection_string(dsn: str, name: str, password: str) -> str:
    """The DSN with the login's name and password in place of the connecting user's."""
    parts = urlsplit(dsn)
    hosts = parts.netloc.rpartition("@")[2]
    userinfo = f"{quote(name, safe='')}:{quote(password, safe='')}"
    query = "&".join(
        pair
        for pair in parts.query.split("&")
        if pair and unquote(pair.partition("=")[0]) not in _CREDENTIALS
    )
    return urlunsplit(parts._replace(netloc=f"{userinfo}@{hosts}", query=query))
