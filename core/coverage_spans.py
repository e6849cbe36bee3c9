"""Spans and gaps of a channel's coverage, from the coverage events of the ledger (pure logic).

A span is one run of one worker covering the channel: from its ``joined`` to its ``left``; a span with
no ``left`` ends at the worker's last sign of life when the worker has gone quiet (a kill -9 says
nothing), and is still open otherwise. A gap is a time when no span of any replica group covered the
channel, from the channel's first known coverage on: before its first JOIN a channel is not in a gap.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from schemas.coverage import ALIVE, JOINED, CoverageEvent

SessionKey = tuple[int, str, int]
"""(replica, worker, session)."""


@dataclass(frozen=True)
class Span:
    replica: int
    worker: str
    start: int
    end: int
    end_reason: str
    """left's reason; ``silent`` when the worker stopped sending signs of life; ``open`` when ongoing."""


@dataclass(frozen=True)
class Gap:
    start: int
    end: int
    why: str
    """What ended the coverage just before the gap, e.g. ``r0 worker-a: silent``."""

    @property
    def seconds(self) -> float:
        return (self.end - self.start) / 1000


def spans(
    events: Iterable[CoverageEvent],
    last_seen: Mapping[SessionKey, int],
    *,
    now_ms: int,
    silent_after_ms: int,
) -> list[Span]:
    """The spans of the events (any order), open spans closed at the worker's last sign of life."""
    opened: dict[SessionKey, int] = {}
    out: list[Span] = []
    for ev in sorted(events, key=lambda e: (e.at, e.state != JOINED)):
        if ev.state == ALIVE:
            continue
        key = (ev.replica, ev.worker, ev.session)
        if ev.state == JOINED:
            opened.setdefault(key, ev.at)
        elif key in opened:
            out.append(Span(ev.replica, ev.worker, opened.pop(key), ev.at, ev.reason or "left"))
    for (replica, worker, session), start in opened.items():
        seen = max(last_seen.get((replica, worker, session), start), start)
        if now_ms - seen > silent_after_ms:
            out.append(Span(replica, worker, start, seen, "silent"))
        else:
            out.append(Span(replica, worker, start, now_ms, "open"))
    return sorted(out, key=lambda s: (s.start, s.end))


def gaps(found: list[Span], *, since_ms: int, until_ms: int, covered_from: int | None = None) -> list[Gap]:
    """Times in ``[since_ms, until_ms)`` covered by no span, from the first span's start on (from
    ``covered_from`` when given: a replica group's gaps count from the channel's first coverage by any
    group, and a group with no span at all is then uncovered throughout). Spans that ended before
    ``since_ms`` count: a channel whose last span ended before the range is uncovered all through it."""
    if not found and covered_from is None:
        return []
    first = covered_from if covered_from is not None else min(s.start for s in found)
    cursor = max(since_ms, first)
    out: list[Gap] = []
    ordered = sorted(found, key=lambda s: s.start)
    before = [s for s in ordered if s.end <= cursor]
    last_end: Span | None = max(before, key=lambda s: s.end) if before else None
    for span in ordered:
        if span.start > cursor and cursor < until_ms:
            why = f"r{last_end.replica} {last_end.worker}: {last_end.end_reason}" if last_end else "no logger"
            out.append(Gap(cursor, min(span.start, until_ms), why))
        if span.end > cursor:
            cursor = span.end
            last_end = span
    if cursor < until_ms and (last_end is None or last_end.end_reason != "open"):
        why = f"r{last_end.replica} {last_end.worker}: {last_end.end_reason}" if last_end else "no logger"
        out.append(Gap(cursor, until_ms, why))
    return out


def gap_line(gap: Gap) -> str:
    """The mark a text log shows where a gap falls: ``-- not logged 15:04:05-15:05:10: ... --``."""
    from datetime import UTC, datetime

    def hms(ms: int) -> str:
        return datetime.fromtimestamp(ms / 1000, UTC).strftime("%H:%M:%S")

    return f"-- not logged {hms(gap.start)}-{hms(gap.end)} ({gap.seconds:.0f} s): no logger ({gap.why}) --"


def interleave(lines: Iterable[tuple[int, str]], found: list[Gap]) -> Iterable[str]:
    """Text lines ``(time, line)`` in time order with each gap's mark where it falls."""
    pending = sorted(found, key=lambda g: g.start)
    for at, line in lines:
        while pending and pending[0].start <= at:
            yield gap_line(pending.pop(0))
        yield line
    for gap in pending:
        yield gap_line(gap)
