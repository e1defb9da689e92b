"""Instants of the log as the audit routes take them: an RFC 3339 time or a log position."""

from __future__ import annotations

import contextlib
import re
from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING, Final, NamedTuple

import eventlog
from service.errors import ValidationError

if TYPE_CHECKING:
    from eventlog.connections import Conn

MAX_POSITION_DIGITS: Final = 18


# RFC 3339's date-time (section 5.6): a date, `T`, a time with seconds, a fraction if any, and
# `Z` or an offset (either letter may be lower case). Fractions past microseconds are cut.
_RFC3339 = re.compile(
    r"(\d{4}-\d{2}-\d{2})[Tt](\d{2}:\d{2}:\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})"
)
# The same forms as JSON Schema patterns, for the OpenAPI document (ASCII digits only).
_TIME_PATTERN: Final = (
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})"
)
INSTANT_PATTERN: Final = rf"^([0-9]{{1,18}}|{_TIME_PATTERN})$"  # a position or a time
INSTANT_OR_NOW_PATTERN: Final = rf"^([0-9]{{1,18}}|{_TIME_PATTERN})?$"  # empty: now
DAY_OR_TIME_PATTERN: Final = rf"^(IS:([0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}|{_TIME_PATTERN}))?$"
AS_TIME: Final = "an RFC 3339 time with its offset (2026-11-24T14:02:00Z)"
AS_INSTANT: Final = f"{AS_TIME} or a log position"
# The first and last times there are (a time given past them stands for them).
EARLIEST: Final = datetime.min.replace(tzinfo=UTC)
LATEST: Final = datetime.max.replace(tzinfo=UTC)


class Instant(NamedTuple):
    """A position of the log, or a time (the log's state then: the events recorded by then)."""

    position: int | None = None
    time: datetime | None = None
    name: str = "at"  # the parameter it came from, for messages

    async def position_in(self, conn: Conn) -> int:
        """The last position of the log's state at this instant (0: before the first event).
        A position beyond the log's end is refused; a time after it is the state now."""
        if self.time is not None:
            return await eventlog.last_at_or_before(conn, self.time)
        assert self.position is not None
        last = await eventlog.head(conn)
        if self.position > last:
            raise ValidationError(
                f"Position {self.position} is beyond the log's end ({last} events so far) "
                f"- at `{self.name}`"
            )
        return self.position


def parse_time(raw: str, name: str, expected: str = AS_INSTANT) -> datetime:
    """An RFC 3339 date-time with its offset (`2026-11-24T14:02:00Z`, `...+01:00`), in UTC; a
    time beyond the range of times there are is the first or the last of them."""
    found = _RFC3339.fullmatch(raw)
    moment = None
    if found is not None:
        zone = "+00:00" if found[4] in "Zz" else found[4]
        fraction = (found[3] or "")[:7]
        with contextlib.suppress(ValueError):  # e.g. month 13, or an offset of 24 hours
            moment = datetime.fromisoformat(f"{found[1]}T{found[2]}{fraction}{zone}")
    if moment is None:
        raise ValidationError(f"{name} must be {expected} - at `{name}`")
    try:
        return moment.astimezone(UTC)
    except OverflowError:  # 9999-12-31T23:59:59-01:00, 0001-01-01T00:00:00+01:00
        return LATEST if moment.year == LATEST.year else EARLIEST


def parse_instant(raw: str, name: str) -> Instant:
    """A log position (a whole number) or an RFC 3339 time."""
    if raw.isascii() and raw.isdigit():
        if len(raw) > MAX_POSITION_DIGITS:
            raise ValidationError(f"{name} is not a position of the log - at `{name}`")
        return Instant(position=int(raw), name=name)
    return Instant(time=parse_time(raw, name), name=name)


def day_or_time(raw: str, name: str, *, end: bool) -> datetime:
    """The start of a range, or with `end` its exclusive end, from Unleash's `yyyy-MM-dd` (a
    whole UTC day) or an RFC 3339 time (which the range includes)."""
    day = None
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", raw):
        with contextlib.suppress(ValueError):  # e.g. 2026-13-01
            day = date.fromisoformat(raw)
    expected = f"IS:yyyy-MM-dd or IS:<{AS_TIME}>"
    if day is None:
        moment = parse_time(raw, name, expected)
        return _after(moment, timedelta(microseconds=1)) if end else moment
    start = datetime.combine(day, time(), UTC)
    return _after(start, timedelta(days=1)) if end else start


def _after(moment: datetime, step: timedelta) -> datetime:
    """A moment a step later, or the last time there is."""
    return LATEST if LATEST - moment < step else moment + step
