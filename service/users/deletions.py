"""Deleting inactive users, in batches: deletions that arrive together commit together
(group commit, service/batches.py), each decided on its own share of the users locked at once
and appended as a stream of its own, as if they had run one after another."""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Final

from aiohttp import web

from eventlog.events.users import UserRecord
from service.appkeys import POOL, SETTINGS, WORK
from service.batches import Batcher
from service.privacy import erasure
from service.users import domain, queries
from service.work import NewStream

if TYPE_CHECKING:
    from collections.abc import Sequence

    from eventlog.events.base import Metadata
    from service.settings import Settings

# Deletions arriving together commit together (service/batches.py): as many as list at most this
# many ids in all (a request that lists more runs alone: a transaction of many stays about as
# long as one large request's, well within the statement timeout), and this many transactions
# at once (one gathers while the other commits).
BATCH_IDS: Final = 1000
LANES: Final = 2


@dataclass(frozen=True, slots=True)
class Deletion:
    """One request's deletion: the ids it lists, its caller's account id (-1: none) and its
    events' envelope."""

    ids: list[int]
    caller: int
    metadata: Metadata


DELETIONS: Final = web.AppKey("inactive_deletions", Batcher[Deletion])


def deletions(app: web.Application) -> Batcher[Deletion]:
    """The app's batcher of deletions (set as app[DELETIONS] by the wiring)."""
    return Batcher(functools.partial(_delete_together, app), most=BATCH_IDS, lanes=LANES, size=_ids)


def _ids(deletion: Deletion) -> int:
    return len(deletion.ids)


def threshold(settings: Settings, now: datetime) -> datetime:
    return now - timedelta(days=settings.user_inactivity_threshold_in_days)


async def _delete_together(app: web.Application, deletions: Sequence[Deletion]) -> None:
    """Deletions in one transaction: the listed users locked at once, each deletion decided on
    its share, each appended as a stream of its own."""
    settings = app[SETTINGS]
    now = datetime.now(UTC)
    async with app[WORK].on(app[POOL]) as uow:
        # No caller left out here: each deletion leaves its own out (domain.split_inactive).
        listed = sorted({i for d in deletions for i in d.ids})
        rows = await uow.conn.fetch(queries.LOCK_INACTIVE, threshold(settings, now), listed, -1)
        inactive = [
            UserRecord(
                user_id=r["id"],
                name=r["name"],
                username=r["username"],
                email=r["email"],
                root_role=r["root_role"],
                created_at=r["created_at"],
                seen_at=r["seen_at"],
            )
            for r in rows
        ]
        shares = domain.split_inactive(inactive, [(d.ids, d.caller) for d in deletions])
        decided = [
            (d, event)
            for d, share in zip(deletions, shares, strict=True)
            if (
                event := domain.delete_inactive(
                    share, inactive_days=settings.user_inactivity_threshold_in_days, now=now
                )
            )
            is not None
        ]
        if not decided:
            return
        erased = await erasure.on_deletion(
            uow.conn,
            [u.user_id for _, event in decided for u in event.users],
            delay_days=settings.erasure_delay_days,
            now=now,
        )
        by_person = {e.person_id: e for e in erased}
        await uow.append_new(
            [
                NewStream(
                    ("user-batch", str(uuid.uuid4())),
                    [event, *(by_person[u.user_id] for u in event.users if u.user_id in by_person)],
                    d.metadata,
                )
                for d, event in decided
            ],
            erased=by_person.keys(),
        )
