"""One fill: the ledger's gaps of a channel (not yet filled from the peer), the peer's lines of those
times through ``chatlog import``'s parser into the messages topic, and the times filled into the ledger.

The order makes a failure harmless: the ledger is read first (no gaps: nothing to do), Kafka is checked
before the peer is asked, and a time is recorded as filled only after its lines were delivered. Lines
are imported by their ids (Twitch's ``id`` tag), so a fill asked again stores nothing twice. A peer that
cannot be reached or is too slow ends the fill at the first request (one line); an HTTP error or an
answer holding nothing that belongs fails that request only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from chatlog.fill.accept import Accepting, Taken
from chatlog.fill.asks import Ask, asks, peer_name
from chatlog.fill.peer import PeerFailed, client, raw_lines
from core.coverage_spans import Fill
from core.errors import ChatlogError, one_line
from core.times import format_time, now_ms

if TYPE_CHECKING:
    from core.settings import CassandraSettings, KafkaSettings


@dataclass
class Answer:
    """One request and what came of it: the lines taken, or why none."""

    ask: Ask
    taken: Taken = field(default_factory=Taken)
    failure: str = ""


@dataclass
class FillResult:
    channel: str
    peer: str
    gaps: int = 0
    answers: list[Answer] = field(default_factory=list)
    produced: int = 0
    undelivered: int = 0
    recorded: int = 0
    stopped: str = ""
    """Why the fill stopped before asking everything (the peer is down or too slow), or ``""``."""

    @property
    def filled(self) -> list[Answer]:
        return [a for a in self.answers if not a.failure]

    @property
    def failed(self) -> list[Answer]:
        return [a for a in self.answers if a.failure]

    def summary(self) -> str:
        """One line: what was asked, filled, imported and left out."""
        if not self.gaps:
            return f"fill #{self.channel} from {self.peer}: no gaps left to fill in this range"
        lines = sum(a.taken.lines for a in self.filled)
        dropped = Taken(
            other_channel=sum(a.taken.other_channel for a in self.answers),
            outside=sum(a.taken.outside for a in self.answers),
            not_irc=sum(a.taken.not_irc for a in self.answers),
        )
        seconds = sum(a.ask.end - a.ask.start for a in self.filled) / 1000
        text = (
            f"fill #{self.channel} from {self.peer}: {self.gaps} gap{'s' * (self.gaps != 1)}, "
            f"asked {len(self.answers)}, filled {len(self.filled)} ({seconds:.0f} s), "
            f"failed {len(self.failed)}; lines imported {lines}, produced {self.produced}"
        )
        if dropped.dropped:
            text += f", left out {dropped.dropped} ({dropped.dropped_text()})"
        if self.undelivered:
            text += f"; {self.undelivered} not delivered: nothing recorded as filled"
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
    if not result.failed:
        return []
    head = f"fill #{result.channel} from {result.peer}"
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


def fill(
    channel: str,
    url: str,
    since_ms: int,
    until_ms: int,
    *,
    kafka: KafkaSettings,
    cassandra: CassandraSettings,
    report: Callable[[str], None],
    channel_id: str | None = None,
    timeout_s: float = 30.0,
) -> FillResult:
    """Fill the gaps of ``channel`` in ``[since_ms, until_ms)`` from the peer at ``url``. Raises
    :class:`ChatlogError` (one line) when the ledger or Kafka cannot be used; a peer's failures are in
    the result, for the caller to report (:func:`failure_lines`)."""
    from core.cql import open_session, quiet_driver_logs
    from ingest.importer import ImportStats, KafkaImportSink, import_lines

    peer = peer_name(url)
    result = FillResult(channel, peer)
    quiet_driver_logs()
    cluster, session = open_session(cassandra)
    try:
        found = _read_gaps(session, cassandra.cassandra_keyspace, channel, since_ms, until_ms)
        todo = asks(found, peer)
        result.gaps = len([g for g in found if peer not in g.filled_from])
        if not todo:
            return result
        sink = KafkaImportSink(kafka, report=report)  # Kafka down or no topic: one line, before the peer
        with client(timeout_s) as http:
            for ask in todo:
                answer = Answer(ask)
                result.answers.append(answer)
                accepting = Accepting(sink, channel, ask.window, channel_id)
                problems: list[str] = []
                try:
                    import_lines(
                        raw_lines(http, peer + ask.path(channel, channel_id)),
                        source=peer + ask.path(channel, channel_id),
                        sink=accepting,
                        report=problems.append,
                    )
                    answer.failure = failure_of(accepting.taken, problems)
                except PeerFailed as exc:
                    answer.failure = str(exc)
                    if exc.gone:
                        result.stopped = answer.failure
                answer.taken = accepting.taken
                if result.stopped:
                    break
        stats = ImportStats()
        sink.finish(stats)
        result.produced, result.undelivered = stats.produced, stats.failed
        if not result.undelivered:
            now = now_ms()
            fills = [
                Fill(a.ask.start, a.ask.end, peer, now, a.taken.lines, a.taken.dropped) for a in result.filled
            ]
            result.recorded = _record(session, cassandra.cassandra_keyspace, channel, fills)
    finally:
        cluster.shutdown()
    return result


def _read_gaps(session: Any, keyspace: str, channel: str, since_ms: int, until_ms: int) -> list[Any]:
    from serve.coverage import read_ledger

    return read_ledger(session, keyspace, channel, since_ms, until_ms).gaps


def _record(session: Any, keyspace: str, channel: str, fills: list[Fill]) -> int:
    from cassandra import DriverException, InvalidRequest

    from chatlog.fill.record import record_fills
    from core.cql import refusal_reason

    try:
        return record_fills(session, keyspace, channel, fills)
    except InvalidRequest as exc:
        reason = refusal_reason(exc)
        raise ChatlogError(
            f"the lines were imported, but recording the fill in keyspace {keyspace} failed: {reason} "
            "(`chatlog init` adds the coverage_fills table; fill again to record it)"
        ) from None
    except DriverException as exc:
        raise ChatlogError(
            f"the lines were imported, but recording the fill failed: {one_line(exc)} "
            "(fill again to record it)"
        ) from None
