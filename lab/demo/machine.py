"""The whole machine's CPU time during a run (every process: simulator, IRC server, ingesters, Kafka,
Spark, Cassandra), read from the kernel's counters (``/proc/stat`` through psutil)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence


def busy_s() -> float:
    """CPU seconds spent so far, all cores together, in anything but idle and waiting for I/O."""
    import psutil

    times = psutil.cpu_times()
    idle = times.idle + getattr(times, "iowait", 0.0)
    return sum(times) - idle - getattr(times, "guest", 0.0) - getattr(times, "guest_nice", 0.0)


def busy_at(samples: Sequence[tuple[float, float]], t: float) -> float | None:
    """The busy seconds at time ``t``, interpolated between the ``(time, busy seconds)`` samples around it
    (sorted by time); None outside the samples."""
    if not samples or t < samples[0][0] or t > samples[-1][0]:
        return None
    for (t0, b0), (t1, b1) in itertools.pairwise(samples):
        if t0 <= t <= t1:
            return b0 if t1 == t0 else b0 + (b1 - b0) * (t - t0) / (t1 - t0)
    return samples[-1][1]


def cpu_us_per_msg(
    samples: Sequence[tuple[float, float]], start: float, end: float, messages: int
) -> float | None:
    """CPU µs of the whole machine per message between ``start`` and ``end`` (epoch s); None when either
    falls outside the samples or nothing was stored."""
    first, last = busy_at(samples, start), busy_at(samples, end)
    if first is None or last is None or messages <= 0:
        return None
    return (last - first) * 1e6 / messages
