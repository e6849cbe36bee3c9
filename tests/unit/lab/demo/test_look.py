"""A run ends by saying how to look at what it logged: ``chatlog logs``, ``chatlog serve`` on its keyspace
and a channel's page; the summary line stays the last line."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from rich.console import Console

from core.settings import StackSettings
from core.times import parse_time
from lab.demo import run as demo_run
from lab.demo.look import busiest, look_lines, program_name, serve_address
from lab.demo.report import RunReport

SINCE = int(datetime(2026, 3, 4, 5, 6, 7, 890_000, tzinfo=UTC).timestamp() * 1000)


def test_the_lines_name_the_keyspace_the_channel_the_commands_and_the_page() -> None:
    lines = look_lines(
        program=".venv/bin/chatlog",
        keyspace="chatlog_demo",
        channel="dab12cd_7",
        since_ms=SINCE,
        day=date(2026, 3, 4),
        host="127.0.0.1",
        port=8025,
    )
    assert lines == [
        "look at what was logged (keyspace chatlog_demo, channel #dab12cd_7):",
        "  .venv/bin/chatlog logs dab12cd_7 --keyspace chatlog_demo --since 2026-03-04T05:06:07Z",
        "  CHATLOG_CASSANDRA_KEYSPACE=chatlog_demo .venv/bin/chatlog serve",
        "  then open http://127.0.0.1:8025/?channel=dab12cd_7&date=2026-03-04",
    ]
    since = lines[1].split("--since ")[1]
    assert parse_time(since, "--since") == SINCE // 1000 * 1000  # what `chatlog logs` reads back
    url = urlsplit(lines[3].split("open ")[1])
    assert parse_qs(url.query) == {"channel": ["dab12cd_7"], "date": ["2026-03-04"]}


def test_a_server_on_every_address_is_opened_on_the_loopback_and_ipv6_in_brackets() -> None:
    def url(host: str) -> str:
        lines = look_lines(
            program="chatlog", keyspace="k", channel="c", since_ms=0, day=date(2026, 1, 1), host=host, port=9
        )
        return lines[3].split("open ")[1]

    assert url("0.0.0.0") == "http://127.0.0.1:9/?channel=c&date=2026-01-01"
    assert url("::1") == "http://[::1]:9/?channel=c&date=2026-01-01"
    assert url("logs.example") == "http://logs.example:9/?channel=c&date=2026-01-01"


def test_the_busiest_channel_is_the_one_with_most_lines() -> None:
    assert busiest(["a", "b", "b", "c"], "z") == "b"
    assert busiest([], "z") == "z"


def test_serve_address_follows_the_environment_and_falls_back_to_the_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert serve_address() == ("127.0.0.1", 8025)
    monkeypatch.setenv("CHATLOG_SERVE_PORT", "9100")
    assert serve_address() == ("127.0.0.1", 9100)
    monkeypatch.setenv("CHATLOG_SERVE_PORT", "not a port")
    assert serve_address() == ("127.0.0.1", 8025)


def test_program_name_is_how_to_call_this_chatlog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / ".venv" / "bin" / "chatlog"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", "/nonexistent")
    assert program_name(".venv/bin/chatlog", cwd=tmp_path) == ".venv/bin/chatlog"
    assert program_name(str(script), cwd=tmp_path) == ".venv/bin/chatlog"
    assert program_name(str(script), cwd=tmp_path / "elsewhere") == str(script)
    assert program_name("/usr/lib/python3/pytest", cwd=tmp_path) == "chatlog"  # not run as chatlog
    monkeypatch.setenv("PATH", str(script.parent))
    assert program_name(str(script), cwd=tmp_path) == "chatlog"


def test_a_run_points_at_its_keyspace_and_channel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CHATLOG_SERVE_PORT", raising=False)
    run = demo_run.Run(StackSettings(state_dir=tmp_path), demo_run.demo_config(channels=3), console=None)
    lines = run.look()
    channel = f"d{run.run_id}_0"
    today = datetime.now(UTC).date().isoformat()
    assert lines[0] == f"look at what was logged (keyspace chatlog_demo, channel #{channel}):"
    assert re.fullmatch(rf"  \S*chatlog logs {channel} --keyspace chatlog_demo --since \S+Z", lines[1])
    assert re.fullmatch(r"  CHATLOG_CASSANDRA_KEYSPACE=chatlog_demo \S*chatlog serve", lines[2])
    assert lines[3] == f"  then open http://127.0.0.1:8025/?channel={channel}&date={today}"


def test_execute_prints_the_lines_before_the_summary_which_stays_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = RunReport(sent=10, stored=10, lost=0, duplicates_removed=10, max_gap_s=0.0, recovery_s=None)
    look = [
        "look at what was logged (keyspace chatlog_demo, channel #d0a1b2c_3):",
        "  .venv/bin/chatlog logs d0a1b2c_3 --keyspace chatlog_demo --since 2026-03-04T05:06:07Z",
    ]

    class FakeRun:
        def __init__(
            self, settings: StackSettings, config: demo_run.RunConfig, console: Console | None
        ) -> None:
            self.run_dir = tmp_path

        async def main(self, sup: object) -> RunReport:
            return report

        def write(self, rep: RunReport) -> None:
            return None

        def env(self) -> dict[str, str]:
            return {}

        def look(self) -> list[str]:
            return look

    @contextmanager
    def supervisor(*_args: Any, **_kwargs: Any) -> Iterator[object]:
        yield object()

    monkeypatch.setattr(demo_run, "Run", FakeRun)
    monkeypatch.setattr(demo_run, "Supervisor", supervisor)
    out = io.StringIO()
    config = demo_run.demo_config(channels=1)
    config.results_dir = None
    console = Console(file=out, width=60, color_system=None)  # narrower than the lines: they must not wrap
    assert demo_run.execute(StackSettings(state_dir=tmp_path), config, console) is report
    printed = out.getvalue().splitlines()
    assert printed[: len(look)] == look
    summary = " ".join(printed[len(look) :]).split()  # the summary comes last (wrapped as before)
    assert summary == report.line().split()
