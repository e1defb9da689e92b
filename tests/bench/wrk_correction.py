"""What wrk's p99 makes of a stall (the figures of `make bench-compare` are wrk's).

wrk measures with a fixed number of connections, each sending its next request when the last
is answered (a closed loop). Before it prints its latencies it corrects them for coordinated
omission (wrk's `stats_correct`): with `interval` the run's time over the requests a
connection made, every recorded latency `n` also counts at `n - interval`, `n - 2 x interval`
and so on down to `interval`, as if the requests that connection would have sent during the
wait had been sent and had waited too. A stall of D ms that holds all c connections then adds
about c x D / interval = rate x D latencies between the interval and D: at any rate, as many
for each millisecond of the stall as the run answers in a millisecond.

So with a 10 s cell, a bar on the p99 is a bar on the stalls: a p99 under 40 ms leaves room for
1 % of the cell's requests above 40 ms, about 100 ms of stalls beyond 40 ms. At 700-4,000
requests a second one stall of 16 connections of 143 ms or more always crosses that bar, and
one of 120 ms or less never does (the tests check both at 37 rates across the range; a scan of
every whole rate agrees). In between it depends on the rate: the p99 moves in steps of one
interval (16 / rate seconds) and is not even monotonic there (at 793/s a stall of 121 ms
crosses, those of 122-141 ms do not). A commit waits for its WAL's flush, so one disk flush of about
that length during a writing cell decides it.

`python -m tests.bench.wrk_correction RATE STALL_MS...` prints the p99 of a 10 s, 16-connection
cell at RATE requests a second with the given stalls (each holding every connection).
"""

from __future__ import annotations

import sys
from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable


# What the command takes (a cell is held as a list of its latencies).
MOST_RATE = 100_000
MOST_STALL_MS = 60_000


def corrected(latencies_us: Iterable[int], runtime_us: int, connections: int) -> Counter[int]:
    """The latencies (in microseconds, one per request) as wrk counts them after its
    correction: a histogram, value -> count."""
    counts = Counter(latencies_us)
    complete = sum(counts.values())
    if complete // connections == 0:
        return counts
    interval = runtime_us // (complete // connections)
    for value, count in sorted(counts.items()):
        extra = value - interval
        while value >= 2 * interval and extra > interval:
            counts[extra] += count
            extra -= interval
    return counts


def percentile(counts: Counter[int], share: float) -> int:
    """The smallest value with at least `share` of the counts at or below it."""
    total = sum(counts.values())
    seen = 0
    for value in sorted(counts):
        seen += counts[value]
        if seen >= share * total:
            return value
    raise ValueError("no counts")


def cell_p99_ms(
    rate: float,
    stalls_ms: Iterable[float],
    *,
    seconds: float = 10.0,
    connections: int = 16,
) -> float:
    """wrk's p99 of a cell of `connections` answering `rate` requests a second, each in the
    time a closed loop gives it (connections / rate), but for the stalls: each holds every
    connection's request for its time."""
    if rate <= 0:
        raise ValueError("a rate over 0")
    latency_ms = connections / rate * 1000
    stalls = list(stalls_ms)
    runtime_us = int(seconds * 1_000_000)
    normal = max(int(rate * seconds) - connections * len(stalls), 0)
    latencies = [int(latency_ms * 1000)] * normal
    for stall in stalls:
        latencies += [int(stall * 1000)] * connections
    return percentile(corrected(latencies, runtime_us, connections), 0.99) / 1000


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    try:
        rate, stalls = float(argv[0]), [float(s) for s in argv[1:]]
    except ValueError:
        rate, stalls = 0.0, []
    if not 0 < rate <= MOST_RATE or any(not 0 <= s <= MOST_STALL_MS for s in stalls):
        print(
            f"RATE must be a number over 0 and at most {MOST_RATE:,}, and each STALL_MS a "
            f"number from 0 to {MOST_STALL_MS:,}"
        )
        return 2
    print(f"{cell_p99_ms(rate, stalls):.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
