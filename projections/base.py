"""What a projection is: its tables, the event types it reads, and a pure apply function."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from service.connections import Conn
from service.events import RecordedEvent

Apply = Callable[[Conn, RecordedEvent], Awaitable[None]]


@dataclass(frozen=True)
class Projection:
    """Tables are unqualified names in schema `readmodel`; SQL must not qualify them, so that
    verify can rebuild them into a scratch schema through search_path. Handlers are idempotent
    and use ON CONFLICT (columns), never constraint names (scratch copies rename constraints)."""

    name: str
    mode: Literal["inline", "async"]
    tables: tuple[str, ...]
    handles: frozenset[str] | None  # None: every event type
    apply: Apply

    def wants(self, recorded: RecordedEvent) -> bool:
        return self.handles is None or recorded.event.type_name() in self.handles
