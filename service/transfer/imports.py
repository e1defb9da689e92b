"""Checking and importing an export file: read what it decides on, plan (domain.plan), and for
an import append the plan in the caller's unit of work. The routes call these, and so can
`python -m service import-unleash --file`, with its own unit of work and metadata."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from service.context import domain as context
from service.errors import ImportRefused, MissingPermissions
from service.features import domain as flags
from service.tag_types import domain as tag_types
from service.transfer import domain, queries
from service.transfer.responses import ImportValidation, ValidationItem
from service.work import NewStream

if TYPE_CHECKING:
    from eventlog.connections import Conn
    from eventlog.events.base import Metadata
    from service.transfer.commands import ImportToggles
    from service.work import UnitOfWork

Allowed = Callable[[str], bool]  # whether the caller holds a permission (Principal.can)


def _everything(_permission: str) -> bool:
    return True


@dataclass
class Imported:
    """What an import wrote: flags created and changed (names), tag types and context fields
    created, events appended, and the plan's warnings."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    tag_types: list[str] = field(default_factory=list)
    context_fields: list[str] = field(default_factory=list)
    events: int = 0
    warnings: list[domain.Item] = field(default_factory=list)


def _missing(plan: domain.Plan, allowed: Allowed) -> list[str]:
    return list(dict.fromkeys(name for name, permission in plan.needed if not allowed(permission)))


def _new_id() -> str:
    return str(uuid.uuid4())


async def check(conn: Conn, cmd: ImportToggles, allowed: Allowed = _everything) -> ImportValidation:
    """What an import of the file would meet (`POST .../validate`); reads without locks, in
    one snapshot."""
    async with conn.transaction(isolation="repeatable_read", readonly=True):
        state = await queries.load(conn, cmd, lock=False)
    plan = domain.plan(cmd, state, now=datetime.now(UTC), new_id=_new_id)
    missing = _missing(plan, allowed)
    return ImportValidation(
        errors=[ValidationItem.of(i) for i in plan.errors],
        warnings=[ValidationItem.of(i) for i in plan.warnings],
        permissions=(
            [ValidationItem(message=domain.MISSING_PERMISSIONS, affected_items=missing)]
            if missing
            else []
        ),
    )


async def apply(
    uow: UnitOfWork,
    cmd: ImportToggles,
    metadata: Metadata,
    *,
    allowed: Allowed = _everything,
    now: datetime | None = None,
) -> Imported:
    """Import the file in the unit of work: all of it, or (ImportRefused, MissingPermissions,
    any rule's error) nothing. `now`: the time new flags, tag types and fields are created at.
    A file that matches what is here appends nothing."""
    state = await queries.load(uow.conn, cmd, lock=True)
    plan = domain.plan(cmd, state, now=now or datetime.now(UTC), new_id=_new_id)
    if plan.errors:
        raise ImportRefused([(i.message, list(i.affected)) for i in plan.errors])
    missing = _missing(plan, allowed)
    if missing:
        raise MissingPermissions(missing)
    for created in plan.tag_types:
        await uow.append(tag_types.stream(created.name), [created], metadata)
    for made in plan.context_fields:
        await uow.append(context.stream(made.name), [made], metadata)
    new = [f for f in plan.flags if f.created and f.at_version is None]
    if new:
        await uow.append_new([NewStream(flags.stream(f.name), f.events, metadata) for f in new])
    for flag in plan.flags:
        if flag.created and flag.at_version is not None:
            await uow.append(
                flags.stream(flag.name), flag.events, metadata, at_version=flag.at_version
            )
        elif not flag.created:
            await uow.append(flags.stream(flag.name), flag.events, metadata)
    return Imported(
        created=[f.name for f in plan.flags if f.created],
        updated=[f.name for f in plan.flags if not f.created],
        tag_types=[e.name for e in plan.tag_types],
        context_fields=[e.name for e in plan.context_fields],
        events=plan.events,
        warnings=plan.warnings,
    )
