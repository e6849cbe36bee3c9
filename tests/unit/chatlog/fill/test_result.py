"""What a fill says: an answer with nothing that fits is a failure, a fill that filled nothing is one line,
and the summary counts what was not logged here, listed, asked, filled and left out."""

from __future__ import annotations

import calendar

from chatlog.fill.accept import Taken
from chatlog.fill.asks import Ask
from chatlog.fill.result import Answer, FillResult, failure_lines, failure_of
from core.coverage_spans import Gap

T = calendar.timegm((2026, 11, 20, 10, 0, 0)) * 1000
ASK = Ask(((T, T + 300_000),))
LATER = Ask(((T + 3_600_000, T + 3_900_000),))
TIMES = [Gap(T, T + 300_000, "no logger"), Gap(T + 3_600_000, T + 3_900_000, "r0 a: lost")]


def test_an_answer_with_lines_of_which_none_fits_is_a_failure_an_empty_one_is_not() -> None:
    assert failure_of(Taken(lines=3, outside=100), []) == ""
    assert failure_of(Taken(), []) == ""  # the peer logged nothing then either
    assert failure_of(Taken(not_irc=4), ["peer/x:1: not an IRC line (expected '@tags', ...)"]) == (
        "answered 4 lines and none of them fits: 4 not an IRC chat line "
        "(first: not an IRC line (expected '@tags', ...))"
    )
    assert failure_of(Taken(other_channel=2, outside=1), []) == (
        "answered 3 lines and none of them fits: 2 of another channel, 1 outside the time asked"
    )


def test_a_peer_that_filled_nothing_is_one_line() -> None:
    result = FillResult("forsen", "http://peer", times=TIMES, listed=1)
    result.first_request = False
    result.answers = [
        Answer(ASK, failure="is not reachable: [Errno 111] Connection refused (away for 120 s)")
    ]
    result.stopped = result.answers[0].failure

    assert failure_lines(result) == [
        "fill #forsen from http://peer: is not reachable: [Errno 111] Connection refused (away for 120 s) "
        "(asked for 2026-11-20 10:00:00 .. 2026-11-20 10:05:00); nothing filled; stopped asking"
    ]


def test_a_peer_down_at_the_first_request_is_one_line() -> None:
    result = FillResult("forsen", "http://peer", times=TIMES, stopped="is not reachable: refused")

    assert failure_lines(result) == [
        "fill #forsen from http://peer: is not reachable: refused (asked for the days it lists); "
        "nothing filled"
    ]


def test_a_fill_that_filled_some_says_each_failure_and_sums_up() -> None:
    result = FillResult("forsen", "http://peer", times=TIMES, listed=1, produced=3, first_request=False)
    result.answers = [
        Answer(ASK, taken=Taken(lines=3, outside=7)),
        Answer(LATER, taken=Taken(), failure="answered HTTP 500: could not load logs"),
    ]

    assert failure_lines(result) == [
        "fill #forsen from http://peer: 2026-11-20 11:00:00 .. 2026-11-20 11:05:00: "
        "answered HTTP 500: could not load logs"
    ]
    summary = result.summary()
    assert summary.startswith(
        "fill #forsen from http://peer: 2 times not logged here (600 s) on 1 day, 1 listed by the peer; "
        "asked 2, filled 1 (300 s), failed 1; lines imported 3, produced 3, left out 7 (7 outside the time "
        "asked); "
    )
    assert summary.endswith(" lines/s")


def test_nothing_to_fill_or_nothing_listed_says_so() -> None:
    assert (
        FillResult("forsen", "http://peer").summary()
        == "fill #forsen from http://peer: nothing left to fill in this range"
    )
    assert FillResult("forsen", "http://peer", times=TIMES).summary() == (
        "fill #forsen from http://peer: 2 times not logged here (600 s) on 1 day, 0 listed by the peer: "
        "nothing to ask"
    )
    assert failure_lines(FillResult("forsen", "http://peer")) == []
