"""An error as one line for a user: whitespace collapsed, cut with a mark, the type named on request."""

from __future__ import annotations

from core.errors import one_line


def test_line_ends_and_runs_of_whitespace_are_one_space() -> None:
    assert one_line(ValueError("  no\n\tthere \r\n  at all ")) == "no there at all"


def test_a_long_text_is_cut_to_the_limit_with_a_mark() -> None:
    text = one_line(RuntimeError("x" * 500))
    assert len(text) == 200 and text.endswith("x...")
    assert one_line("y" * 10, 10) == "y" * 10
    assert one_line("y" * 11, 10) == "y" * 7 + "..."
    assert one_line("z" * 5000, None) == "z" * 5000


def test_typed_names_the_type_before_the_cut_text() -> None:
    assert one_line(TimeoutError("timed\nout"), typed=True) == "TimeoutError: timed out"
    assert one_line(KeyError(), typed=True) == "KeyError"
    assert one_line(OSError("a" * 50), 10, typed=True) == "OSError: aaaaaaa..."
