"""The sink's command line is one definition: spark-submit's entry file and ``chatlog sink`` take the same
options, and a user mistake is one line."""

from __future__ import annotations

from typing import Any

import pytest
import typer

from chatlog.cli import sink as sink_cli
from sink.job import command


def _params(command: Any) -> list[tuple[Any, ...]]:
    """Every option of a (typer's click) command: what it is called, takes, defaults to and says."""
    return sorted(
        (
            p.name,
            tuple(p.opts),
            tuple(p.secondary_opts),
            repr(p.type_descriptor.annotation),
            p.default,
            p.is_flag,
            p.multiple,
            p.required,
            p.help,
        )
        for p in command.params
    )


def _chatlog_sink() -> Any:
    """The ``sink`` command as ``chatlog`` registers it (next to another, so the app is a group)."""
    app = typer.Typer()
    sink_cli.register(app)
    app.command("other")(lambda: None)
    return typer.main.get_command(app).commands["sink"]  # type: ignore[attr-defined]


def test_spark_submit_and_chatlog_sink_take_exactly_the_same_options() -> None:
    spark_submit = typer.main.get_command(command.app())
    chatlog_sink = _chatlog_sink()
    assert _params(spark_submit) == _params(chatlog_sink)
    names = {opt for p in spark_submit.params for opt in p.opts}
    assert {"--backfill", "--from", "--to", "--master", "--checkpoint", "--metrics-port"} <= names


def test_chatlog_sink_runs_the_jobs_own_function() -> None:
    assert _chatlog_sink().callback.__wrapped__ is command.command


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--backfill"], "chatlog sink: error: --backfill needs --from T\n"),
        (["--from", "2026-11-21T00:00:00Z"], "chatlog sink: error: --from needs --backfill\n"),
    ],
)
def test_a_user_mistake_is_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert command.main(argv) == 2
    assert capsys.readouterr().err == message


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["--backfill", "--from", "yesterday"], "--from"),
        (["--backfill", "--from", "2026-11-21T00:00:00Z", "--to", "later"], "--to"),
    ],
)
def test_a_backfill_time_that_is_not_one_is_one_line_naming_its_option_before_any_service(
    argv: list[str], option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert command.main(argv) == 2  # no Kafka or Cassandra here: it stops before the preflight
    err = capsys.readouterr().err
    assert err.startswith(f"chatlog sink: error: {option}: ") and "is not a time" in err
    assert err.count("\n") == 1


def test_an_unknown_option_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert command.main(["--no-such-flag"]) == 2
    err = capsys.readouterr().err
    assert "No such option" in err and "Traceback" not in err


def test_help_lists_the_options_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert command.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "sink/job/command.py" in out and "--metrics-port" in out


def test_the_spark_submit_entry_masks_secrets_as_chatlog_does(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CHATLOG_CASSANDRA_PASSWORD", "S3cretPW!")
    monkeypatch.setenv("CHATLOG_CASSANDRA_REPLICATION", "S3cretPW!")  # a wrong value that is the secret
    assert command.main([]) == 2
    err = capsys.readouterr().err
    assert "CHATLOG_CASSANDRA_REPLICATION" in err and "S3cretPW" not in err, err
