"""`verify`: check the log and that rebuilt read models equal the live ones, in one snapshot."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import msgspec

import eventlog
from eventlog import checks
from eventlog.codec import UnknownEventType, decode
from eventlog.connections import set_search_path
from eventlog.privacy.crypto import SealError
from eventlog.privacy.keys import all_for_reading
from eventlog.privacy.master import masters
from projections.rebuild import create_scratch, rebuild
from projections.registry import ALL

if TYPE_CHECKING:
    from eventlog.connections import Conn
    from projections.base import Projection

GENESIS = bytes(32)
MAX_PROBLEMS = 50
# (SealError: a sealed value that its person's key, which exists, does not open.)
DECODE_ERRORS = (UnknownEventType, msgspec.MsgspecError, KeyError, SealError)


@dataclass
class Report:
    events: int = 0
    streams: int = 0
    problems: list[str] = field(default_factory=list)
    read_models: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems

    def lines(self) -> list[str]:
        out = [f"events: {self.events}", f"streams: {self.streams}"]
        out += [f"read model {name}: {state}" for name, state in self.read_models.items()]
        out += [f"PROBLEM: {p}" for p in self.problems]
        out.append("verify: OK" if self.ok else f"verify: FAILED ({len(self.problems)} problems)")
        return out


async def verify(conn: Conn) -> Report:
    """Everything verify builds lives in one transaction that always rolls back."""
    report = Report()
    tx = conn.transaction(isolation="repeatable_read")
    await tx.start()
    try:
        await _check_positions(conn, report)
        await _check_streams(conn, report)
        await _check_chain(conn, report)
        for position in await checks.underived(conn, MAX_PROBLEMS):
            report.problems.append(
                f"event {position}: kind, project or actor_user_id is not what the event gives"
            )
        try:
            await _check_read_models(conn, report)
        except DECODE_ERRORS as exc:
            report.problems.append(f"read models could not be rebuilt: {exc!r}")
    finally:
        await tx.rollback()
    return report


async def _check_positions(conn: Conn, report: Report) -> None:
    positions = await checks.positions(conn)
    report.events = positions.count
    if positions.count and (positions.low != 1 or positions.high != positions.count):
        report.problems.append(
            f"positions are not 1..N: {positions.count} events span "
            f"{positions.low}..{positions.high}"
        )
    if positions.head != positions.high:
        report.problems.append(
            f"log head is {positions.head} but the last event is {positions.high}"
        )


async def _check_streams(conn: Conn, report: Report) -> None:
    report.streams = await checks.stream_count(conn)
    for stream in await checks.inconsistent_streams(conn):
        report.problems.append(
            f"stream {stream.stream_type}/{stream.stream_key}: {stream.events} events, "
            f"last version {stream.last_version}, streams table says {stream.recorded_version}"
        )


async def _check_chain(conn: Conn, report: Report) -> None:
    previous = GENESIS
    expected_position = 1
    keys = await all_for_reading(conn, masters())
    async for link in checks.chain(conn):
        if len(report.problems) >= MAX_PROBLEMS:
            report.problems.append("too many problems; stopped checking the chain")
            return
        position = link.position
        if position != expected_position:
            report.problems.append(f"expected position {expected_position}, found {position}")
            expected_position = position
        expected_position += 1
        if link.prev_hash != previous:
            report.problems.append(f"event {position}: prev_hash does not match event before it")
        if hashlib.sha256(link.prev_hash + link.canonical.encode()).digest() != link.hash:
            report.problems.append(f"event {position}: hash does not match its content")
        previous = link.hash
        try:
            decode(link.type, link.schema_version, link.data, keys)
        except DECODE_ERRORS as exc:
            report.problems.append(f"event {position} ({link.type}) does not decode: {exc}")


async def _check_read_models(conn: Conn, report: Report) -> None:
    """Rebuild into a scratch schema (same transaction, rolled back) and diff table by table.

    Every read model is compared as at the log's head. An async one behind it is first caught
    up in a copy, as its follower will be: between its checkpoint and the head an erasure may
    have destroyed a person's key, which a rebuild already reads as erased while the live rows,
    built before, still name them (until the follower applies the PersonalDataErased event).
    The catching up rewrites the name of each row that gets an event past the checkpoint (as
    the follower will): a wrong name there shows only once the follower is at the head."""
    head = await eventlog.head(conn)
    checkpoints = {
        r["name"]: r["position"]
        for r in await conn.fetch("SELECT name, position FROM projection_checkpoints")
    }
    upto = {p.name: (head if p.mode == "inline" else checkpoints.get(p.name, 0)) for p in ALL}
    # (At 0 a follower has applied nothing: compared as it is, with nothing rebuilt.)
    behind = [p for p in ALL if 0 < upto[p.name] < head]
    await create_scratch(conn, "verify_scratch", indexes=False)
    await conn.execute(set_search_path("verify_scratch"))
    await rebuild(conn, upto | {p.name: head for p in behind})
    if behind:
        await _caught_up_copies(conn, behind, upto, head)
    await conn.execute(set_search_path("readmodel"))
    for projection in ALL:
        live = LIVE_COPIES if projection in behind else "readmodel"
        for table in (t.name for t in projection.tables):
            diff = await conn.fetchval(
                f"SELECT count(*) FROM ((TABLE {live}.{table} EXCEPT ALL "  # noqa: S608 - ours
                f"TABLE verify_scratch.{table}) UNION ALL (TABLE verify_scratch.{table} "
                f"EXCEPT ALL TABLE {live}.{table})) d"
            )
            if diff:
                report.problems.append(f"read model {table}: {diff} rows differ from a rebuild")
                report.read_models[table] = "DIFFERS"
            else:
                report.read_models[table] = "matches rebuild"


LIVE_COPIES = "verify_live"


async def _caught_up_copies(
    conn: Conn, behind: list[Projection], upto: dict[str, int], head: int
) -> None:
    """The live tables of async projections behind the head, copied (keys and all) and brought
    from their checkpoints to the head by their own writes, in the scratch schema LIVE_COPIES."""
    await conn.execute(f"CREATE SCHEMA {LIVE_COPIES}")
    for table in (t.name for p in behind for t in p.tables):
        await conn.execute(
            f"CREATE UNLOGGED TABLE {LIVE_COPIES}.{table} (LIKE readmodel.{table} INCLUDING ALL)"
        )
        columns = ", ".join(
            await conn.fetchval(
                "SELECT array_agg(quote_ident(attname) ORDER BY attnum) FROM pg_attribute "
                "WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped "
                "AND attgenerated = ''",
                f"readmodel.{table}",
            )
        )
        await conn.execute(
            f"INSERT INTO {LIVE_COPIES}.{table} ({columns}) "  # noqa: S608 - ours
            f"SELECT {columns} FROM readmodel.{table}"
        )
    await conn.execute(set_search_path(LIVE_COPIES))
    for projection in behind:
        await rebuild(conn, {projection.name: head}, upto[projection.name], among=(projection,))
