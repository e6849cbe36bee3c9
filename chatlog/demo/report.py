"""Pure computations of a demo or chaos run: coverage gaps, recovery time, lost messages, the summary line."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
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


@dataclass
class RunReport:
    sent: int
    stored: int
    lost: int
    duplicates_removed: int
    max_gap_s: float
    recovery_s: float | None
    details: dict[str, Any] = field(default_factory=dict)

    def line(self) -> str:
        rec = f"{self.recovery_s:.1f}" if self.recovery_s is not None else "n/a"
        return (
            f"sent={self.sent} stored={self.stored} lost={self.lost} "
            f"duplicates_removed={self.duplicates_removed} max_gap_s={self.max_gap_s:.1f} recovery_s={rec}"
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
