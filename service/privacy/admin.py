"""The commands `erase-user` and `rotate-master-key`: erasure by hand, with a report of what
was destroyed, and the re-wrapping of every data key under a new master key."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from eventlog import checks
from eventlog.events.base import Metadata
from eventlog.privacy import keys
from service.addons import secrets
from service.privacy import erasure

if TYPE_CHECKING:
    from eventlog.connections import Conn
    from service.work import Work

BY_HAND: Final = Metadata(
    actor_id="erase-user", actor_name="erase-user", actor_kind="system", source="system"
)
ACCOUNT_TYPE = "SELECT account_type FROM readmodel.users WHERE id = $1"


class Refused(Exception):
    """Not a deleted person's id: nothing is erased, nothing recorded."""


class StillThere(Refused):
    """Erasure follows a deletion: an account that exists keeps its data."""


class NoSuchPerson(Refused):
    """No person's data was ever here under that id (a tombstone for it would erase whoever
    gets the id next, in every event written of them)."""


async def erase_user(work: Work, conn: Conn, person: int) -> list[str]:
    """Destroy a deleted person's key now (also one waiting for ERASURE_DELAY_DAYS); lines
    that say what was destroyed and what could not be."""
    async with work.begin(conn) as uow:
        account_type = await uow.conn.fetchval(ACCOUNT_TYPE, person)
        if account_type == "Service Account":
            raise NoSuchPerson(
                f"{person} is a service account: a machine, whose names are not personal data"
            )
        if account_type is not None:
            raise StillThere(
                f"user {person} exists: delete it first (DELETE /api/admin/user-admin/{person}); "
                "its key is then destroyed, at once or after ERASURE_DELAY_DAYS"
            )
        before = await keys.status(uow.conn, person)
        found = await checks.personal_data_of(uow.conn, person)
        if before is None and found.sealed == found.plain == 0:
            raise NoSuchPerson(
                f"no person with id {person} ever had personal data here: nothing to erase"
            )
        erased = await erasure.erase(
            uow, [person], stream=erasure.batch_stream(), metadata=BY_HAND, reason="by-hand"
        )
    lines = []
    if not erased:
        assert before is not None
        lines.append(
            f"person {person} was erased already, at {before.erased_at:%Y-%m-%dT%H:%M:%SZ}"
        )
    elif erased[0].had_key:
        assert before is not None
        lines.append(
            f"person {person}: data key destroyed (made {before.created_at:%Y-%m-%dT%H:%M:%SZ}); "
            f'{found.sealed} events held their data sealed with it, which now reads "[erased]"'
        )
    else:
        lines.append(
            f"person {person}: no data key to destroy (nothing of theirs was sealed); "
            "recorded as erased, so that anything written of them from now on reads "
            '"[erased]"'
        )
    if erased:
        lines.append(f"recorded PersonalDataErased (reason by-hand) for person {person}")
    if found.plain:
        lines.append(
            f"warning: {found.plain} events written before encryption hold their data in plain "
            "text, which no key protects: see docs/privacy.md, 'The history before encryption'"
        )
    return lines


async def rotate_master_key(conn: Conn, masters: keys.Masters) -> int:
    """Every data key (of persons and of integrations) wrapped by the current master key, in
    batches; how many were re-wrapped."""
    total = 0
    while True:
        async with conn.transaction():
            done = await keys.rewrap(conn, masters)
            done += await secrets.rewrap(conn, masters)
        total += done
        if done == 0:
            return total
