"""`chatlog logs` reads back what the writer stored, in time order, as text or ndjson."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from schemas.chat_event import encode
from sink.executor.cassandra import close_sessions
from sink.executor.partition import write_partition
from sink.settings import SinkSettings
from tests.integration.serve.conftest import make_events

pytestmark = pytest.mark.integration


def _app() -> typer.Typer:
    import chatlog.cli.logs

    app = typer.Typer()
    app.callback()(lambda: None)  # a group, as on the main app: `import` is a sub-command
    chatlog.cli.logs.register(app)
    return app


def test_logs_read_back_in_time_order(sink_settings: SinkSettings, monkeypatch: pytest.MonkeyPatch) -> None:
    events = make_events(900, channels=3, now_ms=1_795_273_445_000)
    shuffled = events[1::2] + events[::2]
    stats = write_partition(((encode(e), None, None) for e in shuffled), sink_settings)
    close_sessions()
    assert stats.events == len(events)
    monkeypatch.setenv("CHATLOG_CASSANDRA_KEYSPACE", sink_settings.cassandra_keyspace)
    runner = CliRunner()
    app = _app()

    chan1 = sorted((e for e in events if e.channel == "chan1"), key=lambda e: (e.sent_at, e.message_id))
    text = runner.invoke(app, ["logs", "#chan1"])
    assert text.exit_code == 0, text.output
    lines = text.stdout.splitlines()
    assert len(lines) == len(chan1)
    assert lines[0].startswith("[2026-11-21 ") and " #chan1 " in lines[0]
    first_msg = next(e for e in chan1 if e.kind == "PRIVMSG" and e.user_login)
    assert f"#chan1 {first_msg.user_login}: {first_msg.text}" in text.stdout

    nd = runner.invoke(app, ["logs", "chan1", "--format", "ndjson"])
    assert [json.loads(ln)["message_id"] for ln in nd.stdout.splitlines()] == [e.message_id for e in chan1]

    mine = [e for e in chan1 if e.user_login == "user4"]
    by_user = runner.invoke(app, ["logs", "chan1", "--user", "user4", "--format", "ndjson"])
    assert [json.loads(ln)["message_id"] for ln in by_user.stdout.splitlines()] == [
        e.message_id for e in mine
    ]

    lo, hi = chan1[100].sent_at, chan1[200].sent_at
    window = runner.invoke(
        app, ["logs", "chan1", "--since", str(lo), "--until", str(hi), "--format", "ndjson"]
    )
    got = [json.loads(ln)["sent_at"] for ln in window.stdout.splitlines()]
    assert got == [e.sent_at for e in chan1 if lo <= e.sent_at < hi]

    empty = runner.invoke(app, ["logs", "nobody-here"])
    assert empty.exit_code == 0 and "nothing stored for #nobody-here" in empty.output
