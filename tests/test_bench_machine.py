"""The machine probe that `make bench-compare` prints beside its table (tests/bench/machine.py)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from tests.bench import machine

if TYPE_CHECKING:
    from pathlib import Path


def test_the_flush_probe_samples_until_stopped_and_leaves_no_file(tmp_path: Path) -> None:
    probe = machine.FlushProbe(tmp_path)
    probe.start()
    time.sleep(0.5)
    middle = time.monotonic()
    time.sleep(0.5)
    probe.stop()
    everything = probe.between()
    assert everything.count >= 3  # one flush every 0.1 s, however slow the disk is now and then
    assert 0 < everything.median_ms <= everything.max_ms
    assert 0 <= everything.stalls <= everything.count
    first, second = probe.between(end=middle), probe.between(start=middle)
    assert first.count + second.count == everything.count
    assert max(first.max_ms, second.max_ms) == everything.max_ms
    assert list(tmp_path.iterdir()) == []
    assert not probe.is_alive()


def test_a_span_without_flushes_says_so(tmp_path: Path) -> None:
    nothing = machine.FlushProbe(tmp_path).between()  # never started
    assert nothing == machine.Flushes(0, 0.0, 0.0, 0)
    assert nothing.text() == "no disk flush sampled"
    text = machine.Flushes(120, 0.3, 812.4, 3).text()
    assert text == (
        "120 disk flushes sampled (one 8 KiB write and fdatasync every 0.1 s): median 0.3 ms, "
        "slowest 812 ms, 3 over 20 ms"
    )


def test_the_cpu_loop_is_timed() -> None:
    assert 0 < machine.cpu_loop_seconds(repeat=1) < 60
