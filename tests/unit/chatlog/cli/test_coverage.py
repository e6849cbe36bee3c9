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


def test_a_gap_filled_from_a_peer_says_so_in_text_and_json() -> None:
    import calendar
    import json

    from chatlog.cli.coverage import as_json, as_text
    from core.coverage_spans import Fill, Gap, Span
    from serve.coverage import Coverage

    t = calendar.timegm((2026, 11, 20, 10, 0, 0)) * 1000
    cov = Coverage(
        "forsen",
        t,
        t + 600_000,
        [Span(0, "a", t, t + 60_000, "lost"), Span(0, "b", t + 120_000, t + 600_000, "open")],
        [Gap(t + 60_000, t + 120_000, "r0 a: lost", ("http://peer:8025",))],
        [Fill(t + 60_000, t + 120_000, "http://peer:8025", t + 700_000, 42, 5)],
    )

    assert as_text(cov).splitlines()[-4:] == [
        "gaps: 1",
        "  2026-11-20 10:01:00 .. 2026-11-20 10:02:00 (60.0 s): r0 a: lost; filled from http://peer:8025",
        "filled from peers: 1",
        "  2026-11-20 10:01:00 .. 2026-11-20 10:02:00 from http://peer:8025: 42 lines, 5 left out "
        "(filled 2026-11-20 10:11:40)",
    ]
    shown = json.loads(as_json(cov))
    assert shown["gaps"][0]["filled_from"] == ["http://peer:8025"]
    assert shown["fills"] == [
        {
            "start": t + 60_000,
            "end": t + 120_000,
            "peer": "http://peer:8025",
            "filled_at": t + 700_000,
            "lines": 42,
            "dropped": 5,
        }
    ]
