"""``chatlog import --dry-run`` and the import loop, without Kafka."""

from __future__ import annotations

import calendar
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from ingest import import_cli
from ingest.importer import MAX_REPORTED, ImportStats, bracket_timestamp, import_lines
from ingest.parse import MalformedLine, line_hash
from schemas.chat_event import ChatEvent, decode

PRIVMSG = (
    "@badge-info=;badges=;color=#FF0000;display-name=Ronni;emotes=;id=b34ccfc7-4977-403a-8a94-33c6bac34fb8;"
    "room-id=1337;tmi-sent-ts=1507246572675;user-id=1337 "
    ":ronni!ronni@ronni.tmi.twitch.tv PRIVMSG #Ronni :Kappa"
)
CLEARCHAT = "@room-id=1337;tmi-sent-ts=1642715695392 :tmi.twitch.tv CLEARCHAT #ronni"
INSPIRCD = "@time=2026-11-21T17:09:50.345Z;msgid=399~1~2 :capA7!capA7@127.0.0.1 PRIVMSG #capchan7 :hi 😀"
PLAIN = ":nick!u@h PRIVMSG #chan :hello there"

FILE_LINES: list[bytes] = [
    PRIVMSG.encode() + b"\r\n",  # 1 event (CRLF)
    b"PING :tmi.twitch.tv\n",  # 2 not chat
    b"\n",  # 3 blank
    b"[2026-11-21 15:04:05] " + PLAIN.encode() + b"\n",  # 4 event, time from the bracket
    b"hello world\n",  # 5 problem: not IRC
    b":tmi.twitch.tv 001 justinfan1 :Welcome\n",  # 6 not chat
    b":n!u@h PRIVMSG nobody :hi\n",  # 7 problem: not a channel
    b"[yesterday] PRIVMSG #a :b\n",  # 8 problem: bad bracket
    CLEARCHAT.encode() + b"\n",  # 9 event
    b"PRIVMSG #x :\xff\xfe broken\n",  # 10 problem: not UTF-8
    b":j!j@j JOIN #chan\n",  # 11 not chat
    INSPIRCD.encode(),  # 12 event, no final newline
]


class RecordingSink:
    def __init__(self) -> None:
        self.events: list[ChatEvent] = []
        self.dead: list[tuple[bytes, str, str]] = []
        self.finished = False

    def event(self, event: ChatEvent) -> None:
        self.events.append(event)

    def dead_letter(self, raw: bytes, reason: str, source: str) -> None:
        self.dead.append((raw, reason, source))

    def finish(self, stats: ImportStats) -> None:
        del stats
        self.finished = True


def utc_ms(*fields: int) -> int:
    return calendar.timegm((*fields, 0, 0, 0)) * 1000


def run_import(lines: list[bytes]) -> tuple[ImportStats, RecordingSink, list[str]]:
    sink, reports = RecordingSink(), list[str]()
    stats = import_lines(lines, source="chat.log", sink=sink, report=reports.append, clock=lambda: 4242)
    return stats, sink, reports


def test_every_line_is_accounted_for() -> None:
    stats, sink, reports = run_import(FILE_LINES)
    assert (stats.read, stats.events, stats.not_chat, stats.blank, stats.problems) == (12, 4, 3, 1, 4)
    assert stats.skipped == 8
    assert sink.finished
    assert [e.channel for e in sink.events] == ["ronni", "chan", "ronni", "capchan7"]
    assert all(e.ingester == "import" for e in sink.events)
    assert reports == [
        "chat.log:5: not an IRC line (expected '@tags', ':prefix' or a command first)",
        "chat.log:7: PRIVMSG target 'nobody' is not a #channel",
        "chat.log:8: line starts with '[' but not with a [YYYY-MM-DD HH:MM:SS] timestamp",
        "chat.log:10: not UTF-8 (byte 0xff at column 13)",
    ]
    assert sink.dead == [
        (b"hello world", reports[0].split(": ", 1)[1], "import:chat.log:5"),
        (b":n!u@h PRIVMSG nobody :hi", reports[1].split(": ", 1)[1], "import:chat.log:7"),
        (b"[yesterday] PRIVMSG #a :b", reports[2].split(": ", 1)[1], "import:chat.log:8"),
        (b"PRIVMSG #x :\xff\xfe broken", reports[3].split(": ", 1)[1], "import:chat.log:10"),
    ]


def test_times_come_from_the_line_then_the_bracket_then_the_clock() -> None:
    _, sink, _ = run_import([*FILE_LINES, b":n!u@h PRIVMSG #c :no time at all\n"])
    by_raw = {e.raw: e for e in sink.events}
    twitch = by_raw[PRIVMSG]
    assert (twitch.sent_at, twitch.received_at) == (1507246572675, 1507246572675)
    bracket = by_raw[PLAIN]  # raw and id are those of the IRC line without the logger's timestamp
    assert bracket.sent_at == bracket.received_at == utc_ms(2026, 11, 21, 15, 4, 5)
    assert bracket.message_id == line_hash(PLAIN)
    ircv3 = by_raw[INSPIRCD]
    assert ircv3.sent_at == ircv3.received_at == utc_ms(2026, 11, 21, 17, 9, 50) + 345
    clock = by_raw[":n!u@h PRIVMSG #c :no time at all"]
    assert clock.sent_at == clock.received_at == 4242


@pytest.mark.parametrize(
    ("line", "stamp", "rest"),
    [
        ("[2026-11-21 15:04:05] PING :x", utc_ms(2026, 11, 21, 15, 4, 5), "PING :x"),
        ("[2026-11-21T15:04:05.250Z]   PING :x", utc_ms(2026, 11, 21, 15, 4, 5) + 250, "PING :x"),
        ("[2026-11-21 16:04:05+01:00] PING :x", utc_ms(2026, 11, 21, 15, 4, 5), "PING :x"),
        ("[2026-11-21 10:04:05-0500] PING :x", utc_ms(2026, 11, 21, 15, 4, 5), "PING :x"),
        ("PING :[2026-11-21 15:04:05]", None, "PING :[2026-11-21 15:04:05]"),
    ],
)
def test_bracket_timestamp(line: str, stamp: int | None, rest: str) -> None:
    assert bracket_timestamp(line) == (stamp, rest)


@pytest.mark.parametrize(
    "line", ["[15:04:05] PING", "[2026-11-21 15:04:05]PING", "[] x", "[2026-13-01 00:00:00] x"]
)
def test_ambiguous_brackets_are_malformed(line: str) -> None:
    with pytest.raises(MalformedLine):
        bracket_timestamp(line)


def test_only_the_first_problems_are_printed_then_a_count() -> None:
    stats, sink, reports = run_import([b"not irc at all\n"] * (MAX_REPORTED + 7))
    assert stats.problems == MAX_REPORTED + 7
    assert len(sink.dead) == MAX_REPORTED + 7  # every one is dead-lettered, printed or not
    assert len(reports) == MAX_REPORTED + 1
    assert reports[-1] == "chat.log: 7 more problems not shown"


# -- through the command line ------------------------------------------------------------------


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> typer.Typer:
    # Kafka is unreachable on purpose: a dry run must not connect.
    monkeypatch.setenv("CHATLOG_KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:1")
    app, bench = typer.Typer(), typer.Typer()
    import_cli.register(app, bench)
    app.add_typer(bench, name="bench")
    return app


def test_dry_run_prints_ndjson_and_a_summary(cli: typer.Typer, tmp_path: Path) -> None:
    path = tmp_path / "chat.log"
    path.write_bytes(b"".join(FILE_LINES))
    result = CliRunner().invoke(cli, ["import", str(path), "--dry-run"])
    assert result.exit_code == 0, result.output
    events = [decode(line) for line in result.stdout_bytes.splitlines()]
    assert [e.message_id for e in events] == [
        "b34ccfc7-4977-403a-8a94-33c6bac34fb8",
        line_hash(PLAIN),
        line_hash(CLEARCHAT),
        "399~1~2",
    ]
    assert events[3].text == "hi 😀"
    err = result.stderr.splitlines()
    assert err[0] == f"{path}:5: not an IRC line (expected '@tags', ':prefix' or a command first)"
    assert err[-1] == (
        f"import {path}: read 12, events 4, skipped 8 (3 not chat, 4 problems, 1 blank), "
        "produced 0, dead-lettered 0, failed 0"
    )


def test_dry_run_reads_stdin(cli: typer.Typer) -> None:
    result = CliRunner().invoke(cli, ["import", "-", "--dry-run"], input=PRIVMSG + "\n")
    assert result.exit_code == 0, result.output
    assert decode(result.stdout_bytes.strip()).channel == "ronni"


def test_nothing_to_read_exits_1_with_one_line(cli: typer.Typer, tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    for target in (empty, tmp_path / "missing.log"):
        result = CliRunner().invoke(cli, ["import", str(target), "--dry-run"])
        assert result.exit_code == 1
        assert result.stdout == ""
        assert len(result.stderr.strip().splitlines()) == 1
        assert result.stderr.startswith("chatlog: error: ")
