"""``chatlog fill``: a mistake in its arguments is one line, said before Cassandra or the peer is asked."""

from __future__ import annotations

import pytest

from tests.unit.cli_runs import DOWN, chatlog


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["#", "--from", "http://peer"], "CHANNEL is empty"),
        (["forsen", "--from", "peer.example.com"], "--from: 'peer.example.com' is not an http(s) URL"),
        (["forsen", "--from", "http://p", "--since", "2026-01-02", "--until", "2026-01-01"], "--until must"),
        (["forsen", "--from", "http://p", "--timeout", "0"], "--timeout must be more than 0 seconds"),
    ],
)
def test_a_bad_argument_is_one_line_before_cassandra(args: list[str], message: str) -> None:
    run = chatlog(["fill", *args], DOWN, timeout=15)
    assert run.code == 2 and len(run.stderr_lines) == 1, run.stderr
    assert run.stderr_lines[0].startswith(f"chatlog: error: {message}")


def test_cassandra_down_is_one_line() -> None:
    run = chatlog(["fill", "forsen", "--from", "http://127.0.0.1:1"], DOWN, timeout=30)
    assert run.code == 2 and len(run.stderr_lines) == 1, run.stderr
    assert run.stderr_lines[0].startswith("chatlog: error: Cassandra at 127.0.0.1:1 is not reachable")
