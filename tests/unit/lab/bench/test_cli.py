"""``chatlog bench``: every benchmark command starts, and a missing bench extra is one line."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from lab.bench.cli import app, register

COMMANDS = (
    "parse",
    "ingest",
    "rebalance",
    "sink",
    "monitor",
    "capacity",
    "scale",
    "irc",
    "serve",
    "fresh",
    "placement",
    "vs-justlog",
    "read-floor",
    "fill",
    "report",
)
OUTSIDE_BINARY = {"vs-justlog", "read-floor", "fill"}
"""Benchmarks that need a binary built outside the repository: `make bench` runs them when given one."""


def test_register_adds_bench_to_the_main_app() -> None:
    main = typer.Typer()
    register(main)
    assert [group.name for group in main.registered_groups] == ["bench"]


def test_every_benchmark_is_registered() -> None:
    names = {
        command.name or (command.callback.__name__ if command.callback else "")
        for command in app.registered_commands
    }
    assert names == set(COMMANDS)


def _make_list(makefile: str, variable: str) -> set[str]:
    """The names a ``NAME := a b c`` line of the Makefile sets."""
    found = re.search(rf"^{variable} := (.*)$", makefile, re.MULTILINE)
    assert found, f"the Makefile sets no {variable}"
    return set(found.group(1).split())


def test_make_bench_runs_every_benchmark() -> None:
    makefile = (Path(__file__).resolve().parents[4] / "Makefile").read_text()
    target = makefile.split("\nbench:", 1)[1].split("\n\n", 1)[0]
    assert "for name in $(BENCHES); do" in target and "for name in $(JUSTLOG_BENCHES); do" in target
    assert "$(BIN)/chatlog bench report\n" in target + "\n"
    assert _make_list(makefile, "BENCHES") == set(COMMANDS) - OUTSIDE_BINARY - {"report"}
    assert _make_list(makefile, "JUSTLOG_BENCHES") == OUTSIDE_BINARY


@pytest.mark.parametrize("name", COMMANDS)
def test_every_benchmark_shows_its_help(name: str) -> None:
    result = CliRunner().invoke(app, [name, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage" in result.output


def test_a_benchmark_without_the_bench_extra_says_so_in_one_line(tmp_path: Path) -> None:
    out = tmp_path / "parse.json"
    argv = ["chatlog", "bench", "parse", "--lines", "1000", "--repeat", "1", "--out", str(out)]
    script = (
        "import sys; sys.modules['matplotlib'] = None; "  # as if the extra were not installed
        f"sys.argv = {argv!r}; from chatlog.cli.main import main; main()"
    )
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert run.returncode == 2, run.stderr
    assert run.stderr.strip().splitlines() == [
        "chatlog: error: plotting needs the bench extra (no matplotlib here): pip install -e '.[bench]'"
    ]
    assert not out.exists()  # it said so before measuring anything
