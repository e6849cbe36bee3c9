"""Spans and gaps from coverage events (pure logic)."""

from __future__ import annotations

from core.coverage_spans import Fill, Gap, SessionKey, Span, gap_line, gaps, spans, with_fills
from schemas.coverage import CoverageEvent, State


def ev(
    state: State, at: int, *, replica: int = 0, worker: str = "a", session: int = 1, reason: str = ""
) -> CoverageEvent:
    return CoverageEvent(
        replica=replica,
        worker=worker,
        session=session,
        state=state,
        at=at,
        channel="c",
        reason=reason,
    )


def spans_at_1000(events: list[CoverageEvent], last_seen: dict[SessionKey, int]) -> list[Span]:
    """:func:`spans` at 1000 ms, a worker silent for 100 ms gone."""
    return spans(events, last_seen, now_ms=1000, silent_after_ms=100)


def test_a_hand_off_with_overlap_leaves_no_gap() -> None:
    found = spans_at_1000(
        [ev("joined", 0), ev("joined", 50, worker="b"), ev("left", 60, reason="handed-off")],
        {(0, "b", 1): 1000},
    )
    assert found == [Span(0, "a", 0, 60, "handed-off"), Span(0, "b", 50, 1000, "open")]
    assert gaps(found, since_ms=0, until_ms=1000) == []


def test_a_killed_worker_ends_at_its_last_sign_of_life_and_leaves_a_gap_until_the_next_join() -> None:
    found = spans(
        [ev("joined", 100), ev("joined", 20_000, worker="b")],
        {(0, "a", 1): 5_000, (0, "b", 1): 30_000},
        now_ms=30_000,
        silent_after_ms=6_000,
    )
    assert found == [Span(0, "a", 100, 5_000, "silent"), Span(0, "b", 20_000, 30_000, "open")]
    assert gaps(found, since_ms=0, until_ms=30_000) == [Gap(5_000, 20_000, "r0 a: silent")]


def test_another_replica_group_covers_the_gap_of_the_first() -> None:
    found = spans_at_1000(
        [ev("joined", 0), ev("left", 400, reason="lost"), ev("joined", 0, replica=1, worker="x"),
         ev("joined", 900)],
        {(1, "x", 1): 1000, (0, "a", 1): 1000},
    )  # fmt: skip
    assert gaps(found, since_ms=0, until_ms=1000) == []
    without_r1 = [s for s in found if s.replica == 0]
    assert gaps(without_r1, since_ms=0, until_ms=1000) == [Gap(400, 900, "r0 a: lost")]


def test_no_gap_before_the_first_join_and_none_after_an_open_span() -> None:
    found = spans_at_1000([ev("joined", 500)], {(0, "a", 1): 990})
    assert gaps(found, since_ms=0, until_ms=1000) == []
    assert gaps([], since_ms=0, until_ms=1000) == []


def test_a_refresh_join_does_not_restart_a_span_and_a_stop_leaves_a_trailing_gap() -> None:
    found = spans_at_1000(
        [ev("joined", 0), ev("joined", 300, reason="refresh"), ev("left", 700, reason="stopped")],
        {(0, "a", 1): 700},
    )
    assert found == [Span(0, "a", 0, 700, "stopped")]
    assert gaps(found, since_ms=0, until_ms=1000) == [Gap(700, 1000, "r0 a: stopped")]
    assert gaps(found, since_ms=100, until_ms=600) == []


def test_gap_marks_fall_between_the_lines_around_them() -> None:
    from core.coverage_spans import interleave

    gap = Gap(60_000, 125_000, "r0 a: silent")
    lines = [(59_000, "x"), (126_000, "y"), (127_000, "z")]
    out = list(interleave(lines, [gap]))
    assert out == ["x", "-- not logged 00:01:00-00:02:05 (65 s): no logger (r0 a: silent) --", "y", "z"]
    assert next(iter(interleave([], [gap]))).startswith("-- not logged 00:01:00-00:02:05")


def test_a_channel_whose_coverage_ended_before_the_range_is_uncovered_all_through_it() -> None:
    ended = [Span(0, "a", 0, 100, "stopped"), Span(1, "x", 0, 80, "silent")]
    assert gaps(ended, since_ms=200, until_ms=1000) == [Gap(200, 1000, "r0 a: stopped")]
    assert gaps([Span(0, "a", 0, 100, "open")], since_ms=200, until_ms=1000) == []


def test_a_groups_gaps_count_from_the_channels_first_coverage_by_any_group() -> None:
    r1 = [Span(1, "x", 300, 1000, "open")]
    assert gaps(r1, since_ms=0, until_ms=1000, covered_from=100) == [Gap(100, 300, "no logger")]
    assert gaps([], since_ms=0, until_ms=1000, covered_from=100) == [Gap(100, 1000, "no logger")]
    assert gaps([], since_ms=0, until_ms=1000) == []


def test_a_fill_cuts_a_gap_into_the_pieces_it_filled_and_those_it_did_not() -> None:
    gap = Gap(1_000, 10_000, "r0 a: lost")
    fills = [Fill(3_000, 5_000, "https://p", 0, 7, 0), Fill(4_000, 6_000, "https://q", 0, 2, 0)]

    assert with_fills([gap], fills) == [
        Gap(1_000, 3_000, "r0 a: lost"),
        Gap(3_000, 4_000, "r0 a: lost", ("https://p",)),
        Gap(4_000, 5_000, "r0 a: lost", ("https://p", "https://q")),
        Gap(5_000, 6_000, "r0 a: lost", ("https://q",)),
        Gap(6_000, 10_000, "r0 a: lost"),
    ]


def test_fills_of_one_peer_side_by_side_fill_the_gap_as_one_and_fills_elsewhere_change_nothing() -> None:
    gap = Gap(1_000, 10_000, "no logger")
    fills = [
        Fill(0, 4_000, "https://p", 0, 1, 0),
        Fill(4_000, 10_000, "https://p", 0, 1, 0),
        Fill(20_000, 30_000, "https://q", 0, 1, 0),
    ]

    assert with_fills([gap], fills) == [Gap(1_000, 10_000, "no logger", ("https://p",))]
    assert with_fills([gap], []) == [gap]


def test_a_gap_mark_says_which_peers_filled_it() -> None:
    filled = Gap(3_600_000, 3_660_000, "r0 a: lost", ("https://a", "https://b"))

    assert gap_line(filled) == (
        "-- not logged 01:00:00-01:01:00 (60 s): no logger (r0 a: lost); filled from https://a, https://b --"
    )
    assert (
        gap_line(Gap(0, 1_000, "no logger"))
        == "-- not logged 00:00:00-00:00:01 (1 s): no logger (no logger) --"
    )
