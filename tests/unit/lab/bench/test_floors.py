"""The pacing of the floors at a step's rate (lab/bench/floors.py)."""

from __future__ import annotations

import time

from lab.bench.floors import paced


def test_paced_sends_each_index_once_in_order_and_never_ahead_of_the_rate() -> None:
    start = time.monotonic()
    calls: list[tuple[int, float]] = []
    sent = paced(200.0, 0.5, lambda i: calls.append((i, time.monotonic() - start)))
    assert sent == 100
    assert [i for i, _ in calls] == list(range(100))
    assert all(at >= i / 200.0 - 0.005 for i, at in calls)  # the i-th goes no sooner than i / rate


def test_a_slow_send_is_caught_up_so_the_count_is_the_rate_times_the_time() -> None:
    def slow(i: int) -> None:
        if i == 0:
            time.sleep(0.2)

    assert paced(100.0, 0.4, slow) == 40
