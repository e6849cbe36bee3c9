"""`chatlog logs` reads back what the writer stored, in time order (or reversed, limited, in a range), as
text, ndjson or the IRC lines; by login or id; a renamed user and channel are one history."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from chatlog.cli.log_reader import format_text
from core.errors import ChatlogError
from schemas.chat_event import ChatEvent
from sink.settings import SinkSettings
from tests.integration.serve.events import make_events, write
from tests.integration.serve.rename_story import in_read_order, of_user, rename_story

pytestmark = pytest.mark.integration


def _app() -> typer.Typer:
    import chatlog.cli.logs

    app = typer.Typer()
    app.callback()(lambda: None)  # a group, as on the main app: `logs` is a sub-command
    chatlog.cli.logs.register(app)
    return app


def _ids(output: str) -> list[str]:
    return [json.loads(line)["message_id"] for line in output.splitlines()]


def _logs(*args: str) -> str:
    result = CliRunner().invoke(_app(), ["logs", *args])
    assert result.exit_code == 0, (args, result.output, result.exception)
    return result.stdout


@pytest.fixture
def events(sink_settings: SinkSettings, monkeypatch: pytest.MonkeyPatch) -> list[ChatEvent]:
    written = make_events(900, channels=3, now_ms=1_795_273_445_000)
    write(sink_settings, written[1::2] + written[::2])
    monkeypatch.setenv("CHATLOG_CASSANDRA_KEYSPACE", sink_settings.cassandra_keyspace)
    return written


def test_logs_read_back_in_time_order(events: list[ChatEvent]) -> None:
    chan1 = in_read_order([e for e in events if e.channel == "chan1"])
    lines = _logs("#chan1").splitlines()
    assert lines == [format_text(e) for e in chan1]
    assert lines[0] == "[2026-11-21 15:03:31] #chan1 user1: message 1"
    assert any(line.endswith(" #chan1 CLEARCHAT: user5") for line in lines)

    nd = _logs("chan1", "--format", "ndjson")
    assert [ChatEvent(**json.loads(line)) for line in nd.splitlines()] == chan1  # every field
    assert _logs("chan1", "--format", "raw").splitlines() == [e.raw for e in chan1]
    assert _logs("--channel-id", "501", "--format", "ndjson") == nd

    mine = [e.message_id for e in chan1 if e.user_login == "user4"]  # what user4 sent, and deleted
    by_user = _ids(_logs("chan1", "--user", "user4", "--format", "ndjson"))
    assert by_user == mine and len(mine) > 10
    assert _ids(_logs("--channel-id", "501", "--user-id", "1004", "--format", "ndjson")) == [
        e.message_id for e in chan1 if e.user_id == "1004"
    ]
    timed_out = _ids(_logs("chan1", "--user", "user5", "--format", "ndjson"))
    assert [e.message_id for e in chan1 if e.kind == "CLEARCHAT"] == [
        m for m in timed_out if m in {e.message_id for e in chan1 if e.kind == "CLEARCHAT"}
    ]


def test_ranges_reverse_and_limit(events: list[ChatEvent]) -> None:
    chan1 = in_read_order([e for e in events if e.channel == "chan1"])
    lo, hi = chan1[100].sent_at, chan1[200].sent_at
    window = _logs("chan1", "--since", str(lo), "--until", str(hi), "--format", "ndjson")
    inside = [e.message_id for e in chan1 if lo <= e.sent_at < hi]
    assert _ids(window) == inside and len(inside) >= 100
    back = _logs("chan1", "--since", str(lo), "--until", str(hi), "--format", "ndjson", "--reverse")
    assert _ids(back) == inside[::-1]
    assert _ids(_logs("chan1", "--reverse", "--limit", "5", "--format", "ndjson")) == [
        e.message_id for e in chan1[::-1][:5]
    ]
    assert (
        _ids(_logs("chan1", "--limit", "3", "--format", "ndjson", "--user", "user2"))
        == [e.message_id for e in chan1 if e.user_login == "user2"][:3]
    )
    text = _logs("chan1", "--reverse", "--limit", "4").splitlines()
    assert text == [format_text(e) for e in chan1[::-1][:4]]


def test_nothing_stored_and_bad_input_are_one_line(events: list[ChatEvent]) -> None:
    runner = CliRunner()
    empty = runner.invoke(_app(), ["logs", "nobody-here"])
    assert empty.exit_code == 0 and empty.output.strip() == "nothing stored for #nobody-here"
    none = runner.invoke(_app(), ["logs", "chan1", "--limit", "0", "--since", "2026-01-01"])
    assert none.stdout == "" and "nothing stored for #chan1 in that time range" in none.output
    bad = {
        ("chan1", "--channel-id", "501"): "one of them",
        ("--user", "x"): "one of them",
        ("chan1", "--user", "a", "--user-id", "1"): "not both",
        ("--channel-id", "999"): "no logged channel has the id '999'",
        ("chan1", "--format", "xml"): "--format",
        ("chan1", "--limit", "-1"): "--limit",
        ("#", "--user", "a"): "CHANNEL is empty",
    }
    for args, words in bad.items():
        result = runner.invoke(_app(), ["logs", *args])
        assert isinstance(result.exception, ChatlogError), (args, result.output)
        message = str(result.exception)
        assert words in message and "\n" not in message, (args, message)


def test_a_renamed_user_in_a_renamed_channel_is_one_history(
    sink_settings: SinkSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    story = rename_story()
    write(sink_settings, story)
    monkeypatch.setenv("CHATLOG_CASSANDRA_KEYSPACE", sink_settings.cassandra_keyspace)
    expected = [e.message_id for e in in_read_order(of_user(story))]
    for args in (
        ("oldchan", "--user", "oldname"),
        ("newchan", "--user", "newname"),
        ("--channel-id", "500", "--user-id", "1001"),
        ("#OldChan", "--user-id", "1001"),
    ):
        assert _ids(_logs(*args, "--format", "ndjson")) == expected, args
    text = _logs("newchan", "--user", "oldname", "--limit", "2").splitlines()
    assert text[0].endswith("#oldchan oldname: u0") and text[1].endswith("#oldchan CLEARCHAT: oldname")
