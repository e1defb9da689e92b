"""The audit's commands: `state --at T -o DIR` (every read model as of T, as files) and
`diff FROM [TO]` (what changed between two instants, entity by entity)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, TextIO

import msgspec

from projections.entities import secret_columns
from projections.rebuild import table_specs
from service.audit import states
from service.audit.diff import Point, entity_of_stream
from service.audit.responses import AuditDiff

if TYPE_CHECKING:
    from pathlib import Path

    from eventlog.connections import Conn
    from projections.memory import MemoryTables

_encoder = msgspec.json.Encoder()
STATE_FILE = "state.json"


class StateWritten(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """`state.json`: which state the files hold, and how many rows each table had."""

    asked: str
    position: int
    recorded_at: Any
    tables: dict[str, int]
    left_out: dict[str, list[str]]  # secret columns, by table


class State(NamedTuple):
    """A whole state, as read: where it is in the log, its rows, the tables' layout."""

    asked: str | None
    point: Point
    memory: MemoryTables
    layout: states.Layout


async def read_state(conn: Conn, at: str | None) -> State:
    """Every read model as of an instant (None: now), in memory."""
    async with conn.transaction(isolation="repeatable_read", readonly=True):
        position = await states.position(conn, at, "--at")
        return State(
            at,
            await states.point(conn, position),
            await states.state(conn, position),
            await states.layout(conn),
        )


def write_state(state: State, directory: Path) -> StateWritten:
    """One JSON Lines file per read model (`<table>.jsonl`, rows in key order) and
    `state.json`. The directory must be new or empty."""
    if directory.exists() and any(directory.iterdir()):
        raise FileExistsError(f"{directory} is not empty")
    directory.mkdir(parents=True, exist_ok=True)
    counts = {}
    for table in (t.name for t in table_specs()):
        rows = states.rows(state.memory, table, state.layout)
        with (directory / f"{table}.jsonl").open("wb") as out:
            out.writelines(_encoder.encode(row) + b"\n" for row in rows)
        counts[table] = len(rows)
    written = StateWritten(
        asked=state.asked or "now",
        position=state.point.position,
        recorded_at=state.point.recorded_at,
        tables=counts,
        left_out={t: list(c) for t in counts if (c := secret_columns(t))},
    )
    (directory / STATE_FILE).write_bytes(msgspec.json.format(_encoder.encode(written)) + b"\n")
    return written


async def diff(
    conn: Conn,
    start: str,
    end: str | None,
    *,
    stream: str | None = None,
    project: str | None = None,
) -> AuditDiff:
    """What changed from FROM to TO (None: now)."""
    only = None if stream is None else entity_of_stream(stream)
    async with conn.transaction(isolation="repeatable_read", readonly=True):
        first = await states.position(conn, start, "FROM")
        last = await states.position(conn, end, "TO")
        if first > last:
            raise ValueError(f"FROM ({first}) is after TO ({last})")
        return AuditDiff(
            start=await states.point(conn, first),
            end=await states.point(conn, last),
            changes=await states.changes(conn, first, last, only=only, project=project),
        )


def print_diff(found: AuditDiff, out: TextIO) -> None:
    """One line per entity, then one per field: `before -> after`, values as JSON."""

    def place(point: Point) -> str:
        when = _encoder.encode(point.recorded_at).decode() if point.recorded_at else "the start"
        return f"position {point.position} ({when})"

    out.write(
        f"from {place(found.start)} to {place(found.end)}: "
        f"{len(found.changes)} entit{'y' if len(found.changes) == 1 else 'ies'} changed\n"
    )
    for change in found.changes:
        out.write(f"{change.entity} {change.id}: {change.change}\n")
        for field in change.fields:
            before = _encoder.encode(field.before).decode()
            after = _encoder.encode(field.after).decode()
            out.write(f"  {field.field}: {before} -> {after}\n")
