"""Spans and gaps of a channel's coverage, from the coverage events of the ledger (pure logic).

A span is one run of one worker covering the channel: from its ``joined`` to its ``left``; a span with
no ``left`` ends at the worker's last sign of life when the worker has gone quiet (a kill -9 says
nothing), and is still open otherwise. A gap is a time when no span of any replica group covered the
channel, from the channel's first known coverage on: before its first JOIN a channel is not in a gap.
A fill is a time of a gap whose lines were imported from a peer (``chatlog fill``): the gap stays a gap
(no logger of ours was there), and says which peers filled it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import pairwise

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
    filled_from: tuple[str, ...] = ()
    """The peers whose lines of this time were imported (``chatlog fill``), in name order; none: unfilled."""

    @property
    def seconds(self) -> float:
        return (self.end - self.start) / 1000


@dataclass(frozen=True)
class Fill:
    """Lines of ``[start, end)`` imported from ``peer`` at ``filled_at`` (``chatlog fill``)."""

    start: int
    end: int
    peer: str
    filled_at: int
    lines: int
    """The lines the peer gave for the time and the import took."""
    dropped: int
    """The lines of its answer that were left out: another channel, outside the time asked, not IRC."""


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


def with_fills(found: list[Gap], fills: Iterable[Fill]) -> list[Gap]:
    """``found`` with each gap cut where the fills begin and end, every piece naming the peers that
    filled it (none for a piece no fill covers); adjacent pieces filled by the same peers stay one."""
    ordered = sorted(fills, key=lambda f: (f.start, f.end))
    out: list[Gap] = []
    for gap in found:
        inside = [f for f in ordered if f.start < gap.end and f.end > gap.start]
        cuts = sorted(
            {gap.start, gap.end} | {t for f in inside for t in (f.start, f.end) if gap.start < t < gap.end}
        )
        pieces: list[Gap] = []
        for lo, hi in pairwise(cuts):
            peers = tuple(sorted({f.peer for f in inside if f.start < hi and f.end > lo}))
            if pieces and pieces[-1].filled_from == peers:
                pieces[-1] = Gap(pieces[-1].start, hi, gap.why, peers)
            else:
                pieces.append(Gap(lo, hi, gap.why, peers))
        out.extend(pieces)
    return out


def filled_note(gap: Gap) -> str:
    """What a gap's mark says of its fills: ``; filled from http://peer`` (nothing when unfilled)."""
    return f"; filled from {', '.join(gap.filled_from)}" if gap.filled_from else ""


def gap_line(gap: Gap) -> str:
    """The mark a text log shows where a gap falls: ``-- not logged 15:04:05-15:05:10: ... --``."""
    from datetime import UTC, datetime

    def hms(ms: int) -> str:
        return datetime.fromtimestamp(ms / 1000, UTC).strftime("%H:%M:%S")

    return (
        f"-- not logged {hms(gap.start)}-{hms(gap.end)} ({gap.seconds:.0f} s): no logger ({gap.why})"
        f"{filled_note(gap)} --"
    )


def interleave(lines: Iterable[tuple[int, str]], found: list[Gap]) -> Iterable[str]:
    """Text lines ``(time, line)`` in time order with each gap's mark where it falls."""
    pending = sorted(found, key=lambda g: g.start)
    for at, line in lines:
        while pending and pending[0].start <= at:
            yield gap_line(pending.pop(0))
        yield line
    for gap in pending:
        yield gap_line(gap)
