"""Reads of the audit routes: what the event log's pages need besides their own events."""

from __future__ import annotations

from typing import TYPE_CHECKING

from eventlog.events.users import UserCreated, UserDeleted, UsersImported, UserUpdated
from service.audit import history, logsearch

if TYPE_CHECKING:
    from eventlog.connections import Conn
    from eventlog.events.users import UserRecord
    from service.audit.logsearch import LogEntry


async def contexts(conn: Conn, page: list[LogEntry]) -> dict[int, history.Context]:
    """For each event of a page, by position: its preData's state, a flag's tags, its project."""
    upto = history.streams_to_fold(page)
    types = sorted({t for stream_type, _ in upto for t in history.FOLDED.get(stream_type, ())})
    folded = await logsearch.stream_history(conn, upto, types)
    return history.fold(page, folded, await _imported(conn, page, folded))


async def _imported(
    conn: Conn, page: list[LogEntry], folded: list[LogEntry]
) -> dict[int, UserRecord]:
    """People whose account changes the page shows but whose stream never says who they were
    (they came in through `import-users`): their record from the import batch."""
    created = {
        int(e.recorded.stream_key) for e in folded if isinstance(e.recorded.event, UserCreated)
    }
    firsts: dict[int, int] = {}
    for entry in page:
        record = entry.recorded
        if isinstance(record.event, UserUpdated | UserDeleted) and record.position is not None:
            user = record.event.user_id
            if user not in created:
                firsts[user] = min(firsts.get(user, record.position), record.position)
    found: dict[int, UserRecord] = {}
    for user, before in firsts.items():
        batch = await logsearch.import_of_user(conn, user, before)
        if batch is not None and isinstance(batch.recorded.event, UsersImported):
            found |= {u.user_id: u for u in batch.recorded.event.users if u.user_id == user}
    return found
