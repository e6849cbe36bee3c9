"""``chatlog logs``: a time range that holds nothing by construction (--since not before --until) is a
one-line error naming both options, said before Cassandra is asked (services are down)."""

from __future__ import annotations

import pytest

from chatlog.cli.logs import raw_line
from tests.unit.cli_runs import DOWN, chatlog


@pytest.mark.parametrize(
    ("since", "until"),
    [
        ("2026-01-02", "2026-01-01"),
        ("1700000000000", "1700000000000"),  # an empty range
        ("2026-01-01T00:00:01Z", "1767225600000"),  # ISO-8601 and epoch ms: 2026-01-01T00:00:00Z
    ],
)
def test_since_not_before_until_is_one_line_naming_both(since: str, until: str) -> None:
    run = chatlog(["logs", "x", "--since", since, "--until", until], DOWN, timeout=15)
    assert run.code == 2 and run.stderr_lines == ["chatlog: error: --until must be after --since"]


def test_since_before_until_goes_on_to_cassandra() -> None:
    run = chatlog(["logs", "x", "--since", "2026-01-01", "--until", "2026-01-02"], DOWN, timeout=15)
    assert run.code == 2 and len(run.stderr_lines) == 1 and "CHATLOG_CASSANDRA_PORT" in run.stderr


def test_raw_lines_are_exact_in_a_pipe_and_escaped_on_a_terminal() -> None:
    line = "@id=1 :a!a@a PRIVMSG #c :\x01ACTION hi \x1b[2J\x1b]0;title\x07\x01"
    assert raw_line(line, terminal=False) == line
    shown = raw_line(line, terminal=True)
    assert "\x1b" not in shown and "\x07" not in shown and "\x01" not in shown
    assert shown == "@id=1 :a!a@a PRIVMSG #c :\\x01ACTION hi \\x1b[2J\\x1b]0;title\\x07\\x01"


@pytest.mark.parametrize("option", ["--since", "--until"])
def test_an_empty_time_is_an_error_not_no_filter(option: str) -> None:
    run = chatlog(["logs", "x", option, ""], DOWN, timeout=15)  # `--since "$UNSET"` in a script
    assert run.code == 2 and run.stderr == f"chatlog: error: {option}: '' is not a time " + (
        "(use ISO-8601 such as 2026-11-21T15:04:05Z, or epoch milliseconds)\n"
    )
