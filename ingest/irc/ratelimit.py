"""JOIN rate limiting and reconnect backoff, both clock-injectable so tests need no network or sleep."""

from __future__ import annotations

import random
import time
from collections import deque
from collections.abc import Callable

Clock = Callable[[], float]


class SlidingWindowLimiter:
    """At most ``limit`` events in any ``window_s`` seconds (Twitch: 20 JOINs per 10 s per account).

    A sliding window, not a token bucket: a bucket of 20 refilled at 2/s lets ~40 JOINs through
    within one 10 s window, which Twitch would punish. The log keeps at most ``limit`` timestamps.
    """

    def __init__(self, limit: int, window_s: float, clock: Clock = time.monotonic) -> None:
        if limit < 1 or window_s <= 0:
            raise ValueError("the limit needs limit >= 1 and window_s > 0")
        self.limit = limit
        self.window_s = window_s
        self._clock = clock
        self._stamps: deque[float] = deque()

    def _expire(self, now: float) -> None:
        horizon = now - self.window_s
        stamps = self._stamps
        while stamps and stamps[0] <= horizon:
            stamps.popleft()

    def available(self) -> int:
        """How many events may happen right now."""
        self._expire(self._clock())
        return self.limit - len(self._stamps)

    def try_acquire(self, n: int = 1) -> int:
        """Take up to ``n`` slots; returns how many were granted (0..n)."""
        now = self._clock()
        self._expire(now)
        granted = max(0, min(n, self.limit - len(self._stamps)))
        self._stamps.extend([now] * granted)
        return granted

    def wait_time(self) -> float:
        """Seconds until at least one slot is free (0 when one is free now)."""
        now = self._clock()
        self._expire(now)
        if len(self._stamps) < self.limit:
            return 0.0
        return max(0.0, self._stamps[0] + self.window_s - now)


class Backoff:
    """Exponential backoff with jitter: the n-th failure in a row waits
    ``uniform(0.5, 1) * min(max_s, min_s * 2**(n-1))`` seconds."""

    def __init__(self, min_s: float, max_s: float, rng: random.Random | None = None) -> None:
        if min_s <= 0 or max_s < min_s:
            raise ValueError("backoff needs 0 < min_s <= max_s")
        self.min_s = min_s
        self.max_s = max_s
        self.failures = 0
        self._rng = rng or random.Random()

    def failure(self) -> float:
        """Record one more failure; returns the delay before the next attempt."""
        self.failures += 1
        ceiling = min(self.max_s, self.min_s * 2.0 ** min(self.failures - 1, 62))
        jitter: float = self._rng.uniform(0.5, 1.0)
        return ceiling * jitter

    def reset(self) -> None:
        self.failures = 0
