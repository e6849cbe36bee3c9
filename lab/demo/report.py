"""Pure computations of a demo or chaos run: coverage gaps, recovery time, lost messages, the arrival
skew between copies of a message, copies that reached Cassandra, latency, the summary line."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class CoverageSample:
    """At time ``t`` (epoch s): the channels confirmed by each replica group."""

    t: float
    confirmed: Mapping[int, frozenset[str]]

    def covered(self) -> frozenset[str]:
        out: frozenset[str] = frozenset()
        for chans in self.confirmed.values():
            out |= chans
        return out


def max_gap_s(
    samples: Sequence[CoverageSample], registered: Iterable[str], *, since: float | None = None
) -> float:
    """Longest time any registered channel went without a logger in every replica.

    A channel is uncovered from the first sample that misses it until the next sample that has it.
    Samples before ``since`` (e.g. the initial JOIN phase) are ignored; a channel never covered after
    ``since`` counts from ``since`` to the last sample.
    """
    regs = set(registered)
    relevant = [s for s in samples if since is None or s.t >= since]
    if not relevant:
        return 0.0
    gap_start: dict[str, float] = {}
    worst = 0.0
    for s in relevant:
        cov = s.covered()
        for ch in regs:
            if ch in cov:
                if ch in gap_start:
                    worst = max(worst, s.t - gap_start.pop(ch))
            else:
                gap_start.setdefault(ch, s.t)
    end = relevant[-1].t
    for start in gap_start.values():
        worst = max(worst, end - start)
    return worst


def recovery_s(
    samples: Sequence[CoverageSample], registered: Iterable[str], replica: int, after: float
) -> float | None:
    """Seconds from ``after`` (a kill) to the first sample where ``replica`` confirms every channel again."""
    regs = frozenset(registered)
    for s in samples:
        if s.t > after and regs <= s.confirmed.get(replica, frozenset()):
            return s.t - after
    return None


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q``-quantile (0 < q <= 1) of already sorted values: the smallest value with at
    least ``q`` of all values at or below it (p99.9 of 1,000 values is the largest)."""
    if not sorted_values:
        raise ValueError("no values")
    rank = max(1, math.ceil(q * len(sorted_values) - 1e-9))
    return float(sorted_values[min(rank, len(sorted_values)) - 1])


@dataclass(frozen=True)
class Spread:
    """p50, p99, p99.9 and max of ``n`` values (nearest rank)."""

    n: int
    p50: float
    p99: float
    p999: float
    max: float

    @classmethod
    def of(cls, values: Iterable[float]) -> Spread | None:
        ordered = sorted(values)
        if not ordered:
            return None
        return cls(
            len(ordered),
            quantile(ordered, 0.50),
            quantile(ordered, 0.99),
            quantile(ordered, 0.999),
            float(ordered[-1]),
        )


class CopyTimes:
    """Every copy of every message id seen in the messages topic: how many, and the spread of their times.

    Three clocks per copy, all epoch ms: the Kafka record timestamp, the event's ``received_at``, and an
    append floor: the latest record timestamp at or before the copy's offset in its partition (a record
    is appended after every record before it was created, so this catches a copy that sat in a
    producer's queue; copies of one message share a partition, as they share the channel key). Kept per
    id as [copies, then min and max of each clock], so a run's whole topic fits in memory.
    """

    def __init__(self) -> None:
        self._ids: dict[str, list[int]] = {}

    def add(self, message_id: str, kafka_ts_ms: int, received_at_ms: int, append_floor_ms: int) -> None:
        entry = self._ids.get(message_id)
        if entry is None:
            self._ids[message_id] = [
                1,
                kafka_ts_ms,
                kafka_ts_ms,
                received_at_ms,
                received_at_ms,
                append_floor_ms,
                append_floor_ms,
            ]
            return
        entry[0] += 1
        entry[1], entry[2] = min(entry[1], kafka_ts_ms), max(entry[2], kafka_ts_ms)
        entry[3], entry[4] = min(entry[3], received_at_ms), max(entry[4], received_at_ms)
        entry[5], entry[6] = min(entry[5], append_floor_ms), max(entry[6], append_floor_ms)

    @property
    def records(self) -> int:
        return sum(e[0] for e in self._ids.values())

    @property
    def distinct(self) -> int:
        return len(self._ids)

    def copies_histogram(self) -> dict[int, int]:
        """copies per id -> how many ids had that many."""
        out: dict[int, int] = {}
        for e in self._ids.values():
            out[e[0]] = out.get(e[0], 0) + 1
        return dict(sorted(out.items()))

    def kafka_skews_ms(self) -> list[int]:
        """For each id produced more than once: latest - earliest Kafka record timestamp of its copies."""
        return [e[2] - e[1] for e in self._ids.values() if e[0] > 1]

    def received_skews_ms(self) -> list[int]:
        """The same with the events' ``received_at`` (when each ingester read the line)."""
        return [e[4] - e[3] for e in self._ids.values() if e[0] > 1]

    def append_skews_ms(self) -> list[int]:
        """The same with each copy's append floor (see the class)."""
        return [e[6] - e[5] for e in self._ids.values() if e[0] > 1]


def late_copies(events_written: int, dead_letters: int, distinct_ids: int) -> int:
    """Copies that got past the sink's deduplication: every record the dedup let through went either to
    Cassandra (``events_written``) or to the dead-letter topic, and each distinct id needs exactly one.
    Negative when fewer records came through than there are ids (ids never written)."""
    return events_written + dead_letters - distinct_ids


_BATCH_LINE = re.compile(r"batch \d+: .*?, (\d+) events -> \d+ rows, (\d+) dead letters")


_BATCH_TIMES = re.compile(r"batch (\d+): (\d+) in .*?, (\d+(?:\.\d+)?)s, lag \S+, started (\S+)")


@dataclass(frozen=True)
class SinkBatch:
    """One micro-batch of the sink, from its log line (sink/job/progress.py)."""

    batch_id: int
    started: float
    """Epoch seconds."""
    records: int
    """Kafka records it read."""
    duration_s: float
    idle_before_s: float | None
    """From the end of the batch before it to its start (None for the first)."""


def sink_batches(text: str) -> list[SinkBatch]:
    """The sink log's micro-batches that read records, in order, each with the idle time before it (the
    batches that read nothing are not logged, so their time counts as idle)."""
    found: list[tuple[int, float, int, float]] = []
    for match in _BATCH_TIMES.finditer(text):
        try:
            started = datetime.fromisoformat(match.group(4)).timestamp()
        except ValueError:
            continue
        found.append((int(match.group(1)), started, int(match.group(2)), float(match.group(3))))
    found.sort(key=lambda b: b[1])
    out: list[SinkBatch] = []
    for i, (batch_id, started, records, duration) in enumerate(found):
        idle = None if i == 0 else max(0.0, started - (found[i - 1][1] + found[i - 1][3]))
        out.append(SinkBatch(batch_id, started, records, duration, idle))
    return out


def batch_summary(batches: Sequence[SinkBatch], t0: float) -> dict[str, Any]:
    """The report's view of the sink's micro-batches: each (start since ``t0``, records, duration, idle
    before) and their means."""
    n = len(batches)
    idles = [b.idle_before_s for b in batches if b.idle_before_s is not None]
    return {
        "batches": [
            {
                "start_s": round(b.started - t0, 3),
                "records": b.records,
                "duration_s": b.duration_s,
                "idle_before_s": None if b.idle_before_s is None else round(b.idle_before_s, 3),
            }
            for b in batches
        ],
        "count": n,
        "records_mean": round(sum(b.records for b in batches) / n, 1) if n else None,
        "duration_mean_s": round(sum(b.duration_s for b in batches) / n, 3) if n else None,
        "idle_mean_s": round(sum(idles) / len(idles), 3) if idles else None,
        "idle_total_s": round(sum(idles), 3),
        "note": "the sink's micro-batches that read records (its log's batch lines): Spark's start time, "
        "Kafka records read, duration, and the time from the end of the batch before to its start",
    }


def sink_log_totals(text: str) -> tuple[int, int]:
    """(events written, dead letters) summed over the sink log's per-batch lines (sink/job/progress.py)."""
    events = dead = 0
    for match in _BATCH_LINE.finditer(text):
        events += int(match.group(1))
        dead += int(match.group(2))
    return events, dead


def binned_quantiles(
    points: Iterable[tuple[float, float]], width: float, qs: Sequence[float]
) -> tuple[list[float], dict[float, list[float]]]:
    """``(t, value)`` points grouped into bins of ``width`` by ``t``: each non-empty bin's middle, and per
    ``q`` its ``q``-quantile."""
    bins: dict[int, list[float]] = {}
    for t, v in points:
        bins.setdefault(math.floor(t / width), []).append(v)
    mids: list[float] = []
    out: dict[float, list[float]] = {q: [] for q in qs}
    for k in sorted(bins):
        ordered = sorted(bins[k])
        mids.append((k + 0.5) * width)
        for q in qs:
            out[q].append(quantile(ordered, q))
    return mids, out


@dataclass
class RunReport:
    sent: int
    stored: int
    lost: int
    duplicates_removed: int
    max_gap_s: float
    recovery_s: float | None
    details: dict[str, Any] = field(default_factory=dict)
    late_copies: int | None = None
    e2e: Spread | None = None  # seconds, IRC send -> visible over the HTTP API, sampled
    skew: Spread | None = None  # ms, latest - earliest Kafka timestamp of the copies of one message id
    cpu_us_per_msg: float | None = None  # the whole machine's CPU, traffic start -> last row, per row
    write_lag_p99_s: float | None = None  # IRC send -> the sink's write of its block, every message
    pipeline_us_per_msg: float | None = None  # ingesters + Kafka + sink + Cassandra + serve, per message

    def line(self) -> str:
        rec = f"{self.recovery_s:.1f}" if self.recovery_s is not None else "n/a"
        late = "n/a" if self.late_copies is None else str(self.late_copies)
        e2e, skew = self.e2e, self.skew
        cpu = "n/a" if self.cpu_us_per_msg is None else f"{self.cpu_us_per_msg:.0f}"
        e2e_part = " ".join(
            f"api_e2e_{name}_s={'n/a' if e2e is None else f'{getattr(e2e, name):.2f}'}"
            for name in ("p50", "p99")
        )
        lag = "n/a" if self.write_lag_p99_s is None else f"{self.write_lag_p99_s:.2f}"
        pipeline = "n/a" if self.pipeline_us_per_msg is None else f"{self.pipeline_us_per_msg:.0f}"
        skew_part = " ".join(
            f"skew_{name}_s={'n/a' if skew is None else f'{getattr(skew, name) / 1000:.3f}'}"
            for name in ("p50", "p99", "p999", "max")
        )
        return (
            f"sent={self.sent} stored={self.stored} lost={self.lost} "
            f"duplicates_removed={self.duplicates_removed} max_gap_s={self.max_gap_s:.1f} recovery_s={rec} "
            f"late_copies={late} {e2e_part} write_lag_p99_s={lag} {skew_part} "
            f"pipeline_us_per_msg={pipeline} cpu_us_per_msg={cpu}"
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def lost_tokens(sent: Iterable[str], stored: Iterable[str]) -> set[str]:
    """Tokens that were sent and never stored."""
    return set(sent) - set(stored)


def covered_at(samples: Sequence[CoverageSample], channel: str, t: float, *, grace: float = 2.0) -> bool:
    """Whether ``channel`` had a logger (in some replica) from ``t`` until ``t + grace``.

    A logger must live a moment after a message arrives to read it, produce it and have Kafka
    acknowledge it: what a process holds when it is killed dies with it. So a message counts as
    covered only if the samples just before ``t``, every sample up to ``t + grace``, and the first one
    after it all show the channel covered.
    """
    before = next((s for s in reversed(samples) if s.t <= t), None)
    after = next((s for s in samples if s.t >= t + grace), None)
    if before is None or after is None:
        return False
    window = [s for s in samples if before.t <= s.t <= after.t]
    return all(channel in s.covered() for s in window)
