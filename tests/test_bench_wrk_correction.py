"""What wrk's correction for coordinated omission makes of a stall (tests/bench/wrk_correction.py),
the arithmetic behind docs/benchmarks.md's reading of the delete cells' p99."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.bench import wrk_correction


def test_a_latency_also_counts_at_each_interval_below_it() -> None:
    # 4 requests of 1 connection in 400 us: interval 100 us; a 350 us latency adds 250 and 150.
    counts = wrk_correction.corrected([50, 50, 50, 350], runtime_us=400, connections=1)
    assert counts == Counter({50: 3, 350: 1, 250: 1, 150: 1})
    # Below twice the interval nothing is added.
    assert wrk_correction.corrected([50, 150], 200, 1) == Counter({50: 1, 150: 1})


@pytest.mark.parametrize("rate", [700, 1000, 1500, 2500])
def test_one_stall_of_140_ms_puts_a_16_connection_p99_over_40_ms_at_any_rate(rate: int) -> None:
    assert wrk_correction.cell_p99_ms(rate, []) < 40
    assert wrk_correction.cell_p99_ms(rate, [100]) < 40
    assert wrk_correction.cell_p99_ms(rate, [130]) < 40
    assert wrk_correction.cell_p99_ms(rate, [140]) > 40
    assert wrk_correction.cell_p99_ms(rate, [250]) > 140
    # Stalls add up: their time beyond 40 ms is what counts.
    assert wrk_correction.cell_p99_ms(rate, [90, 90, 90]) > 40


def test_the_command_prints_a_cells_p99(capsys: pytest.CaptureFixture[str]) -> None:
    assert wrk_correction.main(["1000", "140"]) == 0
    assert capsys.readouterr().out.strip().endswith(" ms")
    assert wrk_correction.main([]) == 2
