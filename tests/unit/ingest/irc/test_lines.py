"""The read path: chunk splitting (never a line split across reads), decoding, protocol routing."""

from __future__ import annotations

import random
import tracemalloc

from core.irc_parse import parse_message
from ingest.irc.lines import LineSplitter, route_lines
from lab.bench.irc_read import twitch_like_corpus

PRIV = "@id=1;tmi-sent-ts=5 :bob!bob@bob.tmi.twitch.tv PRIVMSG #chan :hi there"


def feed_all(splitter: LineSplitter, chunks: list[bytes]) -> list[str]:
    out: list[str] = []
    for chunk in chunks:
        out += splitter.feed(chunk)
    return out


def test_lines_come_out_whole_whatever_the_chunk_boundaries() -> None:
    corpus = twitch_like_corpus(300, seed=3)  # emoji and accents: multi-byte UTF-8 split too
    blob = ("\r\n".join(corpus) + "\r\n").encode()
    rng = random.Random(5)
    for _ in range(20):
        cuts = sorted(rng.sample(range(1, len(blob)), 200))
        chunks = [blob[a:b] for a, b in zip([0, *cuts], [*cuts, len(blob)], strict=True)]
        splitter = LineSplitter()
        assert feed_all(splitter, chunks) == corpus
        assert splitter.pending_bytes == 0
        assert splitter.decode_errors == 0


def test_byte_by_byte_feeding_gives_the_same_lines() -> None:
    lines = ["PING :x", "@a=b :n!u@h PRIVMSG #c :日本語 🐸", PRIV]
    blob = ("\r\n".join(lines) + "\r\n").encode()
    splitter = LineSplitter()
    assert feed_all(splitter, [blob[i : i + 1] for i in range(len(blob))]) == lines


def test_an_unterminated_line_waits_for_its_end() -> None:
    splitter = LineSplitter()
    assert splitter.feed(b"PING :a\r\nPRIVMSG #c :hal") == ["PING :a"]
    assert splitter.feed(b"f a li") == []
    assert splitter.feed(b"ne\r") == []
    assert splitter.feed(b"\n") == ["PRIVMSG #c :half a line"]


def test_invalid_utf8_is_replaced_not_dropped_and_counted() -> None:
    splitter = LineSplitter()
    lines = splitter.feed(b"PRIVMSG #c :ok\r\nPRIVMSG #c :bad \xff\xfe byte\r\n")
    assert lines == ["PRIVMSG #c :ok", "PRIVMSG #c :bad \ufffd\ufffd byte"]
    assert splitter.decode_errors == 1


def test_bare_lf_and_empty_lines() -> None:
    splitter = LineSplitter()
    assert splitter.feed(b"a\nb\r\n\r\nc\n") == ["a", "b", "c"]
    assert splitter.feed(b"\r\n\r\n") == []


def test_a_line_past_the_bound_is_discarded_and_counted_and_the_next_lines_kept() -> None:
    splitter = LineSplitter(max_line_bytes=1000)
    assert splitter.feed(b"PING :a\r\n" + b"x" * 600) == ["PING :a"]
    assert splitter.feed(b"x" * 600) == []  # past the bound: dropped, not held
    assert splitter.pending_bytes == 0
    assert splitter.feed(b"x" * 5000) == []
    assert splitter.feed(b"xx\r\nPING :b\r\nPI") == ["PING :b"]
    assert splitter.feed(b"NG :c\r\n") == ["PING :c"]
    assert splitter.lines_too_long == 1


def test_a_complete_line_past_the_bound_inside_one_chunk_is_discarded() -> None:
    splitter = LineSplitter(max_line_bytes=1000)
    chunk = b"PING :a\r\n" + b"y" * 1001 + b"\r\n" + b"z" * 1000 + b"\nPING :b\r\n"
    assert splitter.feed(chunk) == ["PING :a", "z" * 1000, "PING :b"]
    assert splitter.lines_too_long == 1


def test_a_line_of_exactly_the_bound_is_kept_whatever_the_chunking() -> None:
    line = b"w" * 1000
    for cut in (1, 500, 999, 1000, 1001):
        splitter = LineSplitter(max_line_bytes=1000)
        blob = line + b"\r\nPING :x\r\n"
        assert splitter.feed(blob[:cut]) + splitter.feed(blob[cut:]) == [line.decode(), "PING :x"]
        assert splitter.lines_too_long == 0


def test_a_gigabyte_line_needs_no_more_memory_than_the_bound() -> None:
    chunk = b"x" * (1 << 20)
    splitter = LineSplitter(max_line_bytes=64 * 1024)
    tracemalloc.start()
    try:
        for _ in range(1024):  # 1 GiB without a line end, a MiB per read
            assert splitter.feed(chunk) == []
        assert splitter.feed(b"x\r\nPING :after\r\n") == ["PING :after"]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * (1 << 20), peak  # one chunk (and the bounded tail), not the line
    assert splitter.lines_too_long == 1
    assert splitter.pending_bytes == 0


PROTOCOL_LINES = [
    "PING :tmi.twitch.tv",
    ":tmi.twitch.tv 001 justinfan1 :Welcome, GLHF!",
    "@time=2026-01-01T00:00:00.000Z :irc.local 353 me = #c :me you",
    ":me!me@me.tmi.twitch.tv JOIN #chan",
    "@time=x :me!u@h JOIN :#chan",
    ":tmi.twitch.tv RECONNECT",
    ":tmi.twitch.tv CAP * ACK :twitch.tv/tags twitch.tv/commands",
    "@badge-info=;color= :tmi.twitch.tv GLOBALUSERSTATE",
]
CHAT_LINES = [
    PRIV,
    ":bob!b@h PRIVMSG #chan :PING :fake ping inside the text",
    "@msgid=x;time=y :bob!b@h PRIVMSG #chan :JOIN #other 001 RECONNECT",
    "@login=x;target-msg-id=y :tmi.twitch.tv CLEARMSG #chan :bad words",
    "@room-id=1 :tmi.twitch.tv CLEARCHAT #chan :someone",
    "@msg-id=sub :tmi.twitch.tv USERNOTICE #chan :yay",
    "@emote-only=0 :tmi.twitch.tv ROOMSTATE #chan",
    ":other!u@h JOIN #chan",  # another user's JOIN: the handler passes it on
    "@msg-id=slow_on :tmi.twitch.tv NOTICE #chan :This room is now in slow mode.",
]


def test_protocol_lines_go_to_the_handler_and_chat_lines_pass_in_order() -> None:
    seen: list[str] = []

    def handle(line: str) -> bool:
        seen.append(line)
        msg = parse_message(line)
        return not (msg.command in ("JOIN", "NOTICE") and msg.sender != "me")

    mixed = [*CHAT_LINES[:3], *PROTOCOL_LINES[:4], *CHAT_LINES[3:], *PROTOCOL_LINES[4:]]
    assert route_lines(mixed, handle) == CHAT_LINES
    assert [line for line in seen if line not in CHAT_LINES] == PROTOCOL_LINES
    assert set(seen) - set(PROTOCOL_LINES) == {CHAT_LINES[7], CHAT_LINES[8]}  # looked at, passed on


def test_malformed_lines_pass_to_the_caller_instead_of_vanishing() -> None:
    odd = ["@tagsonly", ":prefixonly", "@t :p", "x"]
    assert route_lines(odd, lambda _line: True) == odd
