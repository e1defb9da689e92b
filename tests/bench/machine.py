"""How the machine itself behaves while a benchmark runs: a fixed CPU loop's time, and the
disk's flush latency sampled in the background (`tests.bench.compare` prints both).

A commit waits for its WAL to reach the disk (fdatasync), so a disk that now and then takes
hundreds of milliseconds to flush puts those milliseconds into the p99 of every operation that
writes, on any server; a CPU that is slower than usual (a virtual machine on a shared host)
lowers every cell. Neither shows in a table of requests a second; these two numbers do.

`python -m tests.bench.machine [SECONDS]` prints the probe alone (5 s by default), in the
same directory as `make bench-compare` probes (the system's temporary directory, /tmp).
"""

from __future__ import annotations

import os
import signal
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable
    from types import FrameType

CPU_LOOP = 3 * 10**7  # sum(range(CPU_LOOP)): long enough to time, short enough to repeat
FLUSH_INTERVAL_S = 0.1  # one flush every 0.1 s: no load worth the name on the disk
FLUSH_BYTES = 8192  # one PostgreSQL page
STALL_MS = 20.0  # a flush slower than this is counted as a stall


def cpu_loop_seconds(repeat: int = 3) -> float:
    """The median time of a fixed pure-Python loop: lower is a faster CPU right now."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        sum(range(CPU_LOOP))
        times.append(time.perf_counter() - started)
    return statistics.median(times)


@dataclass(frozen=True)
class Flushes:
    """Flush latencies (ms) of a span of time."""

    count: int
    median_ms: float
    max_ms: float
    stalls: int  # over STALL_MS

    def text(self) -> str:
        if not self.count:
            return "no disk flush sampled"
        return (
            f"{self.count:,} disk flushes sampled (one 8 KiB write and fdatasync every "
            f"{FLUSH_INTERVAL_S:g} s): median {self.median_ms:.1f} ms, slowest "
            f"{self.max_ms:,.0f} ms, {self.stalls} over {STALL_MS:.0f} ms"
        )


def flushes_between(
    samples: Iterable[tuple[float, float]],
    start: float = float("-inf"),
    end: float = float("inf"),
) -> Flushes:
    """The flushes among `samples` ((started, ms), time.monotonic()) that ran during any part
    of [start, end]: a flush that began before `start` and was still waiting at it counts, so
    a stall that spans the edge of a span is in it."""
    took = sorted(ms for at, ms in samples if at <= end and at + ms / 1000 >= start)
    if not took:
        return Flushes(0, 0.0, 0.0, 0)
    return Flushes(len(took), statistics.median(took), took[-1], sum(ms > STALL_MS for ms in took))


class FlushProbe(threading.Thread):
    """Writes one page to a file of its own in `directory` and flushes it every
    FLUSH_INTERVAL_S until stopped, remembering when each flush started and how long it took.
    The file is unlinked as soon as it is open (the flushes go to its blocks all the same), so
    nothing is left behind however the process ends. If writing fails, `error` says why and
    no more flushes are sampled."""

    def __init__(self, directory: Path) -> None:
        super().__init__(name="flush-probe", daemon=True)
        self._directory = directory
        self._stop_event = threading.Event()
        self._samples: list[tuple[float, float]] = []  # (monotonic start, ms)
        self._flushing_since: float | None = None
        self._lock = threading.Lock()
        self.error: str | None = None

    def run(self) -> None:
        try:
            fd, name = tempfile.mkstemp(prefix="flush-probe-", dir=self._directory)
        except OSError as exc:
            self.error = f"{type(exc).__name__}: {exc}"
            return
        page = b"\0" * FLUSH_BYTES
        try:
            Path(name).unlink()
            while not self._stop_event.is_set():
                started = time.monotonic()
                with self._lock:
                    self._flushing_since = started
                os.pwrite(fd, page, 0)
                os.fdatasync(fd)
                took = (time.monotonic() - started) * 1000
                with self._lock:
                    self._samples.append((started, took))
                    self._flushing_since = None
                self._stop_event.wait(FLUSH_INTERVAL_S)
        except OSError as exc:
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            with self._lock:
                self._flushing_since = None  # a failed flush is not one still waiting
            os.close(fd)

    def stop(self) -> None:
        self._stop_event.set()
        self.join()

    def between(self, start: float = float("-inf"), end: float = float("inf")) -> Flushes:
        """The flushes during any part of [start, end] (time.monotonic(); `flushes_between`),
        a flush still waiting now counted with the time it has waited so far."""
        with self._lock:
            now = time.monotonic()
            samples = list(self._samples)
            if self._flushing_since is not None:
                samples.append((self._flushing_since, (now - self._flushing_since) * 1000))
        return flushes_between(samples, start, end)


def main() -> int:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    signal.signal(signal.SIGTERM, _interrupt)
    probe = FlushProbe(Path(tempfile.gettempdir()))
    interrupted = False
    try:
        print(f"a fixed CPU loop: {cpu_loop_seconds():.2f} s (median of 3)")
        probe.start()
        time.sleep(seconds)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: what was sampled so far, and exit 130
        interrupted = True
        print("interrupted", file=sys.stderr)
    finally:
        if probe.is_alive():
            probe.stop()
    print(probe.between().text() if probe.error is None else f"the probe failed: {probe.error}")
    return 130 if interrupted else 0 if probe.error is None else 1


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
