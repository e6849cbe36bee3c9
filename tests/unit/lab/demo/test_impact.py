"""lab/demo/impact.py: how long the stored rate took to come back after a fault, p99 around it."""

from __future__ import annotations

from lab.demo.impact import (
    fault_impact,
    p99,
    p99_around,
    per_second,
    rate_window_s,
    stored_recovery_s,
)


def steady(start: float, end: float, rate: int) -> list[float]:
    """``rate`` times per second, evenly, from ``start`` to ``end``."""
    return [start + i / rate for i in range(int((end - start) * rate))]


def test_per_second_counts_each_time_in_its_second() -> None:
    assert per_second([0.0, 0.5, 1.0, 2.99, 3.0, -0.1], 0.0, 3) == [2, 1, 1]


def test_a_stored_rate_that_never_falls_recovers_at_once() -> None:
    sent = steady(0, 60, 100)
    stored = [t + 0.5 for t in sent]
    assert stored_recovery_s(sent, stored, 20.0) == 0.0


def test_a_stall_counts_until_the_five_second_mean_is_back_over_half_the_send_rate() -> None:
    sent = steady(0, 60, 100)
    # nothing written from 20 s to 30 s; then the backlog and the new messages, at 400/s until caught up
    stored = [t + 0.5 for t in sent if t < 19.5] + steady(30, 30 + 1050 / 400, 400)
    stored += [t + 0.5 for t in sent if t >= 30 + 1050 / 400]
    got = stored_recovery_s(sent, stored, 20.0)
    assert got is not None and 10.0 <= got <= 12.0


def test_never_back_is_no_recovery() -> None:
    sent = steady(0, 40, 100)
    stored = [t + 0.5 for t in sent if t < 20]
    assert stored_recovery_s(sent, stored, 20.0) is None
    assert stored_recovery_s([], [], 20.0) is None


def test_down_until_after_the_traffic_stopped_is_back_with_the_backlog() -> None:
    sent = steady(0, 40, 100)
    # nothing written from 20 s until 50 s, then the 2,000 messages behind at 1,000/s
    stored = [t + 0.5 for t in sent if t < 19.5] + steady(50, 52, 1000)
    got = stored_recovery_s(sent, stored, 20.0)
    assert got is not None and 30.0 <= got <= 31.0


def test_p99_is_the_nearest_rank() -> None:
    assert p99([]) is None
    assert p99(float(i) for i in range(1, 101)) == 99.0
    assert p99([3.0]) == 3.0


def test_p99_around_a_fault_takes_ten_seconds_until_three_before_it_and_thirty_after() -> None:
    points = [(t, 0.1) for t in steady(0, 17, 10)] + [(t, 2.0) for t in steady(17, 60, 10)]
    assert p99_around(points, 20.0) == (0.1, 2.0)
    assert p99_around(points, 100.0) == (None, None)


def test_fault_impact_puts_them_together() -> None:
    sent = steady(0, 60, 50)
    impact = fault_impact(
        "kill -9 kafka-2",
        20.0,
        sent=sent,
        stored=sent,
        e2e=[(16.0, 1.0), (19.0, 9.0), (21.0, 3.0)],
        writes=[],
    )
    assert (impact.label, impact.at_s, impact.stored_recovery_s) == ("kill -9 kafka-2", 20.0, 0.0)
    assert (impact.e2e_p99_before_s, impact.e2e_p99_after_s) == (1.0, 3.0)
    assert impact.write_p99_before_s is None


def batched(sent: list[float], every_s: float, *, stall: tuple[float, float] | None = None) -> list[float]:
    """Write times of ``sent`` by a sink that writes what arrived once every ``every_s`` (1 s after its
    start); during ``stall`` (from, to) it writes nothing, then the backlog at ``to``."""
    out = []
    for t in sent:
        write = (int(t // every_s) + 1) * every_s + 1.0
        if stall is not None and stall[0] <= write < stall[1]:
            write = stall[1]
        out.append(write)
    return out


def test_the_window_spans_the_sinks_batch_interval() -> None:
    assert rate_window_s([]) == 5
    assert rate_window_s([0.0, 1.0, 2.0, 3.0]) == 5
    assert rate_window_s([0.0, 10.0, 20.5, 30.0, 40.0]) == 25


def test_a_sink_writing_every_ten_seconds_is_not_down_between_its_batches() -> None:
    sent = steady(0, 80, 100)
    stored = batched(sent, 10.0)
    assert stored_recovery_s(sent, stored, 30.0) not in (None, 0.0)  # the 5 s window sees the gaps
    assert stored_recovery_s(sent, stored, 30.0, window_s=rate_window_s([10, 20, 30, 40])) == 0.0


def test_a_batched_sink_stalled_is_back_with_its_backlog() -> None:
    sent = steady(0, 90, 100)
    stored = batched(sent, 10.0, stall=(30.0, 52.0))
    got = stored_recovery_s(sent, stored, 30.0, window_s=rate_window_s([10, 20, 30, 40]))
    assert got is not None and 15.0 <= got <= 22.0
