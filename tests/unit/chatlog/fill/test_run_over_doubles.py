"""One fill end to end over doubles (the ledger a fake session, Kafka a list, the peer an httpx mock
transport): the right lines are imported, and a time is recorded as filled only once its lines were
delivered; a peer that is down stops the fill at once and records nothing."""

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
from chatlog.fill.run import FillResult, fill
from core.settings import CassandraSettings, KafkaSettings
from core.testing_cassandra import Call, FakeSession, table_of
from core.times import naive_utc
from ingest.importer import ImportStats
from schemas.chat_event import ChatEvent
from schemas.coverage import DAY_MS

T = calendar.timegm((2026, 11, 20, 10, 0, 0)) * 1000
GAP = (T + 60_000, T + 120_000)


def ledger(call: Call) -> list[Any]:
    """A worker lost at GAP's start, another from its end."""
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
    """The import's Kafka sink: events kept; ``undelivered`` of them fail at the end."""

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


def run_fill(
    monkeypatch: pytest.MonkeyPatch,
    peer: Callable[[httpx.Request], httpx.Response],
    kafka: Delivered,
    until: int = T + 600_000,
) -> tuple[FillResult, FakeSession]:
    session = FakeSession(ledger)
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
        T,
        until,
        kafka=KafkaSettings(),
        cassandra=CassandraSettings(),
        report=pytest.fail,
    )
    return result, session


def fills_recorded(session: FakeSession) -> list[tuple[Any, ...]]:
    return [call.params for call in session.executed if table_of(str(call.statement)) == "coverage_fills"
            and str(call.statement).startswith("INSERT")]  # fmt: skip


def whole_day(request: httpx.Request) -> httpx.Response:
    """A justlog-like peer: the whole day whatever from/to say, and a line of another channel."""
    assert request.url.path == "/channel/forsen/2026/11/20"
    assert (request.url.params["from"], request.url.params["to"]) == (
        str(GAP[0] // 1000),
        str(GAP[1] // 1000 - 1),
    )
    body = "\n".join(
        [line(T, "before"), line(GAP[0] + 5, "in"), line(GAP[0] + 9, "xqc", "xqc"), line(GAP[1], "after")]
    )
    return httpx.Response(200, text=body + "\n")


def test_the_gaps_lines_are_imported_and_the_fill_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    kafka = Delivered()

    result, session = run_fill(monkeypatch, whole_day, kafka)

    assert [e.text for e in kafka.events] == ["in"]
    assert (len(result.filled), result.produced, result.undelivered) == (1, 1, 0)
    assert result.summary().endswith(
        "lines imported 1, produced 1, left out 3 (1 of another channel, 2 outside the time asked)"
    )
    (row,) = fills_recorded(session)
    assert row[:5] + row[6:] == ("forsen", T // DAY_MS, GAP[0], "http://peer.test", GAP[1], 1, 3)
    assert abs(row[5] - time.time() * 1000) < 60_000  # filled_at: when it was filled


def test_nothing_is_recorded_when_lines_were_not_delivered(monkeypatch: pytest.MonkeyPatch) -> None:
    result, session = run_fill(monkeypatch, whole_day, Delivered(undelivered=1))

    assert result.undelivered == 1 and fills_recorded(session) == []
    assert result.summary().endswith("; 1 not delivered: nothing recorded as filled")


def test_a_peer_that_is_down_stops_the_fill_and_nothing_is_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    kafka = Delivered()
    result, session = run_fill(monkeypatch, down, kafka, until=T + 900_000)  # a second gap after b stopped

    assert result.gaps == 2
    assert result.stopped == "is not reachable: [Errno 111] Connection refused"
    assert (len(result.answers), result.filled, kafka.events, fills_recorded(session)) == (1, [], [], [])
