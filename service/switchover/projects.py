"""Projects and the environments each has: created here with the source's id, name,
description, created time and environments; an environment enabled or disabled in a project as
there; a project an earlier run brought and the source dropped archived (once it has no active
flag). Written after the environments, before everything that lives in a project.

A project's default strategy per environment names segments, so it is written by a kind of its
own (`DefaultStrategies`, after the segments) from what `Projects` read.

Not carried, and said so: a project's collaboration mode and default stickiness other than
Unleash's defaults (every project here is open, its stickiness `default`), and a change of an
existing project's name or description (no request here changes them)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import msgspec

from service.errors import Conflict
from service.projects import domain
from service.projects.commands import CreateProject
from service.switchover import changes, origin
from service.switchover.run import Outcome

if TYPE_CHECKING:
    import asyncpg

    from eventlog.codec import DomainEvent
    from service.switchover.run import Context
    from service.work import UnitOfWork


class SourceProjectListed(msgspec.Struct, frozen=True):
    """A project as Unleash's list answers it (projectSchema)."""

    id: str
    name: str
    description: str | None = None
    createdAt: datetime | None = None  # noqa: N815 - Unleash's names
    mode: str = "open"


class SourceProjectList(msgspec.Struct, frozen=True):
    projects: list[SourceProjectListed]


class SourceProjectEnvironment(msgspec.Struct, frozen=True):
    environment: str
    defaultStrategy: dict[str, Any] | None = None  # noqa: N815 - Unleash's names


class SourceOverview(msgspec.Struct, frozen=True):
    """What a project's overview adds (projectOverviewSchema)."""

    environments: list[SourceProjectEnvironment] = []
    defaultStickiness: str = "default"  # noqa: N815 - Unleash's names
    mode: str = "open"


class SourceProject(msgspec.Struct, frozen=True):
    listed: SourceProjectListed
    overview: SourceOverview

    @property
    def environments(self) -> list[str]:
        return sorted({e.environment for e in self.overview.environments})


class Shape(msgspec.Struct, frozen=True):
    """A project in our terms: what the import compares."""

    name: str
    description: str | None
    environments: list[str]


_LOCK_ALL = "SELECT id, name, description, archived_at FROM projects ORDER BY id FOR UPDATE"
_ENVIRONMENTS = "SELECT project_id, environment FROM project_environments ORDER BY 1, 2"
_ACTIVE_FLAGS = """
SELECT project, count(*) AS flags FROM features WHERE archived_at IS NULL GROUP BY project
"""
_KNOWN_ENVIRONMENTS = "SELECT name FROM environments"


class Projects:
    name = "projects"

    def __init__(self) -> None:
        # What the last read found: `DefaultStrategies` writes from it.
        self.found: list[SourceProject] = []

    async def read(self, ctx: Context) -> list[SourceProject]:
        listed = (await ctx.source.get("/api/admin/projects", SourceProjectList)).projects
        ctx.progress.phase("reading projects", len(listed) + 1)
        ctx.progress.advance()

        async def overview(project: SourceProjectListed) -> SourceProject:
            path = f"/api/admin/projects/{project.id}/overview"
            found = await ctx.source.get(path, SourceOverview)
            ctx.progress.advance()
            return SourceProject(listed=project, overview=found)

        self.found = list(await asyncio.gather(*(overview(p) for p in listed)))
        ctx.progress.done()
        return self.found

    async def write(self, ctx: Context, data: list[SourceProject], uow: UnitOfWork) -> Outcome:
        outcome = Outcome(kind=self.name, in_source=len(data))
        ctx.progress.phase("writing projects", len(data))
        ours = await _lock_ours(ctx, uow)
        for item in data:
            ctx.progress.advance()
            project_id = item.listed.id
            _not_carried(item, outcome)
            row = ours.rows.get(project_id)
            try:
                if row is None:
                    events = _create(ctx, item, ours.known, outcome)
                else:
                    if row["archived_at"] is not None:
                        raise Conflict(f"Project {project_id} is archived here: none is revived")
                    events = _update(ctx, item, ours, outcome)
            except changes.REFUSALS as exc:
                outcome.refused.append((project_id, changes.reason(exc)))
                continue
            if events:
                stream = domain.project_stream(project_id)
                await uow.append(stream, events, ctx.metadata, new=row is None)
                outcome.events += len(events)
        await _archive_gone(ctx, {i.listed.id for i in data}, ours, uow, outcome)
        ctx.progress.done()
        return outcome


@dataclass
class Ours:
    """Our projects, locked: their rows, environments and active flags; the environments
    that exist; what an earlier run wrote."""

    rows: dict[str, asyncpg.Record]
    environments: dict[str, list[str]]
    flags: dict[str, int]
    known: set[str]
    marks: dict[str, origin.Provenance]

    def state(self, project_id: str) -> tuple[Shape, domain.ActiveProject]:
        row, environments = self.rows[project_id], self.environments.get(project_id, [])
        return (
            Shape(row["name"], row["description"], environments),
            domain.ActiveProject(
                environments=environments, active_flags=self.flags.get(project_id, 0)
            ),
        )


async def _lock_ours(ctx: Context, uow: UnitOfWork) -> Ours:
    rows = {r["id"]: r for r in await uow.conn.fetch(_LOCK_ALL)}
    environments: dict[str, list[str]] = {}
    for r in await uow.conn.fetch(_ENVIRONMENTS):
        environments.setdefault(r["project_id"], []).append(r["environment"])
    return Ours(
        rows=rows,
        environments=environments,
        flags={r["project"]: r["flags"] for r in await uow.conn.fetch(_ACTIVE_FLAGS)},
        known={r["name"] for r in await uow.conn.fetch(_KNOWN_ENVIRONMENTS)},
        marks=await origin.provenance(uow.conn, "project", ctx.origin),
    )


async def _archive_gone(
    ctx: Context, kept: set[str], ours: Ours, uow: UnitOfWork, outcome: Outcome
) -> None:
    """A project an earlier run brought and the source dropped is archived, as a person would
    archive it, once it has no active flag (the flags' kind comes after this one)."""
    for project_id in sorted(set(ours.rows) - kept):
        if ours.rows[project_id]["archived_at"] is not None:
            continue
        if not changes.to_delete(ctx, project_id, ours.marks.get(project_id), outcome):
            continue
        _, state = ours.state(project_id)
        if state.active_flags:
            why = (
                f"gone from the source, {state.active_flags} active flag(s) here: archived by a "
                "run after its flags are"
            )
            outcome.skipped.append((project_id, why))
            continue
        archived = domain.archive_project(project_id, state, now=ctx.now)
        await uow.append(domain.project_stream(project_id), [archived], ctx.metadata)
        outcome.deleted.append(project_id)
        outcome.events += 1


def _create(
    ctx: Context, item: SourceProject, known: set[str], outcome: Outcome
) -> list[DomainEvent]:
    cmd = msgspec.convert(
        {"id": item.listed.id, "name": item.listed.name, "description": item.listed.description},
        CreateProject,
    )
    _known(item.environments, known)
    created = domain.create_project(
        cmd,
        exists=False,
        environments=item.environments,
        now=item.listed.createdAt or ctx.now,
    )
    outcome.created.append(item.listed.id)
    return [created]


def _update(ctx: Context, item: SourceProject, ours: Ours, outcome: Outcome) -> list[DomainEvent]:
    project_id = item.listed.id
    current, state = ours.state(project_id)
    cmd = msgspec.convert(
        {"id": project_id, "name": item.listed.name, "description": item.listed.description},
        CreateProject,
    )
    wanted = Shape(cmd.name, cmd.description or None, item.environments)
    if not changes.to_change(ctx, project_id, current, wanted, ours.marks.get(project_id), outcome):
        return []
    if (wanted.name, wanted.description) != (current.name, current.description):
        outcome.skipped.append(
            (project_id, "name and description not carried: no request here renames a project")
        )
    events: list[DomainEvent] = []
    for environment in sorted(set(wanted.environments) - set(current.environments)):
        events.append(
            domain.enable_environment(
                project_id, environment, state, known=environment in ours.known
            )
        )
        state = domain.ActiveProject(
            environments=[*state.environments, environment], active_flags=state.active_flags
        )
    for environment in sorted(set(current.environments) - set(wanted.environments)):
        events.append(domain.disable_environment(project_id, environment, state))
        state = domain.ActiveProject(
            environments=[e for e in state.environments if e != environment],
            active_flags=state.active_flags,
        )
    if events:
        outcome.updated.append(project_id)
    else:
        outcome.unchanged += 1  # what differs is not carried (said so above)
    return events


def _known(environments: list[str], known: set[str]) -> None:
    missing = [e for e in environments if e not in known]
    if missing:
        raise domain.environment_missing(missing[0])


def _not_carried(item: SourceProject, outcome: Outcome) -> None:
    mode = item.overview.mode or item.listed.mode
    if mode != "open":
        outcome.skipped.append((item.listed.id, f"mode {mode} not carried: every project is open"))
    if item.overview.defaultStickiness != "default":
        outcome.skipped.append(
            (
                item.listed.id,
                f"default stickiness {item.overview.defaultStickiness} not carried: `default` here",
            )
        )
