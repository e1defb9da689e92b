"""What tests/bench/integrations.py makes of the receivers' arrivals: lag, duplicates, losses,
order and the trend, on made-up arrivals (the figures docs/benchmarks.md quotes)."""

from __future__ import annotations

from tests.bench.integrations import Run, Sample, deliveries_of, writes_of


def run(started: float = 1000.0, ended: float = 1010.0) -> Run:
    return Run(
        name="r",
        rate=10,
        seconds=ended - started,
        started=started,
        ended=ended,
        load_average=0.0,
        cpu_loop_s=0.0,
    )


def test_lag_is_the_first_arrival_after_the_commit_and_repeats_are_duplicates() -> None:
    log = {10: 1000.0, 11: 1001.0, 12: 1002.0}
    arrivals = [(10, 1000.5), (11, 1001.25), (11, 1003.0), (12, 1004.0)]
    [row], _ = deliveries_of(log, [arrivals], run())
    assert (row.expected, row.received, row.unique, row.duplicates, row.lost) == (3, 4, 3, 1, 0)
    assert row.in_order
    assert (row.lag_p50_ms, row.lag_max_ms) == (500.0, 2000.0)


def test_an_event_that_never_came_is_lost_and_one_out_of_order_is_seen() -> None:
    log = {10: 1000.0, 11: 1001.0, 12: 1002.0}
    [row], _ = deliveries_of(log, [[(12, 1002.1), (10, 1002.2)]], run())
    assert (row.unique, row.lost) == (2, 1)
    assert not row.in_order


def test_the_trend_groups_lags_by_the_commit_time_over_every_receiver() -> None:
    log = {1: 1000.0, 2: 1006.0}
    first = [(1, 1000.1), (2, 1009.0)]
    second = [(1, 1000.2), (2, 1007.0)]
    _, trend = deliveries_of(log, [first, second], run())
    assert [(w.committed_from_s, w.events) for w in trend] == [(0.0, 1), (5.0, 1)]
    assert round(trend[0].lag_max_ms) == 200
    assert round(trend[1].lag_max_ms) == 3000


def test_write_latency_counts_from_when_a_request_was_due_and_skips_the_warm_up() -> None:
    measured = run(0.0, 1.0)
    measured.samples = [
        Sample(due=-0.5, latency_ms=900.0, service_ms=1.0, status=200),  # warm-up
        *(Sample(due=i / 100, latency_ms=2.0, service_ms=1.0, status=200) for i in range(99)),
        Sample(due=0.99, latency_ms=300.0, service_ms=3.0, status=0),
    ]
    measured.unanswered = 2
    writes = writes_of(measured)
    assert writes.requests == 100
    assert (writes.p50_ms, writes.max_ms) == (2.0, 300.0)
    assert writes.errors == 3
