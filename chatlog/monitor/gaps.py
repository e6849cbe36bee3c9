"""Gaps over time in the view from heartbeats: per replica group, and for all groups at once.

Fed one :class:`~chatlog.monitor.heartbeats.HeartbeatReport` per evaluation, it accumulates the
uncovered channel-seconds (each uncovered channel counts the time since the previous evaluation) and
remembers when each channel was last uncovered, to count the channels with a gap in the last hour.
``all`` is the view that matters to a reader: a channel uncovered by every replica group at once.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Final

from chatlog.monitor.heartbeats import HeartbeatReport

ALL: Final = "all"
HOUR_MS: Final = 3_600_000


@dataclass
class GapTally:
    """Uncovered channel-seconds and recent gaps, per replica label (``"0"``, ``"1"``, ``"all"``)."""

    window_ms: int = HOUR_MS
    channel_seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    last_uncovered: dict[str, dict[str, int]] = field(default_factory=lambda: defaultdict(dict))
    _previous_ms: int | None = None

    def add(self, report: HeartbeatReport) -> None:
        now = report.now_ms
        elapsed_s = 0.0 if self._previous_ms is None else max(0.0, (now - self._previous_ms) / 1000)
        self._previous_ms = now
        uncovered_by: dict[str, set[str]] = {}
        for rep in report.replicas:
            uncovered_by[str(rep.replica)] = {u.channel for u in rep.uncovered}
        groups = list(uncovered_by.values())
        uncovered_by[ALL] = set.intersection(*groups) if groups else set()
        for label, channels in uncovered_by.items():
            self.channel_seconds[label] += len(channels) * elapsed_s
            last = self.last_uncovered[label]
            for ch in channels:
                last[ch] = now
            for ch in [ch for ch, at in last.items() if at < now - self.window_ms]:
                del last[ch]

    def recent(self, label: str) -> int:
        """Channels of ``label`` uncovered at some evaluation of the last window (an hour)."""
        return len(self.last_uncovered.get(label, {}))

    def labels(self) -> list[str]:
        return sorted(set(self.channel_seconds) | set(self.last_uncovered))
