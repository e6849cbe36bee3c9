"""Reading the ledger: a gap whose lines were imported from a peer says so (``coverage_fills``)."""

from __future__ import annotations

import calendar
from typing import Any

import pytest
from cassandra import InvalidRequest

from core.coverage_spans import Fill, Gap, Span
from core.testing_cassandra import Call, FakeSession, table_of
from core.times import naive_utc
from schemas.coverage import DAY_MS
from serve import coverage
from serve.coverage import read_coverage, read_fills

T = calendar.timegm((2026, 11, 20, 10, 0, 0)) * 1000
DAY = T // DAY_MS


def row(**values: Any) -> Any:
    from types import SimpleNamespace

    return SimpleNamespace(**values)


def ledger(call: Call) -> list[Any]:
    """One worker's run lost at T + 60 s, another's from T + 360 s; one fill of T + 120 .. 180 s."""
    table, day = table_of(str(call.statement)), call.params[1]
    if day != DAY:
        return []
    if table == "coverage_by_channel":
        return [
            row(at=naive_utc(T), replica=0, worker="a", session=1, state="joined", reason=""),
            row(at=naive_utc(T + 60_000), replica=0, worker="a", session=1, state="left", reason="lost"),
            row(at=naive_utc(T + 360_000), replica=0, worker="b", session=1, state="joined", reason=""),
            row(at=naive_utc(T + 900_000), replica=0, worker="b", session=1, state="left", reason="stopped"),
        ]
    if table == "coverage_fills":
        return [
            row(
                start_at=naive_utc(T + 120_000),
                end_at=naive_utc(T + 180_000),
                peer="http://peer",
                filled_at=naive_utc(T + DAY_MS),
                lines=12,
                dropped=3,
            )
        ]
    return []


def test_the_gap_is_cut_where_the_peer_filled_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(coverage, "read_last_seen", lambda *_args: {})
    session = FakeSession(ledger)

    found = read_coverage(session, "ks", "forsen", T, T + 600_000, now_ms=T + DAY_MS)

    assert found.spans == [
        Span(0, "a", T, T + 60_000, "lost"),
        Span(0, "b", T + 360_000, T + 900_000, "stopped"),
    ]
    assert found.gaps == [
        Gap(T + 60_000, T + 120_000, "r0 a: lost"),
        Gap(T + 120_000, T + 180_000, "r0 a: lost", ("http://peer",)),
        Gap(T + 180_000, T + 360_000, "r0 a: lost"),
    ]
    assert found.fills == [Fill(T + 120_000, T + 180_000, "http://peer", T + DAY_MS, 12, 3)]


def test_fills_outside_the_range_are_not_read_back() -> None:
    session = FakeSession(ledger)

    assert read_fills(session, "ks", "forsen", T + 180_000, T + 600_000) == []
    assert read_fills(session, "ks", "forsen", T + 179_999, T + 600_000) != []


def test_a_keyspace_without_the_fills_table_has_no_fills() -> None:
    class NoTable(FakeSession):
        def prepare(self, query: str) -> str:
            if "coverage_fills" in query:
                raise InvalidRequest("unconfigured table coverage_fills")
            return super().prepare(query)

    assert read_fills(NoTable(ledger), "ks", "forsen", T, T + 600_000) == []
