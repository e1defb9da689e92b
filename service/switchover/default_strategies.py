"""A project's default strategy in each of its environments (what switching a flag on adds
where it has no strategy), set here as the source has it. Written after the segments, since a
default strategy names them: the source's segment ids are mapped to ours (`ctx.ids`).

Read with the projects (`Projects.found`: the overview of each project holds them). No request
here removes a default strategy once set: one the source dropped stays, and is said so."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from eventlog.events.projects import DefaultStrategyData
from service.errors import ValidationError
from service.features import domain
from service.features.commands import StrategyBody
from service.switchover import changes, origin
from service.switchover.run import Outcome

if TYPE_CHECKING:
    from service.switchover.projects import Projects, SourceProject
    from service.switchover.run import Context
    from service.work import UnitOfWork

# The active projects' rows locked (a default strategy's change locks its project's row),
# then each project environment's default strategy.
_LOCK_PROJECTS = "SELECT id FROM projects WHERE archived_at IS NULL ORDER BY id FOR UPDATE"
_DEFAULTS = """
SELECT pe.project_id, pe.environment, pe.default_strategy::text AS default_strategy
FROM project_environments pe JOIN projects p ON p.id = pe.project_id
WHERE p.archived_at IS NULL
"""
_decode = msgspec.json.Decoder(DefaultStrategyData)


class DefaultStrategies:
    name = "default strategies"

    def __init__(self, projects: Projects) -> None:
        self._projects = projects

    async def read(self, ctx: Context) -> list[SourceProject]:  # noqa: ARG002 - Kind's
        """What the projects' read found (it comes before this kind's)."""
        return self._projects.found

    async def write(self, ctx: Context, data: list[SourceProject], uow: UnitOfWork) -> Outcome:
        wanted = {
            (p.listed.id, e.environment): e.defaultStrategy
            for p in data
            for e in p.overview.environments
            if e.defaultStrategy is not None
        }
        outcome = Outcome(kind=self.name, in_source=len(wanted))
        ctx.progress.phase("writing default strategies", len(wanted))
        active = {r["id"] for r in await uow.conn.fetch(_LOCK_PROJECTS)}
        ours: dict[tuple[str, str], DefaultStrategyData | None] = {
            (r["project_id"], r["environment"]): None
            if r["default_strategy"] is None
            else _decode.decode(r["default_strategy"])
            for r in await uow.conn.fetch(_DEFAULTS)
        }
        marks = await origin.provenance(uow.conn, "project", ctx.origin)
        segments: dict[Any, int] = ctx.ids.get("segment", {})
        for (project, environment), raw in sorted(wanted.items()):
            ctx.progress.advance()
            name = f"{project}/{environment}"
            if project not in active:
                continue  # a project the projects' kind refused or did not write
            try:
                body = msgspec.convert(_mapped(raw, segments), StrategyBody)
                event = domain.set_default_strategy(
                    project,
                    environment,
                    body,
                    environment_enabled=(project, environment) in ours,
                    missing_segments=(),
                )
            except changes.REFUSALS as exc:
                outcome.refused.append((name, changes.reason(exc)))
                continue
            current = ours.get((project, environment))
            if current is not None and not changes.to_change(
                ctx, name, current, event.strategy, marks.get(project), outcome
            ):
                continue
            await uow.append(("project", project), [event], ctx.metadata)
            (outcome.created if current is None else outcome.updated).append(name)
            outcome.events += 1
        outcome.skipped.extend(
            (f"{p}/{e}", "no default strategy in the source: this one stays (none is removed)")
            for (p, e), found in sorted(ours.items())
            if found is not None and (p, e) not in wanted
        )
        ctx.progress.done()
        return outcome


def _mapped(raw: dict[str, Any], segments: dict[Any, int]) -> dict[str, Any]:
    """The source's default strategy with our segment ids; one the source lacks is refused."""
    ids: list[int] = []
    for source_id in raw.get("segments") or []:
        if source_id not in segments:
            raise ValidationError(f"Segment {source_id} is not the source's - at `$.segments`")
        ids.append(segments[source_id])
    return raw | {"segments": ids}
