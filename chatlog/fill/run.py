"""One fill: the times of a channel no logger of ours covered (the ledger's gaps, and the time before the
channel was first logged here or a channel never logged here) and not yet filled from the peer; of those,
the days the peer lists (``/list``); the peer's lines of each day through ``chatlog import``'s parser into
the messages topic; each day recorded as filled in the ledger as soon as its lines are delivered.

The order makes a failure harmless: the ledger is read first (nothing to fill: nothing to do), Kafka is
checked before the peer is asked, and a time is recorded as filled only after its lines were delivered, so
a fill stopped anywhere and started again asks only what is not filled yet. Lines are imported by their
ids (Twitch's ``id`` tag), so a day asked again stores nothing twice. A peer that asks to wait (HTTP 429
or 503, ``Retry-After``) is waited for; one that goes away midway (down, too slow, the connection cut) is
asked again, with growing pauses, until ``patience_s`` has passed, then the fill stops (one line); one that
cannot be reached at the first request ends the fill there. An HTTP error or an answer holding nothing that
belongs fails that day only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from chatlog.fill.accept import Accepting
from chatlog.fill.ahead import ReadAhead
from chatlog.fill.asks import Ask, asks, peer_name
from chatlog.fill.listing import peer_days
from chatlog.fill.peer import PeerFailed, client
from chatlog.fill.result import Answer, FillResult, days_of, failure_of
from core.coverage_spans import Fill, Gap
from core.errors import ChatlogError, one_line
from core.times import now_ms
from schemas.coverage import DAY_MS

if TYPE_CHECKING:
    import httpx

    from core.settings import CassandraSettings, KafkaSettings
    from ingest.importer import KafkaImportSink

AWAY_PAUSES_S = (1.0, 2.0, 4.0, 8.0, 15.0)
"""Pauses before asking a peer that went away again (the last one repeats)."""
LONGEST_WAIT_S = 900.0
"""A peer that asks to wait longer than this (``Retry-After``) stops the fill: fill again later."""
WAIT_WITHOUT_RETRY_AFTER_S = 5.0


class Watcher(Protocol):
    """What a fill tells as it goes (the command's progress bar)."""

    def planned(self, days: int) -> None: ...

    def answered(self, answer: Answer) -> None: ...

    def waiting(self, seconds: float, why: str) -> None: ...


@dataclass
class _Fill:
    """The parts of one fill: the peer's client, the Kafka sink, the ledger's session."""

    channel: str
    channel_id: str | None
    peer: str
    http: httpx.Client
    sink: KafkaImportSink
    session: Any
    keyspace: str
    watcher: Watcher | None
    patience_s: float
    sleep: Callable[[float], None]

    def ask(self, ask: Ask, result: FillResult, ahead: ReadAhead | None = None) -> Answer:
        """One day from the peer (its answer read ahead already, when ``ahead`` is given): waited for when it
        asks to wait, asked again while it is away (until :attr:`patience_s`)."""
        from ingest.importer import import_lines

        answer = Answer(ask)
        away_since: float | None = None
        pauses = 0
        url = self.peer + ask.path(self.channel, self.channel_id)
        while True:
            accepting = Accepting(self.sink, self.channel, ask.accepted, self.channel_id)
            problems: list[str] = []
            reading, ahead = (ahead or ReadAhead(self.http, url)), None
            try:
                import_lines(reading.lines(), source=url, sink=accepting, report=problems.append)
            except PeerFailed as exc:
                answer.resent += accepting.taken.lines
                if exc.wait:
                    self.wait(exc, result)
                    continue
                if not exc.away:
                    answer.failure = str(exc)
                    return answer
                away_since = away_since if away_since is not None else time.monotonic()
                if time.monotonic() - away_since >= self.patience_s:
                    result.stopped = f"{exc} (away for {self.patience_s:.0f} s)"
                    return answer
                pause = AWAY_PAUSES_S[min(pauses, len(AWAY_PAUSES_S) - 1)]
                pauses += 1
                if self.watcher is not None:
                    self.watcher.waiting(pause, str(exc))
                self.sleep(pause)
                continue
            finally:
                reading.close()
            answer.taken, answer.per_window = accepting.taken, accepting.per_window
            answer.failure = failure_of(accepting.taken, problems)
            return answer

    def wait(self, exc: PeerFailed, result: FillResult) -> None:
        """Wait as the peer asked (:class:`_Stop` when that is longer than :data:`LONGEST_WAIT_S`)."""
        wait_s = exc.wait_s if exc.wait_s is not None else WAIT_WITHOUT_RETRY_AFTER_S
        if wait_s > LONGEST_WAIT_S:
            raise _Stop(f"{exc}: longer than {LONGEST_WAIT_S:.0f} s; fill again later")
        result.waits += 1
        if self.watcher is not None:
            self.watcher.waiting(wait_s, str(exc))
        self.sleep(wait_s)

    def read_ahead(self, ask: Ask) -> ReadAhead:
        """The day's answer, asked for now and read in the background."""
        return ReadAhead(self.http, self.peer + ask.path(self.channel, self.channel_id))

    def record(self, answer: Answer) -> int:
        """The answer's times as filled in the ledger (the day's left-out lines on its first time)."""
        now = now_ms()
        fills = [
            Fill(lo, hi, self.peer, now, lines, answer.taken.dropped if i == 0 else 0)
            for i, ((lo, hi), lines) in enumerate(zip(answer.ask.windows, answer.per_window, strict=True))
        ]
        return _record(self.session, self.keyspace, self.channel, fills)


class _Stop(Exception):
    """The fill stops here (the message says why)."""


def fill(
    channel: str,
    url: str,
    since_ms: int | None,
    until_ms: int,
    *,
    kafka: KafkaSettings,
    cassandra: CassandraSettings,
    report: Callable[[str], None],
    channel_id: str | None = None,
    timeout_s: float = 30.0,
    patience_s: float = 120.0,
    watcher: Watcher | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> FillResult:
    """Fill the times of ``channel`` in ``[since_ms, until_ms)`` no logger of ours covered, from the peer
    at ``url`` (``since_ms`` None: from the first day the peer lists). Raises :class:`ChatlogError` (one
    line) when the ledger or Kafka cannot be used; a peer's failures are in the result, for the caller to
    report (:func:`failure_lines`)."""
    from core.cql import open_session, quiet_driver_logs
    from ingest.importer import ImportStats, KafkaImportSink

    peer = peer_name(url)
    result = FillResult(channel, peer)
    quiet_driver_logs()
    cluster, session = open_session(cassandra)
    keyspace = cassandra.cassandra_keyspace
    try:
        if since_ms is not None:  # nothing to fill: neither Kafka nor the peer is asked
            result.times = _fillable(session, keyspace, channel, peer, since_ms, until_ms)
            if not result.times:
                return result
        sink = KafkaImportSink(kafka, report=report)  # Kafka down or no topic: one line, before the peer
        with client(timeout_s) as http:
            parts = _Fill(
                channel, channel_id, peer, http, sink, session, keyspace, watcher, patience_s, sleep
            )
            try:
                days = _listed(parts, result)
                if since_ms is None and days:  # --all: every day the peer lists
                    since_ms, until_ms = min(days) * DAY_MS, min(until_ms, (max(days) + 1) * DAY_MS)
                    result.times = _fillable(session, keyspace, channel, peer, since_ms, until_ms)
                result.listed = len(days & days_of(result.times))
                _ask_all(parts, asks(result.times, peer, days), result)
            except _Stop as stop:
                result.stopped = str(stop)
            stats = ImportStats()
            sink.finish(stats)
            result.produced, result.undelivered = stats.produced, stats.failed
    finally:
        cluster.shutdown()
    return result


def _listed(parts: _Fill, result: FillResult) -> set[int]:
    """The days the peer lists; the fill stops (first request) when it cannot be asked."""
    while True:
        try:
            return peer_days(parts.http, parts.peer, parts.channel, parts.channel_id)
        except PeerFailed as exc:
            if exc.wait:
                parts.wait(exc, result)
                continue
            raise _Stop(str(exc)) from None


def _ask_all(parts: _Fill, todo: list[Ask], result: FillResult) -> None:
    """Each day in turn: asked, its lines delivered, recorded; stops when the peer is gone too long or a
    line was not delivered (nothing more recorded). The next day is asked for while one is imported."""
    result.first_request = False
    if parts.watcher is not None:
        parts.watcher.planned(len(todo))
    ahead = parts.read_ahead(todo[0]) if todo else None
    try:
        for i, ask in enumerate(todo):
            current = ahead
            ahead = parts.read_ahead(todo[i + 1]) if i + 1 < len(todo) else None
            if not _asked(parts, ask, result, current):
                return
    finally:
        if ahead is not None:
            ahead.close()


def _asked(parts: _Fill, ask: Ask, result: FillResult, ahead: ReadAhead | None) -> bool:
    """One day asked, its lines delivered and recorded; False: the fill stops here."""
    from ingest.importer import ImportStats

    answer = parts.ask(ask, result, ahead)
    if result.stopped:  # the peer went away for good during this day: not asked, as far as it goes
        return False
    result.answers.append(answer)
    delivered = ImportStats()
    parts.sink.finish(delivered)  # every line of the day delivered (or failed) before it is recorded
    if delivered.failed:
        result.undelivered = delivered.failed
        return False
    if not answer.failure:
        result.recorded += parts.record(answer)
    if parts.watcher is not None:
        parts.watcher.answered(answer)
    return True


def _fillable(
    session: Any, keyspace: str, channel: str, peer: str, since_ms: int, until_ms: int
) -> list[Gap]:
    """The times of the range no logger of ours covered and not filled from ``peer`` yet."""
    from serve.coverage import read_ledger

    found = read_ledger(session, keyspace, channel, since_ms, until_ms, whole_range=True).gaps
    return [g for g in found if peer not in g.filled_from and g.end > g.start]


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
