"""The report of a run on standard output: a line a kind, then each problem and each thing not
carried, by name (never a secret: tokens are named by their names)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import TextIO

    from service.switchover.run import Report

SHOWN = 20  # names shown of each list before "... and N more"


def print_report(report: Report, out: TextIO) -> None:
    heading = "dry run: nothing was written" if report.dry_run else "import"
    out.write(f"{heading} (Unleash {report.version})\n")
    out.write(
        f"{'kind':<22} {'source':>7} {'created':>8} {'updated':>8} {'deleted':>8} "
        f"{'same':>7} {'events':>7} {'problems':>9}\n"
    )
    for o in report.outcomes:
        mark = "" if o.written else "  (not written)"
        out.write(
            f"{o.kind:<22} {o.in_source:>7} {len(o.created):>8} {len(o.updated):>8} "
            f"{len(o.deleted):>8} {o.unchanged:>7} {o.events:>7} {o.problems:>9}{mark}\n"
        )
    for o in report.outcomes:
        _names(out, f"{o.kind}: conflict", o.conflicts)
        _names(out, f"{o.kind}: refused", o.refused)
        _names(out, f"{o.kind}: not carried", o.skipped)
    if report.stopped_at is not None:
        out.write(
            f"stopped at {report.stopped_at}: it has problems and was not written; the kinds "
            "before it were. Fix them here or in the source (or pass --prefer-source for "
            "conflicts) and run again: what is written already is not written twice.\n"
        )


def _names(out: TextIO, label: str, items: list[tuple[str, str]]) -> None:
    out.writelines(f"{label}: {name}: {why}\n" for name, why in items[:SHOWN])
    if len(items) > SHOWN:
        out.write(f"{label}: ... and {len(items) - SHOWN} more\n")
