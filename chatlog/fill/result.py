"""What a fill did: each day asked and what came of it, the fill's one-line summary and its failures."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from chatlog.fill.accept import Taken
from chatlog.fill.asks import Ask
from core.coverage_spans import Gap
from core.times import format_time
from schemas.coverage import DAY_MS


def days_of(times: list[Gap]) -> set[int]:
    """The UTC days (days since the epoch) that ``times`` touch."""
    return {d for g in times for d in range(g.start // DAY_MS, (g.end - 1) // DAY_MS + 1)}


@dataclass
class Answer:
    """One day asked and what came of it: the lines taken, or why none."""

    ask: Ask
    taken: Taken = field(default_factory=Taken)
    per_window: list[int] = field(default_factory=list)
    failure: str = ""
    resent: int = 0
    """Lines produced by attempts cut midway and asked again (the same ids: stored once)."""


@dataclass
class FillResult:
    channel: str
    peer: str
    times: list[Gap] = field(default_factory=list)
    """The times not logged here and not filled from this peer, in the range."""
    listed: int = 0
    """How many of their days the peer lists."""
    answers: list[Answer] = field(default_factory=list)
    produced: int = 0
    undelivered: int = 0
    recorded: int = 0
    waits: int = 0
    stopped: str = ""
    """Why the fill stopped before asking everything (the peer is down, gone too long), or ``""``."""
    first_request: bool = True
    """The fill stopped at its first request to the peer (it never answered)."""
    started: float = field(default_factory=time.monotonic)

    @property
    def filled(self) -> list[Answer]:
        return [a for a in self.answers if not a.failure]

    @property
    def failed(self) -> list[Answer]:
        return [a for a in self.answers if a.failure]

    @property
    def lines(self) -> int:
        return sum(a.taken.lines for a in self.filled)

    def summary(self) -> str:
        """One line: what was not logged here, listed, asked, filled, imported and left out."""
        head = f"fill #{self.channel} from {self.peer}"
        if not self.times:
            return f"{head}: nothing left to fill in this range"
        seconds = sum(g.seconds for g in self.times)
        days = len(days_of(self.times))
        text = (
            f"{head}: {len(self.times)} time{'s' * (len(self.times) != 1)} not logged here ({seconds:.0f} s) "
            f"on {days} day{'s' * (days != 1)}, {self.listed} listed by the peer"
        )
        if not self.listed:
            return text + ": nothing to ask"
        filled_s = sum(a.ask.seconds for a in self.filled)
        text += (
            f"; asked {len(self.answers)}, filled {len(self.filled)} ({filled_s:.0f} s), "
            f"failed {len(self.failed)}; lines imported {self.lines}, produced {self.produced}"
        )
        resent = sum(a.resent for a in self.answers)
        if resent:
            text += f" ({resent} again after cut answers)"
        dropped = Taken(
            other_channel=sum(a.taken.other_channel for a in self.answers),
            outside=sum(a.taken.outside for a in self.answers),
            not_irc=sum(a.taken.not_irc for a in self.answers),
        )
        if dropped.dropped:
            text += f", left out {dropped.dropped} ({dropped.dropped_text()})"
        elapsed = max(time.monotonic() - self.started, 1e-3)
        text += f"; {self.lines / elapsed:.0f} lines/s"
        if self.waits:
            text += f"; waited for the peer {self.waits} time{'s' * (self.waits != 1)}"
        if self.undelivered:
            text += f"; {self.undelivered} not delivered: the rest is not recorded as filled"
        return text


def failure_of(taken: Taken, problems: list[str]) -> str:
    """Why an answer counts as no answer: it held lines, and none belonged; ``""`` when it is fine."""
    if taken.lines or not taken.dropped:
        return ""
    first = f" (first: {problems[0].split(': ', 1)[-1]})" if problems and taken.not_irc else ""
    return f"answered {taken.dropped} lines and none of them fits: {taken.dropped_text()}{first}"


def describe(ask: Ask) -> str:
    return f"{format_time(ask.start)} .. {format_time(ask.end)}"


def failure_lines(result: FillResult) -> list[str]:
    """What to say of the peer's failures: one line when nothing was filled (the first failure, and how
    many more requests failed or were not made), else one line per failed request."""
    head = f"fill #{result.channel} from {result.peer}"
    if result.first_request and result.stopped:
        return [f"{head}: {result.stopped} (asked for the days it lists); nothing filled"]
    if not result.failed:
        return [f"{head}: stopped asking: the peer {result.stopped}"] if result.stopped else []
    if not result.filled:
        first = result.failed[0]
        more = len(result.failed) - 1
        rest = f"; {more} more request{'s' * (more != 1)} failed too" if more else ""
        if result.stopped:
            rest += "; stopped asking"
        return [f"{head}: {first.failure} (asked for {describe(first.ask)}); nothing filled{rest}"]
    lines = [f"{head}: {describe(a.ask)}: {a.failure}" for a in result.failed]
    if result.stopped:
        lines.append(f"{head}: stopped asking: the peer {result.stopped}")
    return lines
