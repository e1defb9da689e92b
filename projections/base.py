"""What a projection is: its tables and a function applying one recorded event to them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from service.codec import RecordedEvent
from service.connections import Conn

Apply = Callable[[Conn, RecordedEvent], Awaitable[None]]


@dataclass(frozen=True)
class Projection:
    """Tables are unqualified names in schema `readmodel`; SQL must not qualify them, so that
    verify can rebuild them into a scratch schema through search_path. `apply` dispatches with
    `match` on the event type and ignores the types it does not read; it is idempotent and
    uses ON CONFLICT (columns), never constraint names (scratch copies rename constraints)."""

    name: str
    mode: Literal["inline", "async"]
    tables: tuple[str, ...]
    apply: Apply
