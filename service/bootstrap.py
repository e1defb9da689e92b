"""First start: the default environments and project, the built-in feature types and tag
type, and the admin API tokens."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import eventlog
from eventlog.events.base import Metadata
from service import auth
from service.api_tokens import domain, queries
from service.feature_types import domain as feature_types
from service.projects import domain as projects
from service.projects.commands import CreateEnvironment, CreateProject
from service.projects.queries import ENVIRONMENT_EXISTS, PROJECT_EXISTS, environment_names
from service.tag_types import domain as tag_types

if TYPE_CHECKING:
    from eventlog.connections import Conn
    from service.work import Work

BOOTSTRAP_LOCK = 0x666C6168  # serialises seeding across replicas starting at once
BOOTSTRAP = Metadata(
    actor_id="system", actor_name="bootstrap", actor_kind="system", source="bootstrap"
)


async def seed(work: Work, conn: Conn, admin_tokens: tuple[str, ...]) -> str | None:
    """Create what a new install has, once. Returns a generated admin token, if one was made."""
    await conn.execute("SELECT pg_advisory_lock($1)", BOOTSTRAP_LOCK)
    try:
        await _seed_defaults(work, conn)
        return await _seed_admin_tokens(work, conn, admin_tokens)
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", BOOTSTRAP_LOCK)


async def seed_defaults(work: Work, conn: Conn) -> None:
    """What a new install has, without its admin tokens (`serve` makes those): for a command
    that writes before the first start, such as import-unleash."""
    await conn.execute("SELECT pg_advisory_lock($1)", BOOTSTRAP_LOCK)
    try:
        await _seed_defaults(work, conn)
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", BOOTSTRAP_LOCK)


async def _seed_defaults(work: Work, conn: Conn) -> None:
    now = datetime.now(UTC)
    for name, env_type, sort_order in projects.DEFAULT_ENVIRONMENTS:
        if await conn.fetchval(ENVIRONMENT_EXISTS, name):
            continue
        env = CreateEnvironment(name=name, type=env_type, sort_order=sort_order)
        created = projects.create_environment(env, exists=False, next_sort_order=0, now=now)
        async with work.begin(conn) as uow:
            await uow.append(projects.environment_stream(name), [created], BOOTSTRAP, new=True)
    if not await conn.fetchval(PROJECT_EXISTS, projects.DEFAULT_PROJECT):
        environments = await environment_names(conn)
        cmd = CreateProject(
            id=projects.DEFAULT_PROJECT, name="Default", description="Default project"
        )
        event = projects.create_project(cmd, exists=False, environments=environments, now=now)
        async with work.begin(conn) as uow:
            stream = projects.project_stream(projects.DEFAULT_PROJECT)
            await uow.append(stream, [event], BOOTSTRAP, new=True)
    await _seed_types(work, conn, now)


async def _seed_types(work: Work, conn: Conn, now: datetime) -> None:
    """The built-in feature types and the `simple` tag type, each once: by whether its stream
    has begun, not by its row, so that a deleted `simple` stays deleted (as in Unleash)."""
    for sort_order, definition in enumerate(feature_types.BUILT_IN):
        stream = feature_types.stream(definition.id)
        if await eventlog.stream_version(conn, stream) is None:
            async with work.begin(conn) as uow:
                event = feature_types.defined(definition, sort_order)
                await uow.append(stream, [event], BOOTSTRAP, new=True)
    simple = tag_types.simple(now)
    if await eventlog.stream_version(conn, tag_types.stream(simple.name)) is None:
        async with work.begin(conn) as uow:
            await uow.append(tag_types.stream(simple.name), [simple], BOOTSTRAP, new=True)


async def _seed_admin_tokens(work: Work, conn: Conn, tokens: tuple[str, ...]) -> str | None:
    """Create the configured admin tokens that are absent (stored as hashes only).

    Returns a newly generated admin token when no admin token existed at all, else None.
    """
    for token in tokens:
        if await conn.fetchval(queries.TOKEN_WITH_HASH, auth.hash_secret(token)) is None:
            await _create_admin_token(work, conn, token, chosen=True)
    if await conn.fetchval(queries.ANY_ADMIN_TOKEN):
        return None
    token = domain.token_secret("admin", "*", ["*"], auth.new_secret())
    await _create_admin_token(work, conn, token, chosen=False)
    return token


async def _create_admin_token(work: Work, conn: Conn, token: str, *, chosen: bool) -> None:
    async with work.begin(conn) as uow:
        token_id = await uow.conn.fetchval(queries.NEXT_TOKEN_ID)
        event = domain.issue_api_token(
            token_id=token_id,
            name="admin",
            scope=("admin", "*", ["*"]),
            secret_hash=auth.hash_secret(token),
            hint=auth.secret_hint(token, reveal=not chosen),
            now=datetime.now(UTC),
            expires_at=None,
        )
        await uow.append(domain.stream(token_id), [event], BOOTSTRAP, new=True)
