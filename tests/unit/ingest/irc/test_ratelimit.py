"""The JOIN rate limiter and the reconnect backoff, on a fake clock."""

from __future__ import annotations

import random

import pytest

from core.testing import FakeClock
from ingest.irc.ratelimit import Backoff, SlidingWindowLimiter


def test_at_most_limit_per_window_then_refills_when_the_window_slides() -> None:
    clock = FakeClock(1000.0)
    limiter = SlidingWindowLimiter(20, 10.0, clock)
    assert limiter.try_acquire(25) == 20
    assert limiter.available() == 0
    clock.now += 9.99
    assert limiter.try_acquire(1) == 0
    assert limiter.wait_time() == pytest.approx(0.01)
    clock.now += 0.01
    assert limiter.available() == 20
    assert limiter.wait_time() == 0.0


def test_slots_free_one_by_one_as_old_joins_leave_the_window() -> None:
    clock = FakeClock(1000.0)
    limiter = SlidingWindowLimiter(3, 10.0, clock)
    for _ in range(3):
        assert limiter.try_acquire() == 1
        clock.now += 1.0
    assert limiter.available() == 0
    clock.now += 7.0  # the first JOIN (t=0) is now 10 s old
    assert limiter.available() == 1
    assert limiter.try_acquire(3) == 1


def test_no_window_ever_holds_more_than_the_limit_under_random_demand() -> None:
    """Unlike a token bucket of the same size, which would let ~2x through within one window."""
    clock = FakeClock(1000.0)
    limiter = SlidingWindowLimiter(20, 10.0, clock)
    rng = random.Random(7)
    stamps: list[float] = []
    for _ in range(2000):
        clock.now += rng.uniform(0, 0.5)
        stamps += [clock.now] * limiter.try_acquire(rng.randrange(0, 6))
    assert len(stamps) > 500
    for i, t in enumerate(stamps):
        in_window = sum(1 for s in stamps[i:] if s < t + 10.0)
        assert in_window <= 20


def test_limiter_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        SlidingWindowLimiter(0, 10.0)
    with pytest.raises(ValueError):
        SlidingWindowLimiter(5, 0)


def test_backoff_doubles_with_jitter_up_to_the_max_and_resets() -> None:
    backoff = Backoff(1.0, 30.0, random.Random(1))
    delays = [backoff.failure() for _ in range(8)]
    ceilings = [1, 2, 4, 8, 16, 30, 30, 30]
    for delay, ceiling in zip(delays, ceilings, strict=True):
        assert ceiling * 0.5 <= delay <= ceiling
    assert backoff.failures == 8
    backoff.reset()
    assert backoff.failure() <= 1.0


def test_backoff_jitter_spreads_reconnects() -> None:
    delays = {round(Backoff(1.0, 60.0, random.Random(seed)).failure(), 6) for seed in range(20)}
    assert len(delays) == 20


def test_backoff_rejects_inverted_bounds() -> None:
    with pytest.raises(ValueError):
        Backoff(10.0, 1.0)
