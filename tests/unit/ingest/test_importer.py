"""``chatlog import --dry-run`` and the import loop, without Kafka."""

from __future__ import annotations

import calendar
import gzip
import io
import os
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from chatlog.cli import import_ as import_cli
from core.irc_parse import MalformedLine, line_hash
from ingest.importer import (
    MAX_IMPORT_LINE_BYTES,
    MAX_REPORTED,
    ImportStats,
    NdjsonSink,
    OutputClosed,
    bounded_lines,
    bracket_timestamp,
    gzip_damage,
    import_lines,
    timed_line_id,
)
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


NOW = 1_795_305_600_000  # 2026-11-22: the import's clock


def run_import(lines: list[bytes]) -> tuple[ImportStats, RecordingSink, list[str]]:
    sink, reports = RecordingSink(), list[str]()
    stats = import_lines(lines, source="chat.log", sink=sink, report=reports.append, clock=lambda: NOW)
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
    assert bracket.message_id == timed_line_id(PLAIN, bracket.sent_at)  # no id, no time of its own
    ircv3 = by_raw[INSPIRCD]
    assert ircv3.sent_at == ircv3.received_at == utc_ms(2026, 11, 21, 17, 9, 50) + 345
    clock = by_raw[":n!u@h PRIVMSG #c :no time at all"]
    assert clock.sent_at == clock.received_at == NOW


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
    "line",
    [
        "[15:04:05] PING",
        "[2026-11-21 15:04:05]PING",
        "[] x",
        "[2026-13-01 00:00:00] x",
        "[1969-12-31 23:59:59] PING :x",  # outside the contract's times
        "[9999-12-31 23:59:59-01:00] PING :x",
    ],
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
    app = typer.Typer()
    app.callback()(lambda: None)  # a group, as on the main app: `import` is a sub-command
    import_cli.register(app)
    return app


def test_dry_run_prints_ndjson_and_a_summary(cli: typer.Typer, tmp_path: Path) -> None:
    path = tmp_path / "chat.log"
    path.write_bytes(b"".join(FILE_LINES))
    result = CliRunner().invoke(cli, ["import", str(path), "--dry-run"])
    assert result.exit_code == 0, result.output
    events = [decode(line) for line in result.stdout_bytes.splitlines()]
    assert [e.message_id for e in events] == [
        "b34ccfc7-4977-403a-8a94-33c6bac34fb8",
        timed_line_id(PLAIN, utc_ms(2026, 11, 21, 15, 4, 5)),
        line_hash(CLEARCHAT),  # a time of its own (tmi-sent-ts): the line's hash, as a live ingester's
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


# -- a byte order mark, long lines, all-bad files -------------------------------------------------------


def test_a_utf8_byte_order_mark_is_not_part_of_line_1() -> None:
    stats, sink, reports = run_import([b"\xef\xbb\xbf" + PRIVMSG.encode() + b"\r\n", PLAIN.encode() + b"\n"])
    assert (stats.events, stats.problems, reports) == (2, 0, [])
    assert sink.events[0].raw == PRIVMSG
    _, sink, _ = run_import([PLAIN.encode() + b"\n", b"\xef\xbb\xbf" + PLAIN.encode() + b"\n"])
    assert len(sink.events) == 1  # only at the start of the file


def test_a_line_past_the_bound_is_a_problem_whose_dead_letter_holds_its_start() -> None:
    long_line = b":n!u@h PRIVMSG #c :" + b"x" * (2 * MAX_IMPORT_LINE_BYTES) + b"\n"
    contract = b":n!u@h PRIVMSG #c :" + b"y" * 16_384 + b"\n"  # read whole, but too long for the contract
    stats, sink, reports = run_import([long_line, contract, PLAIN.encode()])
    assert (stats.events, stats.problems) == (1, 2)
    assert (
        reports[0]
        == f"chat.log:1: line longer than {MAX_IMPORT_LINE_BYTES} bytes (the dead letter holds the first)"
    )
    assert reports[1].startswith("chat.log:2: line longer than 16384 characters")
    assert sink.dead[0][0] == long_line[:MAX_IMPORT_LINE_BYTES]


def test_lines_are_read_with_a_bound() -> None:
    limit = 100
    data = b"a" * 100 + b"\r\n" + b"b" * 101 + b"\n" + b"c" * 1000 + b"\nshort\nlast"
    assert list(bounded_lines(io.BytesIO(data), limit)) == [
        b"a" * 100 + b"\r\n",  # exactly the bound, CR LF aside: whole
        b"b" * 101,  # one past it: the first limit + 1 bytes, no terminator (import_lines finds it too long)
        b"c" * 101,  # far past it: the same, the rest skipped
        b"short\n",
        b"last",
    ]


@pytest.mark.parametrize("chunk", [1, 2, 5, 64, 1 << 16])
def test_a_bare_cr_ends_a_line_wherever_the_reads_split(chunk: int) -> None:
    data = b"one\rtwo\r\nthree\nfour\r\rsix" + b"x" * 20 + b"\r\nseven\r"
    lines = list(bounded_lines(io.BytesIO(data), limit=10, chunk=chunk))
    assert lines == [b"one\r", b"two\r\n", b"three\n", b"four\r", b"\r", b"six" + b"x" * 8, b"seven\r"]


def test_a_file_with_old_mac_line_ends_imports_every_line() -> None:
    data = "\r".join(f"@id=m{i};tmi-sent-ts=1700000000000 :u!u@h PRIVMSG #c :line {i}" for i in range(3))
    stats, sink, _ = run_import(list(bounded_lines(io.BytesIO(data.encode()))))
    assert (stats.read, stats.events, stats.problems) == (3, 3, 0)
    assert [e.text for e in sink.events] == ["line 0", "line 1", "line 2"]


class _Endless(io.RawIOBase):
    """``size`` bytes of one line, made up as they are read (never held), then a short line."""

    def __init__(self, size: int) -> None:
        self.left = size
        self.tail = b"\n" + PLAIN.encode() + b"\n"

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(buffer)
        if self.left:
            n = min(len(view), self.left)
            view[:n] = b"x" * n
            self.left -= n
            return n
        n = min(len(view), len(self.tail))
        view[:n], self.tail = self.tail[:n], self.tail[n:]
        return n


def test_a_gigabyte_line_is_imported_in_bounded_memory() -> None:
    stream = io.BufferedReader(_Endless(1 << 30), buffer_size=1 << 16)
    tracemalloc.start()
    try:
        stats, sink, _ = run_import(list(bounded_lines(stream)))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (stats.read, stats.events, stats.problems) == (2, 1, 1)
    assert len(sink.dead[0][0]) == MAX_IMPORT_LINE_BYTES
    assert peak < 8 * MAX_IMPORT_LINE_BYTES, peak


def test_a_file_of_only_bad_lines_exits_1_and_a_partly_bad_one_0(cli: typer.Typer, tmp_path: Path) -> None:
    bad = tmp_path / "bad.log"
    bad.write_bytes(b"not irc\n\n:n!u@h PRIVMSG nobody :hi\n")
    result = CliRunner().invoke(cli, ["import", str(bad), "--dry-run"])
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert result.stderr.splitlines()[-1] == (
        f"chatlog: error: nothing imported from {bad}: every line with content was a problem "
        "(2; dry run: none sent; the first are listed above)"
    )
    partly = tmp_path / "partly.log"
    partly.write_bytes(b"not irc\n" + PLAIN.encode() + b"\n")
    result = CliRunner().invoke(cli, ["import", str(partly), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "events 1, skipped 1 (0 not chat, 1 problems, 0 blank)" in result.stderr.splitlines()[-1]
    quiet = tmp_path / "quiet.log"
    quiet.write_bytes(b"PING :x\n:j!j@j JOIN #c\n")  # no chat, but nothing wrong either
    assert CliRunner().invoke(cli, ["import", str(quiet), "--dry-run"]).exit_code == 0


def test_a_file_with_a_byte_order_mark_imports_through_the_command_line(
    cli: typer.Typer, tmp_path: Path
) -> None:
    path = tmp_path / "bom.log"
    path.write_bytes(b"\xef\xbb\xbf" + PRIVMSG.encode() + b"\r\n")
    result = CliRunner().invoke(cli, ["import", str(path), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert decode(result.stdout_bytes.strip()).raw == PRIVMSG


def test_the_first_problems_of_the_whole_import_are_printed_not_of_each_file(
    cli: typer.Typer, tmp_path: Path
) -> None:
    for name in ("a.log", "b.log"):
        (tmp_path / name).write_bytes(b"not irc\n" * MAX_REPORTED + PLAIN.encode() + b"\n")
    result = CliRunner().invoke(cli, ["import", str(tmp_path), "--dry-run"])
    assert result.exit_code == 0, result.output
    err = result.stderr.splitlines()
    assert err[0] == f"{tmp_path}: 2 files"
    assert err[1 : MAX_REPORTED + 1] == [
        f"{tmp_path / 'a.log'}:{n}: not an IRC line (expected '@tags', ':prefix' or a command first)"
        for n in range(1, MAX_REPORTED + 1)
    ]
    assert err[MAX_REPORTED + 1 :] == [
        f"{tmp_path}: {MAX_REPORTED} more problems not shown",
        f"import {tmp_path}: files 2 (0 unreadable or corrupt), read {2 * MAX_REPORTED + 2}, events 2, "
        f"skipped {2 * MAX_REPORTED} (0 not chat, {2 * MAX_REPORTED} problems, 0 blank), produced 0, "
        "dead-lettered 0, failed 0",
    ]


def test_a_gz_with_trailing_garbage_imports_its_lines_as_zcat_does(cli: typer.Typer, tmp_path: Path) -> None:
    path = tmp_path / "day.txt.gz"
    path.write_bytes(gzip.compress((PRIVMSG + "\n").encode()) + b"junk")
    assert gzip_damage(str(path)) is None  # the member before the junk was read and checked whole
    result = CliRunner().invoke(cli, ["import", str(path), "--dry-run"])
    assert [decode(line).raw for line in result.stdout_bytes.splitlines()] == [PRIVMSG]
    assert result.stderr.splitlines()[0] == (
        f"{path}: skipped after line 1 (lines 1-1 imported): data after the gzip stream is not gzip "
        "(zcat ignores it too)"
    )


def test_a_file_time_before_2001_or_in_the_future_is_not_a_time_base(
    cli: typer.Typer, tmp_path: Path
) -> None:
    path = tmp_path / "old.log"
    path.write_bytes(b":u!u@h PRIVMSG #c :old\n")
    for stamp_s in (-315_619_200, 4_102_444_800):  # 1960, 2100
        os.utime(path, (stamp_s, stamp_s))
        before = time.time() * 1000
        result = CliRunner().invoke(cli, ["import", str(path), "--dry-run"])
        events = [decode(line) for line in result.stdout_bytes.splitlines()]  # decode: within the contract
        assert len(events) == 1 and before <= events[0].sent_at <= time.time() * 1000, stamp_s  # the import's


def test_a_closed_dry_run_output_is_not_a_bad_input() -> None:
    class Closed(io.RawIOBase):
        def writable(self) -> bool:
            return True

        def write(self, data: Any) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    sink, reports = NdjsonSink(io.BufferedWriter(Closed(), buffer_size=1)), list[str]()
    with pytest.raises(OutputClosed):
        import_lines(
            [PRIVMSG.encode()] * 3, source="chat.log", sink=sink, report=reports.append, clock=lambda: NOW
        )
    assert reports == []  # not "chat.log: skipped after line 1 ...: Broken pipe"
