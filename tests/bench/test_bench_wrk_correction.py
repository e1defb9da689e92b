"""What wrk's correction for coordinated omission makes of a stall (tests/bench/wrk_correction.py),
the arithmetic behind docs/benchmarks.md's reading of the delete cells' p99."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.bench import wrk_correction

# Rates across 700-4,000 a second, with those where the crossing is lowest and highest.
RATES = [*range(700, 4001, 97), 793, 3961]


def test_a_latency_also_counts_at_each_interval_below_it() -> None:
    # 4 requests of 1 connection in 400 us: interval 100 us; a 350 us latency adds 250 and 150.
    counts = wrk_correction.corrected([50, 50, 50, 350], runtime_us=400, connections=1)
    assert counts == Counter({50: 3, 350: 1, 250: 1, 150: 1})
    # Below twice the interval nothing is added.
    assert wrk_correction.corrected([50, 150], 200, 1) == Counter({50: 1, 150: 1})


@pytest.mark.parametrize("rate", RATES)
def test_one_stall_of_143_ms_puts_a_16_connection_p99_over_40_ms_and_120_ms_does_not(
    rate: int,
) -> None:
    assert wrk_correction.cell_p99_ms(rate, []) < 40
    assert wrk_correction.cell_p99_ms(rate, [120]) <= 40
    assert wrk_correction.cell_p99_ms(rate, [143]) > 40
    assert wrk_correction.cell_p99_ms(rate, [250]) > 140
    # Stalls add up: their time beyond 40 ms is what counts.
    assert wrk_correction.cell_p99_ms(rate, [100, 100, 100]) > 40


def test_between_120_and_143_ms_it_depends_on_the_rate_and_goes_in_steps() -> None:
    # The p99 moves in steps of one interval: not even monotonic in the stall's length.
    assert wrk_correction.cell_p99_ms(793, [121]) > 40
    assert wrk_correction.cell_p99_ms(793, [122]) <= 40
    assert wrk_correction.cell_p99_ms(793, [141]) <= 40
    assert wrk_correction.cell_p99_ms(3961, [141]) <= 40
    assert wrk_correction.cell_p99_ms(3961, [142]) > 40


def test_the_command_prints_a_cells_p99(capsys: pytest.CaptureFixture[str]) -> None:
    assert wrk_correction.main(["1000", "143"]) == 0
    assert float(capsys.readouterr().out.removesuffix(" ms\n")) > 40
    assert wrk_correction.main([]) == 2  # usage
    for wrong in (
        ["0", "100"],
        ["-5"],
        ["fast"],
        ["1000", "-1"],
        ["inf", "100"],
        ["1000", "inf"],
        ["nan"],
        ["1e9", "100"],
    ):
        assert wrk_correction.main(wrong) == 2
    with pytest.raises(ValueError, match="rate"):
        wrk_correction.cell_p99_ms(0, [100])
