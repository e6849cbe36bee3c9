"""What one fault did to a run: how long the stored rate took to come back, and the latency p99 of the
messages sent just before it and just after it. Pure: times are seconds since the run's start."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

BASELINE_S = 10.0
"""The send rate the stored rate is held to: the mean over this many seconds before the fault."""
WINDOW_S = 5
"""The stored rate at a second is the mean over at least this many seconds ending with it (micro-batches are
spiky), and over 2.5 of the sink's batch intervals where they are longer (:func:`rate_window_s`)."""
SHARE = 0.5
"""The stored rate is down while it is below this share of the send rate before the fault."""
AROUND_S = 30.0
"""The p99 after a fault is over the messages sent in this many seconds from it."""
SETTLE_S = 3.0
"""The p99 before a fault leaves out the messages sent in this many seconds before it: a healthy sink has
not stored them yet when it strikes, so the fault delays them too."""


@dataclass(frozen=True)
class FaultImpact:
    label: str
    at_s: float
    stored_recovery_s: float | None
    """Seconds from the fault to the end of the last second whose stored rate was down (0.0: it never was);
    None: not back by the last row written."""
    e2e_p99_before_s: float | None
    e2e_p99_after_s: float | None
    write_p99_before_s: float | None
    write_p99_after_s: float | None


def per_second(times: Iterable[float], start: float, seconds: int) -> list[int]:
    """How many of ``times`` fall in each second [start + i, start + i + 1), for i < ``seconds``."""
    counts = [0] * max(0, seconds)
    for t in times:
        i = math.floor(t - start)
        if 0 <= i < len(counts):
            counts[i] += 1
    return counts


def rate_window_s(batch_starts: Sequence[float]) -> int:
    """The window of the stored rate: :data:`WINDOW_S`, or 2.5 median intervals between the sink's batch
    starts where that is longer. A sink that writes once every 10 s stores nothing in most 5 s windows of a
    healthy run; 2.5 intervals hold at least two batches, 0.8 of the send rate."""
    starts = sorted(batch_starts)
    gaps = sorted(b - a for a, b in itertools.pairwise(starts))
    if not gaps:
        return WINDOW_S
    return max(WINDOW_S, math.ceil(2.5 * gaps[len(gaps) // 2]))


def stored_recovery_s(
    sent: Sequence[float],
    stored: Sequence[float],
    fault: float,
    *,
    traffic_end: float | None = None,
    window_s: int = WINDOW_S,
) -> float | None:
    """See :attr:`FaultImpact.stored_recovery_s`: ``sent`` are the send times of the run's messages,
    ``stored`` the write times of their rows. The last second that was down counts up to the last send (or
    ``traffic_end``): after it the rate falls as the traffic stops. A rate still down then is back at the
    first second after it whose mean is up again (the backlog written once the fault is over); None when
    there is none."""
    if not sent:
        return None
    end = traffic_end if traffic_end is not None else max(sent)
    baseline = sum(1 for t in sent if fault - BASELINE_S <= t < fault) / BASELINE_S
    if baseline <= 0 or end <= fault:
        return None
    start = fault - window_s
    seconds = math.floor(end - start)
    counts = per_second(stored, start, math.floor(max(end, *stored) - start) + 1 if stored else seconds)

    def down(i: int) -> bool:  # second i is [start + i, start + i + 1)
        return sum(counts[i - window_s + 1 : i + 1]) / window_s < SHARE * baseline

    last_down = max((i for i in range(window_s, seconds) if down(i)), default=None)
    if last_down is None:
        return 0.0
    if last_down == seconds - 1:
        back = next((i for i in range(seconds, len(counts)) if not down(i)), None)
        return None if back is None else float(back - window_s)
    return float(last_down + 1 - window_s)


def p99(values: Iterable[float]) -> float | None:
    """The nearest-rank 99th percentile, None without values."""
    ordered = sorted(values)
    if not ordered:
        return None
    return ordered[min(len(ordered) - 1, math.ceil(0.99 * len(ordered)) - 1)]


def p99_around(
    points: Iterable[tuple[float, float]], fault: float, *, before_s: float = BASELINE_S
) -> tuple[float | None, float | None]:
    """p99 of the latencies of ``points`` (send time, latency) sent in the ``before_s`` that end
    :data:`SETTLE_S` before ``fault``, and of those sent in the :data:`AROUND_S` from it."""
    pts = list(points)
    before = p99(v for t, v in pts if fault - SETTLE_S - before_s <= t < fault - SETTLE_S)
    after = p99(v for t, v in pts if fault <= t < fault + AROUND_S)
    return before, after


def fault_impact(
    label: str,
    fault: float,
    *,
    sent: Sequence[float],
    stored: Sequence[float],
    e2e: Sequence[tuple[float, float]],
    writes: Sequence[tuple[float, float]],
    window_s: int = WINDOW_S,
) -> FaultImpact:
    """A fault's :class:`FaultImpact` from the run's send and row-write times (``stored``), its e2e probe
    points and its write latencies (send time, row write - send); ``window_s``: of the stored rate."""
    e2e_before, e2e_after = p99_around(e2e, fault)
    write_before, write_after = p99_around(writes, fault)
    return FaultImpact(
        label=label,
        at_s=fault,
        stored_recovery_s=stored_recovery_s(sent, stored, fault, window_s=window_s),
        e2e_p99_before_s=e2e_before,
        e2e_p99_after_s=e2e_after,
        write_p99_before_s=write_before,
        write_p99_after_s=write_after,
    )
