"""The machine probe that `make bench-compare` prints beside its table (tests/bench/machine.py),
and how the benchmark gives each cell its slowest flush."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tests.bench import machine
from tests.bench.compare import Cell, Row

if TYPE_CHECKING:
    import pytest

SAMPLES = [(10.0, 0.4), (10.1, 0.5), (10.2, 850.0), (11.1, 0.3), (11.2, 25.0)]  # (start, ms)


def test_a_flush_counts_in_every_span_it_overlaps() -> None:
    assert machine.flushes_between(SAMPLES) == machine.Flushes(5, 0.5, 850.0, 2)
    # The stall began at 10.2 and ended at 11.05: it is in a span that starts while it waits.
    assert machine.flushes_between(SAMPLES, 10.5, 11.0) == machine.Flushes(1, 850.0, 850.0, 1)
    assert machine.flushes_between(SAMPLES, 11.04, 11.15).max_ms == 850.0
    assert machine.flushes_between(SAMPLES, 11.06, 11.15) == machine.Flushes(1, 0.3, 0.3, 0)
    assert machine.flushes_between(SAMPLES, end=10.15).max_ms == 0.5  # before the stall began
    assert machine.flushes_between(SAMPLES, 12.0) == machine.Flushes(0, 0.0, 0.0, 0)


def test_a_flush_still_waiting_counts_with_the_time_it_has_waited() -> None:
    probe = machine.FlushProbe(Path("/nonexistent"))  # never started: no samples
    probe._flushing_since = time.monotonic() - 0.5  # as `run` sets it while a flush waits
    waiting = probe.between(start=time.monotonic() - 0.1)
    assert waiting.count == 1
    assert waiting.max_ms >= 500
    assert waiting.stalls == 1


def test_the_probe_samples_until_stopped_and_leaves_no_file(tmp_path: Path) -> None:
    probe = machine.FlushProbe(tmp_path)
    probe.start()
    time.sleep(0.5)
    assert list(tmp_path.iterdir()) == []  # unlinked as soon as it was open
    time.sleep(1.0)
    probe.stop()
    everything = probe.between()
    assert probe.error is None
    assert everything.count >= 3  # one flush every 0.1 s, however slow the disk is now and then
    assert 0 < everything.median_ms <= everything.max_ms
    assert not probe.is_alive()


def test_a_probe_that_cannot_write_says_why_and_samples_nothing(tmp_path: Path) -> None:
    probe = machine.FlushProbe(tmp_path / "missing")
    probe.start()
    probe.join(timeout=5)
    assert not probe.is_alive()
    assert probe.error is not None
    assert probe.error.startswith("FileNotFoundError")
    assert probe.between() == machine.Flushes(0, 0.0, 0.0, 0)
    assert probe.between().text() == "no disk flush sampled"


def test_a_probe_whose_disk_fails_keeps_what_it_sampled_and_nothing_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A flush that raised is not one still waiting: no phantom stall grows after it."""
    calls = []

    def failing_after_two(fd: int) -> None:  # no disk at all: a busy one stalls now and then
        calls.append(fd)
        if len(calls) > 2:
            raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fdatasync", failing_after_two)
    probe = machine.FlushProbe(tmp_path)
    probe.start()
    probe.join(timeout=5)
    assert probe.error == "OSError: [Errno 5] Input/output error"
    first = probe.between()
    time.sleep(0.3)
    assert probe.between() == first
    assert first.count == 2
    assert first.max_ms < 300
    assert list(tmp_path.iterdir()) == []


def test_the_text_gives_the_median_the_slowest_and_the_stalls() -> None:
    assert machine.Flushes(120, 0.3, 812.4, 3).text() == (
        "120 disk flushes sampled (one 8 KiB write and fdatasync every 0.1 s): median 0.3 ms, "
        "slowest 812 ms, 3 over 20 ms"
    )


def test_a_rows_slowest_flush_is_its_cells_highest_or_a_dash_without_one() -> None:
    def cell(flush: float | None) -> Cell:
        made = Cell("delete", 16, "ours", 0, 1000.0, 10.0, 30.0, {}, 0, {}, 0, [], 0, 0, 0, 0)
        made.slowest_flush_ms = flush
        return made

    row = Row("delete", 16, {"ours": [cell(2.5), cell(1234.4)], "reference": [cell(None)]})
    assert row.slowest_flush("ours") == "1,234"
    assert row.slowest_flush("reference") == "-"


def test_the_cpu_loop_is_timed() -> None:
    assert 0 < machine.cpu_loop_seconds(repeat=1) < 60
