"""The fleet's coverage gaps in a window (``chatlog status``): per replica group, and for all groups at
once, the channels with a gap and the uncovered channel-seconds, from the ledger.

The ledger is partitioned by channel and day (``coverage_by_channel``), so the fleet is read one
partition per channel and day: the caller names the channels (the registry), and the reads run
``concurrency`` at a time. The window plus the look-back of :data:`serve.coverage.LOOKBACK_MS` spans one
day partition, two when it crosses midnight UTC: ~1.3 reads per channel. Measured on the 2-core dev
machine (shared): 1k channels 1.3-2.2 s, 10k channels 10-18 s (~0.7 ms of client CPU per channel), so
~2-3 min at 100k. A table of the events by hour (all channels, sharded) would make it a scan of the
window's partitions instead (not there yet).

A replica group's gaps count from the channel's first coverage by any group (a group that never joined
a channel that another group logs is uncovered throughout); ``all`` is what a reader sees: the times no
group covered the channel.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from core import times
from core.coverage_spans import Gap, SessionKey, Span, gaps, spans
from schemas.coverage import CoverageEvent
from serve.coverage import (
    EVENTS_CQL,
    LOOKBACK_MS,
    SILENT_AFTER_MS,
    days_to_read,
    event_from_row,
    read_last_seen,
)

ALL: Final = "all"
HOUR_MS: Final = 3_600_000


@dataclass(frozen=True)
class ChannelGaps:
    channel: str
    gaps: list[Gap]

    @property
    def seconds(self) -> float:
        return sum(g.seconds for g in self.gaps)


@dataclass
class GroupGaps:
    """One replica group's (or ``all`` groups') gaps in the window."""

    label: str
    channels: list[ChannelGaps] = field(default_factory=list)
    """The channels with a gap, the longest uncovered first."""

    @property
    def uncovered_s(self) -> float:
        return sum(c.seconds for c in self.channels)


@dataclass(frozen=True)
class FleetGaps:
    since_ms: int
    until_ms: int
    channels: int
    """Channels read."""
    groups: list[GroupGaps]
    """Replica groups in order, then ``all``."""
    read_s: float


def read_fleet_gaps(
    session: Any,
    keyspace: str,
    channels: Iterable[str],
    *,
    replicas: Iterable[int] = (),
    window_ms: int = HOUR_MS,
    now_ms: int | None = None,
    concurrency: int = 64,
) -> FleetGaps:
    """The gaps of ``channels`` in the last ``window_ms``, per replica group (``replicas`` and every
    group with a span in the window) and for all groups; raises the driver's errors (a keyspace
    without the ledger: ``InvalidRequest``)."""
    from cassandra.concurrent import execute_concurrent_with_args

    started = time.monotonic()
    now = now_ms if now_ms is not None else times.now_ms()
    since = now - window_ms
    names = sorted(set(channels))
    query = session.prepare(EVENTS_CQL.format(ks=keyspace))
    query.fetch_size = 1000
    args = [(ch, day, since - LOOKBACK_MS, now) for ch in names for day in days_to_read(since, now)]
    by_channel: dict[str, list[CoverageEvent]] = {ch: [] for ch in names}
    results = execute_concurrent_with_args(
        session, query, args, concurrency=concurrency, results_generator=True
    )
    for (ch, *_), (_ok, rows) in zip(args, results, strict=True):
        by_channel[ch].extend(event_from_row(ch, row) for row in rows)
    keys: set[SessionKey] = {(e.replica, e.worker, e.session) for evs in by_channel.values() for e in evs}
    last_seen = read_last_seen(session, keyspace, keys, concurrency=concurrency)
    known = {
        ch: spans(evs, last_seen, now_ms=now, silent_after_ms=SILENT_AFTER_MS)
        for ch, evs in by_channel.items()
        if evs
    }
    groups = fleet_gaps(known, since_ms=since, until_ms=now, replicas=replicas)
    return FleetGaps(since, now, len(names), groups, time.monotonic() - started)


def fleet_gaps(
    known: dict[str, list[Span]], *, since_ms: int, until_ms: int, replicas: Iterable[int] = ()
) -> list[GroupGaps]:
    """Per replica group, then ``all``: the channels of ``known`` (channel -> its spans, including
    spans that ended before the window) with a gap in ``[since_ms, until_ms)``."""
    labels = set(replicas) | {
        s.replica for found in known.values() for s in found if s.end > since_ms and s.start < until_ms
    }
    out = {r: GroupGaps(str(r)) for r in sorted(labels)}
    every = GroupGaps(ALL)
    for channel, found in known.items():
        if not found:
            continue
        first = min(s.start for s in found)
        for r, group in out.items():
            mine = [s for s in found if s.replica == r]
            _add(group, channel, gaps(mine, since_ms=since_ms, until_ms=until_ms, covered_from=first))
        _add(every, channel, gaps(found, since_ms=since_ms, until_ms=until_ms))
    result = [*out.values(), every]
    for group in result:
        group.channels.sort(key=lambda c: (-c.seconds, c.channel))
    return result


def _add(group: GroupGaps, channel: str, found: Sequence[Gap]) -> None:
    if found:
        group.channels.append(ChannelGaps(channel, list(found)))


def _group_name(label: str) -> str:
    return "all replicas" if label == ALL else f"replica {label}"


def report_text(fleet: FleetGaps, *, show: int = 5) -> str:
    """The gap section of ``chatlog status``: one line per replica group, then all groups."""
    minutes = (fleet.until_ms - fleet.since_ms) / 60_000
    window = "the last hour" if minutes == 60 else f"the last {minutes:g} min"
    lines = [f"gaps in {window} (coverage ledger, {fleet.channels} channel(s) read in {fleet.read_s:.2f} s):"]
    for group in fleet.groups:
        if not group.channels:
            lines.append(f"  {_group_name(group.label)}: no gap")
            continue
        worst = ", ".join(f"{c.channel} {c.seconds:.0f} s ({c.gaps[-1].why})" for c in group.channels[:show])
        more = f" ... and {len(group.channels) - show} more" if len(group.channels) > show else ""
        lines.append(
            f"  {_group_name(group.label)}: {len(group.channels)} channel(s) with a gap, "
            f"{group.uncovered_s:.0f} uncovered channel-seconds: {worst}{more}"
        )
    return "\n".join(lines)


def report_json(fleet: FleetGaps) -> dict[str, object]:
    """The gap section of ``chatlog status --json``."""
    return {
        "since": fleet.since_ms,
        "until": fleet.until_ms,
        "channels": fleet.channels,
        "read_s": round(fleet.read_s, 3),
        "groups": [
            {
                "replica": group.label,
                "channels_with_gap": len(group.channels),
                "uncovered_channel_seconds": round(group.uncovered_s, 1),
                "channels": [
                    {
                        "channel": c.channel,
                        "seconds": round(c.seconds, 1),
                        "gaps": [{"start": g.start, "end": g.end, "why": g.why} for g in c.gaps],
                    }
                    for c in group.channels
                ],
            }
            for group in fleet.groups
        ],
    }
