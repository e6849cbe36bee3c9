"""One fill end to end over doubles (the ledger a fake session, Kafka a list, the peer an httpx mock
transport): the times no logger covered, of the days the peer lists, are imported, each day recorded as
filled once its lines were delivered; a peer that asks to wait is waited for, one that goes away midway is
asked again until the patience runs out, one that is down at the first request stops the fill at once."""

from __future__ import annotations

import calendar
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

import chatlog.fill.run as run_module
import core.cql
import ingest.importer
import serve.coverage
from chatlog.fill.result import FillResult
from chatlog.fill.run import fill
from core.settings import CassandraSettings, KafkaSettings
from core.testing_cassandra import Call, FakeSession, table_of
from core.times import naive_utc
from ingest.importer import ImportStats
from schemas.chat_event import ChatEvent
from schemas.coverage import DAY_MS

T = calendar.timegm((2026, 11, 20, 10, 0, 0)) * 1000
GAP = (T + 60_000, T + 120_000)
SINCE = T - 3 * 3_600_000
"""The range starts 3 hours before the channel was first logged here: that time is not logged here."""
NEXT_DAY = "/channel/forsen/2026/11/21"


def ledger(call: Call) -> list[Any]:
    """A worker from T, lost at GAP's start, another from its end until T + 10 min."""
    from types import SimpleNamespace

    if table_of(str(call.statement)) != "coverage_by_channel" or call.params[1] != T // DAY_MS:
        return []
    rows = [
        (T, "a", "joined", ""),
        (GAP[0], "a", "left", "lost"),
        (GAP[1], "b", "joined", ""),
        (T + 600_000, "b", "left", "stopped"),
    ]
    return [
        SimpleNamespace(at=naive_utc(at), replica=0, worker=w, session=1, state=s, reason=r)
        for at, w, s, r in rows
    ]


class Cluster:
    def shutdown(self) -> None:
        pass


class Delivered:
    """The import's Kafka sink: events kept; ``undelivered`` of them failed (its counts are cumulative)."""

    def __init__(self, undelivered: int = 0) -> None:
        self.events: list[ChatEvent] = []
        self.undelivered = undelivered

    def event(self, event: ChatEvent) -> None:
        self.events.append(event)

    def dead_letter(self, raw: bytes, reason: str, source: str) -> None:
        raise AssertionError(f"a fill sends no dead letter: {raw!r} {reason} {source}")

    def finish(self, stats: ImportStats) -> None:
        stats.produced = len(self.events) - self.undelivered
        stats.failed = self.undelivered


def line(at: int, text: str, channel: str = "forsen") -> str:
    return f"@id={at}-{text};room-id=7;tmi-sent-ts={at} :bob!bob@bob.tmi.twitch.tv PRIVMSG #{channel} :{text}"


def listing(*days: tuple[int, int, int]) -> httpx.Response:
    logs = [{"year": str(y), "month": str(m), "day": str(d)} for y, m, d in days]
    return httpx.Response(200, json={"availableLogs": logs})


def whole_day(request: httpx.Request) -> httpx.Response:
    """A justlog-like peer that lists Nov 20 (and a day out of the range): the whole day whatever from/to
    say, with a line of another channel."""
    if request.url.path == "/list":
        return listing((2026, 11, 20), (2026, 11, 1))
    assert request.url.path == "/channel/forsen/2026/11/20"
    body = "\n".join(
        [
            line(SINCE + 5, "early"),
            line(T, "covered"),
            line(GAP[0] + 5, "in"),
            line(GAP[0] + 9, "xqc", "xqc"),
            line(GAP[1], "after"),
        ]
    )
    return httpx.Response(200, text=body + "\n")


def run_fill(
    monkeypatch: pytest.MonkeyPatch,
    peer: Callable[[httpx.Request], httpx.Response],
    kafka: Delivered,
    until: int = T + 600_000,
    **kw: Any,
) -> tuple[FillResult, FakeSession, list[float]]:
    session = FakeSession(ledger)
    slept: list[float] = []
    monkeypatch.setattr(core.cql, "open_session", lambda _settings: (Cluster(), session))
    monkeypatch.setattr(serve.coverage, "read_last_seen", lambda *_args: {})
    monkeypatch.setattr(ingest.importer, "KafkaImportSink", lambda _settings, report: kafka)
    monkeypatch.setattr(
        run_module,
        "client",
        lambda timeout_s: httpx.Client(transport=httpx.MockTransport(peer), timeout=timeout_s),
    )
    result = fill(
        "forsen",
        "http://peer.test/",
        kw.pop("since", SINCE),
        until,
        kafka=KafkaSettings(),
        cassandra=CassandraSettings(),
        report=pytest.fail,
        sleep=slept.append,
        **kw,
    )
    return result, session, slept


def fills_recorded(session: FakeSession) -> list[tuple[Any, ...]]:
    return [call.params for call in session.executed if table_of(str(call.statement)) == "coverage_fills"
            and str(call.statement).startswith("INSERT")]  # fmt: skip


def test_the_times_not_logged_here_are_imported_and_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    kafka = Delivered()
    asked: list[httpx.URL] = []

    def peer(request: httpx.Request) -> httpx.Response:
        asked.append(request.url)
        return whole_day(request)

    result, session, slept = run_fill(monkeypatch, peer, kafka)

    assert [(u.path, u.params.get("from"), u.params.get("to")) for u in asked] == [
        ("/list", None, None),
        ("/channel/forsen/2026/11/20", str(SINCE // 1000), str(GAP[1] // 1000 - 1)),
    ]
    assert [e.text for e in kafka.events] == ["early", "in"]
    assert (result.listed, len(result.filled), result.produced, result.undelivered, slept) == (1, 1, 2, 0, [])
    assert "lines imported 2, produced 2, left out 3 (1 of another channel, 2 outside the time asked)" in (
        result.summary()
    )
    early, gap = fills_recorded(session)
    assert early[:5] + early[6:] == ("forsen", T // DAY_MS, SINCE, "http://peer.test", T, 1, 3)
    assert gap[:5] + gap[6:] == ("forsen", T // DAY_MS, GAP[0], "http://peer.test", GAP[1], 1, 0)
    assert abs(early[5] - time.time() * 1000) < 60_000  # filled_at: when it was filled


def test_nothing_is_recorded_when_lines_were_not_delivered(monkeypatch: pytest.MonkeyPatch) -> None:
    result, session, _slept = run_fill(monkeypatch, whole_day, Delivered(undelivered=1))

    assert result.undelivered == 1 and fills_recorded(session) == []
    assert result.summary().endswith("; 1 not delivered: the rest is not recorded as filled")


def test_a_peer_that_is_down_at_first_stops_the_fill_and_nothing_is_recorded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    kafka = Delivered()
    result, session, slept = run_fill(monkeypatch, down, kafka, until=T + 900_000)

    assert len(result.times) == 3  # before T, the gap, after b stopped
    assert result.stopped == "is not reachable: [Errno 111] Connection refused"
    assert (result.answers, kafka.events, fills_recorded(session), slept) == ([], [], [], [])


def test_a_peer_that_asks_to_wait_is_waited_for_and_not_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = iter(
        [
            httpx.Response(429, headers={"Retry-After": "3"}),  # the list
            httpx.Response(503),  # the day, twice
            httpx.Response(429, headers={"Retry-After": "1"}),
        ]
    )

    def limited(request: httpx.Request) -> httpx.Response:
        return next(answers, None) or whole_day(request)

    kafka = Delivered()
    result, session, slept = run_fill(monkeypatch, limited, kafka)

    assert slept == [3.0, 5.0, 1.0]
    assert (result.waits, len(result.filled), result.failed, len(fills_recorded(session))) == (3, 1, [], 2)
    assert [e.text for e in kafka.events] == ["early", "in"]


def two_days(request: httpx.Request) -> httpx.Response:
    if request.url.path == "/list":
        return listing((2026, 11, 20), (2026, 11, 21))
    if request.url.path == NEXT_DAY:
        return httpx.Response(200, text=line(T + 86_400_000, "next") + "\n")
    return whole_day(request)


def test_a_peer_that_goes_away_midway_and_comes_back_is_asked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    cuts = iter([1, 2])

    def flaky(request: httpx.Request) -> httpx.Response:
        if request.url.path == NEXT_DAY and next(cuts, None):
            raise httpx.ConnectError("[Errno 111] Connection refused", request=request)
        return two_days(request)

    kafka = Delivered()
    result, session, slept = run_fill(monkeypatch, flaky, kafka, until=T + 2 * 86_400_000)

    assert slept == [1.0, 2.0]
    assert [e.text for e in kafka.events] == ["early", "in", "next"]
    assert (len(result.filled), result.stopped, len(fills_recorded(session))) == (2, "", 4)
    assert fills_recorded(session)[2][4] == T + 14 * 3_600_000  # the gap after b stopped: to midnight


def test_a_peer_away_longer_than_the_patience_stops_the_fill_with_what_was_filled_recorded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def gone(request: httpx.Request) -> httpx.Response:
        if request.url.path == NEXT_DAY:
            raise httpx.ConnectError("[Errno 111] Connection refused", request=request)
        return two_days(request)

    kafka = Delivered()
    result, session, _slept = run_fill(monkeypatch, gone, kafka, until=T + 2 * 86_400_000, patience_s=0.0)

    assert result.stopped == "is not reachable: [Errno 111] Connection refused (away for 0 s)"
    assert [e.text for e in kafka.events] == ["early", "in"]
    assert [row[2] for row in fills_recorded(session)] == [SINCE, GAP[0], T + 600_000]  # Nov 20 only


def test_all_takes_every_day_the_peer_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    kafka = Delivered()

    result, _session, _slept = run_fill(monkeypatch, two_days, kafka, since=None, until=T + 5 * 86_400_000)

    assert result.times[0].start == T - 10 * 3_600_000  # Nov 20 00:00: the first day listed
    assert result.times[-1].end == T + 38 * 3_600_000  # Nov 22 00:00: the end of the last
    assert [e.text for e in kafka.events] == ["early", "in", "next"]
