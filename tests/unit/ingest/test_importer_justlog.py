"""``chatlog import --dry-run`` of a justlog tree: exactly its channel lines, once, in order; no Kafka."""

from __future__ import annotations

import calendar
import gzip
import os
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from chatlog.cli import import_ as import_cli
from core.irc_parse import parse_line
from core.settings import KafkaSettings
from ingest.importer import PROGRESS_EVERY, import_paths, timed_line_id
from schemas.chat_event import ChatEvent, decode
from tests.peer_lines import PEER_LINES, peer_lines


def twitch(n: int, ts: int, kind: str = "PRIVMSG", text: str = "hi") -> str:
    return (
        f"@badge-info=;badges=;color=#FF0000;display-name=U{n};emotes=;id=0000000{n}-4977-403a-8a94-33c6bac34fb8;"
        f"room-id=1337;tmi-sent-ts={ts};user-id={n} :u{n}!u{n}@u{n}.tmi.twitch.tv {kind} #ronni :{text}"
    )


DAY9 = [twitch(1, 1704790000000), twitch(2, 1704790001000, text="\x01ACTION waves\x01")]
PLAIN = ":nick!u@h PRIVMSG #ronni :a line without tags"  # plain IRC: the id is the line's hash
CLEARCHAT = "@room-id=1337;target-user-id=2;tmi-sent-ts=1704790002000 :tmi.twitch.tv CLEARCHAT #ronni :u2"
DAY10 = [twitch(3, 1704880000000), PLAIN, twitch(4, 1704880001000, kind="USERNOTICE", text="resub")]
CUT = [twitch(5, 1706745600000), twitch(6, 1706745601000)]  # a .gz whose trailer is missing
BOTH = [twitch(7, 1706832000000)]  # channel.txt beside an (older) channel.txt.gz
OTHER_CHANNEL = [
    twitch(8, 1704067199000).replace("#ronni", "#other").replace("room-id=1337", "room-id=22484632")
]


def write(path: Path, lines: list[str], *, gz: bool = False, cut: int = 0) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(f"{line}\n" for line in lines).encode()
    if gz:
        data = gzip.compress(data)
    path.write_bytes(data[: len(data) - cut])


def justlog_tree(root: Path) -> list[str]:
    """A small justlog tree; returns the lines expected out of it, in reading order."""
    ch = root / "1337" / "2024"
    write(ch / "1" / "9" / "channel.txt", [*DAY9, CLEARCHAT])
    write(ch / "1" / "10" / "channel.txt.gz", DAY10, gz=True)
    write(ch / "1" / "1.txt", [DAY9[0]])  # user files: the same lines, never read
    write(ch / "1" / "2.txt.gz", [DAY9[1], CLEARCHAT], gz=True)
    (ch / "2" / "1").mkdir(parents=True)
    (ch / "2" / "1" / "channel.txt.gz").write_bytes(b"\x1f\x8b not really gzip")
    write(ch / "2" / "2" / "channel.txt.gz", CUT, gz=True, cut=8)  # no CRC/size trailer
    write(ch / "2" / "3" / "channel.txt", BOTH)
    write(ch / "2" / "3" / "channel.txt.gz", BOTH[:0], gz=True)
    write(root / "22484632" / "2023" / "12" / "31" / "channel.txt.gz", OTHER_CHANNEL, gz=True)
    return [*DAY9, CLEARCHAT, *DAY10, *CUT, *BOTH, *OTHER_CHANNEL]


def message_id(line: str) -> str:
    event = parse_line(line, received_at=0)
    assert event is not None
    return event.message_id


def import_id(line: str, event: ChatEvent) -> str:
    """The id the import gives ``line`` (imported as ``event``): the line's own (an id tag, else the hash
    of a line with a time of its own), else the hash of the line and the time the import gave it."""
    parsed = parse_line(line, received_at=event.sent_at + 1)  # a time of its own is not this one
    assert parsed is not None
    if parsed.sent_at == event.sent_at or parsed.tags.get("id") or parsed.tags.get("msgid"):
        return parsed.message_id
    return timed_line_id(line, event.sent_at)


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> typer.Typer:
    monkeypatch.setenv("CHATLOG_KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:1")  # a dry run must not connect
    app = typer.Typer()
    app.callback()(lambda: None)
    import_cli.register(app)
    return app


def dry_run(cli: typer.Typer, *args: str) -> tuple[int, list[ChatEvent], list[str]]:
    result = CliRunner().invoke(cli, ["import", *args, "--dry-run"])
    events = [decode(line) for line in result.stdout_bytes.splitlines()]
    return result.exit_code, events, result.stderr.splitlines()


def test_a_justlog_tree_imports_its_channel_lines_once_in_order(cli: typer.Typer, tmp_path: Path) -> None:
    expected = justlog_tree(tmp_path)

    code, events, err = dry_run(cli, str(tmp_path))

    assert code == 0, err
    assert [e.raw for e in events] == expected
    assert [e.message_id for e in events] == [
        import_id(line, e) for line, e in zip(expected, events, strict=True)
    ]
    assert len({e.message_id for e in events}) == len(expected)
    plain = events[expected.index(PLAIN)]  # line 2 of its day: the day's start + 1 ms
    assert plain.sent_at == 1704844800001
    assert (plain.message_id, plain.channel, plain.channel_id, plain.tags) == (
        timed_line_id(PLAIN, 1704844800001),
        "ronni",
        None,
        {},
    )
    assert events[1].is_action and events[1].text == "waves"
    assert [e.kind for e in events[:6]] == [
        "PRIVMSG",
        "PRIVMSG",
        "CLEARCHAT",
        "PRIVMSG",
        "PRIVMSG",
        "USERNOTICE",
    ]
    ch = tmp_path / "1337" / "2024"
    assert err == [
        f"{tmp_path}: justlog tree, 6 channel-day files in 2 channels; not read: 2 user files (their lines "
        "are in the channel files), 1 channel.txt.gz beside a channel.txt (read from the .txt)",
        f"{ch}/2/1/channel.txt.gz: skipped: corrupt gzip: Unknown compression method",
        f"{ch}/2/2/channel.txt.gz: skipped after line 2 (lines 1-2 imported): "
        "corrupt gzip: cut short (no end-of-stream marker)",
        f"import {tmp_path}: files 6 (2 unreadable or corrupt), read 10, events 10, skipped 0 "
        "(0 not chat, 0 problems, 0 blank), produced 0, dead-lettered 0, failed 0",
    ]


def test_importing_twice_gives_the_same_ids(cli: typer.Typer, tmp_path: Path) -> None:
    justlog_tree(tmp_path)
    first = [e.message_id for e in dry_run(cli, str(tmp_path))[1]]
    second = [e.message_id for e in dry_run(cli, str(tmp_path))[1]]
    assert first == second  # the id of the line without tags does not depend on the import's clock
    assert len(set(first)) == len(first) == 10


def test_importing_twice_gives_the_same_times_so_the_rows_are_the_same(
    cli: typer.Typer, tmp_path: Path
) -> None:
    """The stored rows are keyed by (sent_at, message id): a line without a time of its own gets its day's
    00:00 UTC plus its line number (ms), not the import's clock, so a second import writes the same rows."""
    justlog_tree(tmp_path)
    first = dry_run(cli, str(tmp_path))[1]
    second = dry_run(cli, str(tmp_path))[1]
    assert [(e.message_id, e.sent_at, e.received_at) for e in first] == [
        (e.message_id, e.sent_at, e.received_at) for e in second
    ]
    plain = next(e for e in first if e.raw == PLAIN)  # line 2 of 2024/1/10/channel.txt.gz
    assert plain.sent_at == plain.received_at == calendar.timegm((2024, 1, 10, 0, 0, 0)) * 1000 + 1
    timed = next(e for e in first if e.raw == DAY10[0])
    assert timed.sent_at == 1704880000000  # a line's own time stays its time


def test_a_file_outside_a_justlog_tree_times_its_lines_by_its_modification_time(
    cli: typer.Typer, tmp_path: Path
) -> None:
    path = tmp_path / "old.log"
    write(path, [PLAIN, PLAIN.replace("without", "with no"), DAY9[0]])
    os.utime(path, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
    events = dry_run(cli, str(path))[1]
    assert [e.sent_at for e in events] == [1_600_000_000_000, 1_600_000_000_001, 1704790000000]


def test_no_justlog_reads_the_user_files_too_and_their_ids_repeat(cli: typer.Typer, tmp_path: Path) -> None:
    expected = justlog_tree(tmp_path)
    code, events, err = dry_run(cli, str(tmp_path), "--no-justlog")
    assert code == 0, err
    ids = [e.message_id for e in events]
    assert len(ids) == len(expected) + 3  # the user files' three lines again (and the empty .gz)
    plain = next(e for e in events if e.raw == PLAIN)
    expected_ids = {message_id(line) for line in expected if line != PLAIN} | {plain.message_id}
    assert set(ids) == expected_ids  # nothing new: stored once either way
    assert err[0] == f"{tmp_path}: 9 files"


def test_justlog_on_a_directory_without_channel_files_exits_1(cli: typer.Typer, tmp_path: Path) -> None:
    write(tmp_path / "export.log", [PLAIN])
    code, events, err = dry_run(cli, str(tmp_path), "--justlog")
    assert (code, events) == (1, [])
    assert err == [
        f"chatlog: error: {tmp_path} is not a justlog tree: "
        "no {channel_id}/{year}/{month}/{day}/channel.txt[.gz] under it"
    ]
    code, events, err = dry_run(cli, str(tmp_path))  # not detected as one: read as a directory of files
    assert (code, [e.raw for e in events]) == (0, [PLAIN])


def test_several_paths_and_gz_files_and_a_missing_one(cli: typer.Typer, tmp_path: Path) -> None:
    write(tmp_path / "a.log.gz", DAY9, gz=True)
    write(tmp_path / "b.log", [PLAIN])
    code, events, err = dry_run(cli, str(tmp_path / "b.log"), str(tmp_path / "a.log.gz"))
    assert code == 0, err
    assert [e.raw for e in events] == [PLAIN, *DAY9]
    assert err == [
        f"import {tmp_path / 'b.log'} and 1 more: files 2 (0 unreadable or corrupt), read 3, events 3, "
        "skipped 0 (0 not chat, 0 problems, 0 blank), produced 0, dead-lettered 0, failed 0"
    ]
    code, events, err = dry_run(cli, str(tmp_path / "b.log"), str(tmp_path / "nope"))
    assert (code, events) == (1, [])  # nothing read: a typo is found before the import starts
    assert err == [f"chatlog: error: cannot read {tmp_path / 'nope'}: No such file or directory"]


def test_a_corrupt_gz_alone_exits_1_in_two_lines(cli: typer.Typer, tmp_path: Path) -> None:
    bad = tmp_path / "day.txt.gz"
    bad.write_bytes(b"plain text, not gzip\n")
    code, events, err = dry_run(cli, str(bad))
    assert (code, events) == (1, [])
    assert err == [
        f"{bad}: skipped: corrupt gzip: Not a gzipped file (b'pl')",
        f"chatlog: error: nothing imported from {bad}: nothing could be read (listed above)",
    ]


def test_a_gz_whose_crc_fails_imports_none_of_its_garbled_lines(cli: typer.Typer, tmp_path: Path) -> None:
    good = tmp_path / "a.txt"
    write(good, [twitch(1, 1_700_000_000_000)])
    text = "".join(f"{twitch(n, 1_700_000_000_000 + n)}\n" for n in range(2, 400))
    data = bytearray(gzip.compress(text.encode()))
    data[len(data) // 2] ^= 0x55  # deflate still decodes it, to other bytes: only the CRC at the end tells
    damaged = tmp_path / "b.txt.gz"
    damaged.write_bytes(bytes(data))
    with pytest.raises(gzip.BadGzipFile, match="CRC check failed"):
        gzip.decompress(bytes(data))
    code, events, err = dry_run(cli, str(good), str(damaged))
    assert code == 0
    assert [e.message_id for e in events] == [message_id(twitch(1, 1_700_000_000_000))]
    assert err[0].startswith(f"{damaged}: skipped: corrupt gzip: CRC check failed ")
    assert "files 2 (1 unreadable or corrupt), read 1, events 1," in err[-1]


def test_an_empty_directory_exits_1(cli: typer.Typer, tmp_path: Path) -> None:
    code, _, err = dry_run(cli, str(tmp_path))
    assert code == 1
    assert err[-1] == f"chatlog: error: nothing to import: no files in {tmp_path}"


def test_the_progress_bar_is_drawn_on_request_and_the_summary_stays_last(
    cli: typer.Typer, tmp_path: Path
) -> None:
    justlog_tree(tmp_path)
    code, events, err = dry_run(cli, str(tmp_path), "--progress")
    assert code == 0
    assert len(events) == 10
    assert any("6/6" in line and "files" in line and "lines/s" in line for line in err), err
    assert err[-1].startswith(f"import {tmp_path}: files 6 (2 unreadable or corrupt), read 10, events 10,")


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def start(self, files: int) -> None:
        self.calls.append(("start", files))

    def file(self, path: str) -> None:
        self.calls.append(("file", Path(path).name))

    def lines(self, count: int) -> None:
        self.calls.append(("lines", count))

    def file_done(self) -> None:
        self.calls.append(("done", None))


def test_progress_is_told_files_and_lines(tmp_path: Path) -> None:
    write(tmp_path / "a.log", [PLAIN] * (PROGRESS_EVERY + 5))
    write(tmp_path / "b.log.gz", DAY9, gz=True)
    (tmp_path / "c.log.gz").write_bytes(b"junk")
    recorder = Recorder()
    with (tmp_path / "out.ndjson").open("wb") as out:
        stats = import_paths(
            [str(tmp_path / n) for n in ("a.log", "b.log.gz", "c.log.gz")],
            dry_run=True,
            settings=KafkaSettings(),
            out=out,
            report=lambda _: None,
            progress=recorder,
        )
    assert recorder.calls == [
        ("start", 3),
        ("file", "a.log"),
        ("lines", PROGRESS_EVERY),
        ("lines", 5),
        ("done", None),
        ("file", "b.log.gz"),
        ("lines", 2),
        ("done", None),
        ("file", "c.log.gz"),  # not gzip: refused before a line is read
        ("done", None),
    ]
    assert (stats.files, stats.bad_files, stats.read) == (3, 1, PROGRESS_EVERY + 7)


def peer_chat_lines() -> list[str]:
    return [str(item["raw"]) for item in peer_lines() if item["class"] == "chat"]


def test_real_twitch_lines_in_gz_days_import_once_each(cli: typer.Typer, tmp_path: Path) -> None:
    lines = peer_chat_lines()
    if not lines:
        pytest.skip(f"{PEER_LINES} is not here")
    half = len(lines) // 2
    write(tmp_path / "11148817" / "2020" / "7" / "12" / "channel.txt.gz", lines[:half], gz=True)
    write(tmp_path / "11148817" / "2020" / "7" / "13" / "channel.txt", lines[half:])
    write(tmp_path / "11148817" / "2020" / "7" / "11148817.txt.gz", lines, gz=True)  # a user file
    code, events, err = dry_run(cli, str(tmp_path))
    assert code == 0, err
    assert [e.raw for e in events] == [line.removesuffix("\r") for line in lines]
    assert [e.message_id for e in events] == [
        import_id(line, e) for line, e in zip(lines, events, strict=True)
    ]
