"""What a projection is: its tables and a pure function from one recorded event to writes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from eventlog.codec import RecordedEvent
from projections.writes import Table, Write

if TYPE_CHECKING:
    from eventlog.events.base import Event

Writes = Callable[[RecordedEvent], list[Write]]


@dataclass(frozen=True)
class Projection:
    """Tables are unqualified names in schema `readmodel`: writes never qualify them, so that a
    rebuild can target a scratch schema or temporary tables through search_path. `writes`
    dispatches with `match` on the event type and returns [] for the types it does not read;
    its writes are idempotent (inserts on the primary key, counters guarded by position)."""

    name: str
    mode: Literal["inline", "async"]
    tables: tuple[Table, ...]
    writes: Writes
    # The event types `writes` reads (None: every event); a rebuild skips the others.
    handles: frozenset[type[Event]] | None
    # Whether `writes` reads the event itself (or only events of these types), and the
    # metadata (who, which request): a rebuild decodes neither when no projection of its group
    # does (tests/eventlog/test_rebuild.py checks that a projection's writes do not change with
    # what it says it does not read).
    reads_event: bool | frozenset[type[Event]] = True
    reads_metadata: bool = False
    # Whether an event's writes touch only rows of its own stream (a flag's events, its rows):
    # a rebuild may then split the log between processes by stream (registry.GROUPS; the
    # tests compare such a split rebuild with a whole one).
    by_stream: bool = False
