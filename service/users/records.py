"""The encoded user records a replica remembers for searches, each with the row version it was
encoded from.

A page of search results is mostly people the replica has returned before, unchanged since: for
a page of 100, fetching, decoding, building and encoding their rows is most of the CPU the
service spends on the search (docs/benchmarks.md, "User search"). So a search asks
PostgreSQL for the page's ids and row versions only (`xmin`: the transaction that wrote the
row's version; any change to a row, in any column, gives it another), takes the records whose
version is the one remembered, and fetches the rows of the others.

A record is only ever used for the version it was encoded from, so nothing stale is served: a
person changed, signed in or deleted since is fetched again, or is not on the page. A version is
a 32-bit transaction id; two versions of one row with the same id would be 2^32 transactions
apart, and the older still remembered. At most MOST records are kept, the least recently used
leaving first, and none that no search used for UNUSED_SECONDS; they live in the process's
memory only (docs/privacy.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Sequence

    import asyncpg

MOST: Final = 50_000  # records held at most, so that their memory stays bounded
UNUSED_SECONDS: Final = 600.0  # a record no search used for this long leaves
PRUNE_SECONDS: Final = 60.0
# When a record was last used is written again at most this often (it only decides pruning).
TOUCH_SECONDS: Final = 1.0


class Records:
    """Encoded records by account id, each with its row version and when a search last used
    it; least recently used first."""

    def __init__(self, most: int = MOST) -> None:
        self._held: OrderedDict[int, tuple[int, bytes, float]] = OrderedDict()
        self._most = most

    def __len__(self) -> int:
        return len(self._held)

    def held(self, ids: Sequence[int], versions: Sequence[int], now: float) -> list[bytes | None]:
        """The records of these people as remembered at these versions (None where not), in
        one pass over a page: each one used is now the most recently used."""
        held = self._held
        touch = held.move_to_end
        found: list[bytes | None] = []
        for account_id, version in zip(ids, versions, strict=True):
            entry = held.get(account_id)
            if entry is None or entry[0] != version:
                found.append(None)
                continue
            if now - entry[2] >= TOUCH_SECONDS:
                held[account_id] = (version, entry[1], now)
            touch(account_id)
            found.append(entry[1])
        return found

    def put(self, account_id: int, version: int, record: bytes, now: float) -> None:
        self._held[account_id] = (version, record, now)
        self._held.move_to_end(account_id)
        while len(self._held) > self._most:
            self._held.popitem(last=False)

    def prune(self, now: float, unused: float = UNUSED_SECONDS) -> None:
        """Let go of the records no search used for `unused` seconds (the least recently used
        are first)."""
        while self._held:
            account_id, (_, _, used) = next(iter(self._held.items()))
            if now - used < unused:
                return
            del self._held[account_id]

    async def run(self, stop: asyncio.Event) -> None:
        """Prune every PRUNE_SECONDS until stopped: a deleted person's record does not stay in
        an idle replica's memory."""
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), PRUNE_SECONDS)
            self.prune(time.monotonic())


def wanted(
    ids: Sequence[int], versions: Sequence[int], held: Sequence[bytes | None]
) -> dict[int, int]:
    """The ids and versions of the page's people whose records are not held."""
    return {
        account_id: version
        for account_id, version, record in zip(ids, versions, held, strict=True)
        if record is None
    }


def unchanged(wanted: dict[int, int], fetched: Sequence[asyncpg.Record]) -> bool:
    """Whether the rows fetched for the records not held are at the versions the page was found
    at: a person changed or deleted in between would make the page a mix of two moments."""
    return {row["id"]: row["version"] for row in fetched} == wanted
