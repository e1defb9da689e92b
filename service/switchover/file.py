"""`import-unleash --file EXPORT.json --environment ENV`: an Unleash export file (one
environment's flags, strategies, switches, variants, tags, dependencies, and the context fields
and tag types they use) imported as `POST /api/admin/features-batch/import` imports it, each
flag into the project it names, all projects in one transaction. Segments appear in a file only
by id and name: a segment the file uses must exist here by that name, or the import is refused
naming it (import the source's segments first: `import-unleash --url`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from service.errors import AppError, ImportRefused
from service.switchover.run import metadata_for
from service.transfer import domain, imports
from service.transfer.commands import ImportToggles, read_file

if TYPE_CHECKING:
    from pathlib import Path

    from eventlog.connections import Conn
    from service.work import Work


@dataclass
class FileReport:
    """By project: flags created, flags changed, events appended; the problems that kept the
    file from being written (message, what it concerns), the warnings."""

    projects: dict[str, imports.Imported] = field(default_factory=dict)
    problems: list[tuple[str, list[str]]] = field(default_factory=list)
    dry_run: bool = False

    def lines(self) -> list[str]:
        heading = "dry run: nothing was written" if self.dry_run else "import of the file"
        out = [heading, f"{'project':<24} {'created':>8} {'updated':>8} {'events':>7}"]
        out += [
            f"{project:<24} {len(i.created):>8} {len(i.updated):>8} {i.events:>7}"
            for project, i in self.projects.items()
        ]
        for project, imported in self.projects.items():
            out += [
                f"{project}: warning: {w.message} {', '.join(w.affected)}"
                for w in imported.warnings
            ]
        out += [f"refused: {message} {', '.join(names)}" for message, names in self.problems]
        return out


class FileError(Exception):
    """The file cannot be read as an export (exit code 2)."""


class _DryRun(Exception):
    pass


async def import_file(
    work: Work, conn: Conn, path: Path, environment: str, *, dry_run: bool = False
) -> FileReport:
    try:
        content = path.read_bytes()  # noqa: ASYNC240 - the command runs this one task
    except OSError as exc:
        raise FileError(f"cannot read {path}: {exc.strerror}") from None
    try:
        data = read_file(content)
    except AppError as exc:
        raise FileError(f"{path} is not an Unleash export file: {exc.message}") from None
    metadata = metadata_for(f"unleash-file:{path.name}")
    report = FileReport(dry_run=dry_run)
    try:
        async with work.begin(conn) as uow:
            for project, part in sorted(domain.by_project(data).items()):
                cmd = ImportToggles(project=project, environment=environment, data=part)
                report.projects[project] = await imports.apply(uow, cmd, metadata)
            if dry_run:
                _roll_back()
    except _DryRun:
        pass
    except ImportRefused as refused:
        report.projects = {}
        report.problems = refused.problems
    except AppError as exc:  # the destination: no such project or environment
        report.projects = {}
        report.problems = [(exc.message, [])]
    return report


def _roll_back() -> None:
    raise _DryRun
