"""``chatlog coverage``: a mistake in its arguments is one line, said before Cassandra is asked."""

from __future__ import annotations

import pytest

from tests.unit.cli_runs import DOWN, chatlog


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["", "--format", "text"], "CHANNEL is empty"),
        (["#"], "CHANNEL is empty"),
        (["forsen", "--since", "2026-01-02", "--until", "2026-01-01"], "--until must be after --since"),
        (["forsen", "--format", "xml"], "--format must be text or json, not 'xml'"),
    ],
)
def test_a_bad_argument_is_one_line_before_cassandra(args: list[str], message: str) -> None:
    run = chatlog(["coverage", *args], DOWN, timeout=15)
    assert run.code == 2 and run.stderr_lines == [f"chatlog: error: {message}"]
