"""``chatlog simulate``: a user's mistake or an IRC server that is not there is one line, exit 2."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from lab.cli import simulate as simulate_cli
from tests.unit.cli_runs import CHATLOG, clean_environ


@pytest.fixture
def cli() -> typer.Typer:
    app = typer.Typer()
    app.callback()(lambda: None)
    simulate_cli.register(app)
    return app


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--file", "/nonexistent/chans.txt"], "cannot read --file /nonexistent/chans.txt: No such file"),
        (["x", "--rate", "nan"], "--rate must be a number > 0, not nan"),
        (["x", "--rate", "0"], "--rate must be a number > 0, not 0.0"),
        (["x", "--duration", "-1"], "--duration must be a number >= 0, not -1.0"),
        (["x", "--connections", "0"], "--connections must be at least 1, not 0"),
        (["x", "--out", "/"], "cannot append to --out /: Is a directory"),
        ([], "simulate needs channels"),
    ],
)
def test_a_mistake_is_one_line_before_anything_connects(
    cli: typer.Typer, args: list[str], message: str
) -> None:
    result = CliRunner().invoke(cli, ["simulate", *args])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"chatlog: error: {message}") and result.stderr.count("\n") == 1


def test_an_irc_server_that_is_not_there_is_one_line_naming_the_settings(
    cli: typer.Typer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CHATLOG_IRC_PORT", "1")  # nothing listens there
    result = CliRunner().invoke(cli, ["simulate", "x", "--duration", "1", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert result.stderr.startswith(
        "chatlog: error: IRC server at 127.0.0.1:1 (CHATLOG_IRC_HOST, CHATLOG_IRC_PORT)"
    )
    assert result.stderr.count("\n") == 1


def test_a_channel_name_with_a_space_is_refused_before_joining_for_a_minute(cli: typer.Typer) -> None:
    result = CliRunner().invoke(cli, ["simulate", "bad chan"])
    assert result.exit_code == 2
    assert "'bad chan' is not a channel name" in result.stderr


def test_a_stop_while_connecting_ends_at_once_and_quietly() -> None:
    """An IRC server that accepts and never welcomes: SIGTERM must not wait for start()'s 60 s."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        env = {**clean_environ(), "CHATLOG_IRC_PORT": str(silent.getsockname()[1])}
        cmd = [CHATLOG, "simulate", "chan", "--duration", "30"]
        with subprocess.Popen(
            cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        ) as proc:
            silent.settimeout(60)
            connection, _ = silent.accept()  # the simulator is connecting: its signal handlers are set
            with connection:
                proc.send_signal(signal.SIGTERM)
                out, err = proc.communicate(timeout=15)
    assert proc.returncode == 0, err
    assert json.loads(out.splitlines()[-1])["event"] == "done"
    assert "Traceback" not in err and "never retrieved" not in err
