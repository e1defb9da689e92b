"""Instants of the log as the audit routes take them: an RFC 3339 time or a log position."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING, Final, NamedTuple

from service import eventstore
from service.errors import ValidationError

if TYPE_CHECKING:
    from service.connections import Conn

MAX_POSITION_DIGITS: Final = 18


class Instant(NamedTuple):
    """A position of the log, or a time (the log's state then: the events recorded by then)."""

    position: int | None = None
    time: datetime | None = None

    async def position_in(self, conn: Conn) -> int:
        """The last position of the log's state at this instant (0: before the first event).
        A position beyond the log's end is refused; a time after it is the state now."""
        if self.time is not None:
            return await eventstore.last_at_or_before(conn, self.time)
        assert self.position is not None
        last = await eventstore.head(conn)
        if self.position > last:
            raise ValidationError(
                f"Position {self.position} is beyond the log's end ({last} events so far)"
            )
        return self.position


def parse_time(raw: str, name: str) -> datetime:
    """An RFC 3339 date-time with its offset (`2026-11-24T14:02:00Z`, `...+01:00`)."""
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        moment = None
    if moment is None or "T" not in raw.upper() or moment.tzinfo is None:
        raise ValidationError(
            f"{name} must be an RFC 3339 time with its offset (2026-11-24T14:02:00Z) or a "
            f"log position - at `{name}`"
        )
    return moment.astimezone(UTC)


def parse_instant(raw: str, name: str) -> Instant:
    """A log position (a whole number) or an RFC 3339 time."""
    if raw.isascii() and raw.isdigit():
        if len(raw) > MAX_POSITION_DIGITS:
            raise ValidationError(f"{name} is not a position of the log - at `{name}`")
        return Instant(position=int(raw))
    return Instant(time=parse_time(raw, name))


def day_or_time(raw: str, name: str, *, end: bool) -> datetime:
    """The start of a range, or with `end` its exclusive end, from Unleash's `yyyy-MM-dd` (a
    whole UTC day) or an RFC 3339 time (which the range includes)."""
    try:
        day = date.fromisoformat(raw) if len(raw) == len("yyyy-mm-dd") else None
    except ValueError:
        day = None
    if day is None:
        moment = parse_time(raw, name)
        return moment + timedelta(microseconds=1) if end else moment
    start = datetime.combine(day, time(), UTC)
    return start + timedelta(days=1) if end else start
