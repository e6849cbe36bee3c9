"""serve/store/row.py with a packed month's chat (schemas.packed_month, version 3): a LogLine given the chat
its frame holds, or its frame and index (the line read from there when asked, the tags' JSON by replaces
where the frame found them plain), answers in every format (serve/api/stream.py's encoders) with the bytes
a LogLine of the same row without it makes, without parsing the line, for the real Twitch lines, the
benchmark's corpus, every kind chatlog's tests write and lines hypothesis makes."""

from __future__ import annotations

import cramjam
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from schemas.packed_month import VERSION, PackedRow, PackError, unpack, unpack_frame
from sink.pack import packed_frame

from core.irc_parse import MalformedLine, parse_line
from schemas.chat_event import ChatEvent
from serve.api.params import Format
from serve.api.stream import _encoder
from store.line import LogLine
from tests.unit.serve.store.stored_lines import NOW, T, every_event, stored_row

_HINT = "hint"


def _rows(events: list[ChatEvent]) -> list[PackedRow]:
    rows: list[PackedRow] = []
    for event in events:
        line, key, sent_at, received_at = stored_row(event)
        rows.append((sent_at, str(key), line, received_at))
    return rows


def _same_in_every_format(rows: list[PackedRow]) -> int:
    """Assert a packed LogLine and a plain one of each row agree in every format; how many had a chat."""
    preset = 0
    value = packed_frame(rows)
    frame = unpack_frame(value)
    for i, (sent, mid, line, received, chat, action) in enumerate(unpack(value)):
        plain = LogLine(line, mid, sent, received, _HINT)
        for fmt in Format:  # a row given as its frame and index: its id and line read from there
            framed = LogLine("", "", sent, None, _HINT, frame.chats[i], frame.actions[i], None, frame, i)
            assert _encoder(fmt)(framed) == _encoder(fmt)(LogLine(line, mid, sent, received, _HINT)), (
                fmt,
                line,
            )
            assert (framed.stored, framed.message_id, framed.received_at) == (line, mid, received)
        event = plain.event
        if chat is not None:
            preset += 1
            assert event.kind == "PRIVMSG" and chat == (event.channel, event.user_login, event.text), line
            assert action == event.is_action
        for fmt in Format:
            packed = LogLine(line, mid, sent, received, _HINT, chat, action)
            assert _encoder(fmt)(packed) == _encoder(fmt)(LogLine(line, mid, sent, received, _HINT)), (
                fmt,
                line,
            )
            assert chat is None or packed._event is None, (fmt, line)  # answered without a parse
        packed = LogLine(line, mid, sent, received, _HINT, chat, action)
        fresh = LogLine(line, mid, sent, received, _HINT)
        if chat is None:  # read as any row
            assert (packed.chat(), packed.privmsg()) == (fresh.chat(), fresh.privmsg())
        else:  # the parsed event's
            assert (packed.chat(), packed.privmsg()) == (chat, plain.privmsg()), line
    return preset


def test_every_kind_and_the_real_twitch_lines_read_the_same_packed() -> None:
    assert _same_in_every_format(_rows(every_event())) > 300


def test_the_corpus_reads_the_same_packed() -> None:
    from bench.storage import corpus

    events = [parse_line(line, received_at=NOW) for line in corpus(1_000)]
    assert _same_in_every_format(_rows([e for e in events if e is not None])) == 1_000


_WORD = st.text(st.sampled_from("abcAB09_ \x01:;=@!#\\\r\u0130é"), max_size=12)
_TAG = st.tuples(
    st.sampled_from(["id", "tmi-sent-ts", "login", "display-name", "room-id", "user-id", "msgid", "x"]),
    st.none() | _WORD,
)
_TEXT = st.one_of(
    _WORD,
    _WORD.map(lambda w: f"\x01ACTION {w}\x01"),
    _WORD.map(lambda w: f"\x01ACTION{w}"),
    st.just("\x01ACTION\x01"),
)


@st.composite
def _lines(draw: st.DrawFn) -> str:
    tags = draw(st.lists(_TAG, max_size=4))
    section = ";".join(k if v is None else f"{k}={v}" for k, v in tags)
    tag_part = draw(st.sampled_from(["", f"@{section} ", f"@{section}  "]))
    nick = draw(st.sampled_from(["bob", "Bob", "", "a.b"]))
    prefix = draw(st.sampled_from([f":{nick}!{nick}@h ", f":{nick} ", ":tmi.twitch.tv ", ""]))
    command = draw(st.sampled_from(["PRIVMSG", "privmsg", "NOTICE", "CLEARCHAT"]))
    channel = draw(st.sampled_from(["#chan", "#Chan", "#c", "#", "chan"]))
    text = draw(st.none() | _TEXT)
    middle = draw(st.sampled_from(["", " x"]))
    end = draw(st.sampled_from(["", "\r"]))
    return f"{tag_part}{prefix}{command} {channel}{middle}" + ("" if text is None else f" :{text}") + end


@settings(max_examples=300)
@given(st.lists(_lines(), min_size=1, max_size=8))
def test_lines_hypothesis_makes_read_the_same_packed(lines: list[str]) -> None:
    events = []
    for i, line in enumerate(lines):
        try:
            event = parse_line(line, received_at=T + i)
        except MalformedLine:
            continue
        if event is not None:
            events.append(event)
    if events:
        _same_in_every_format(_rows(events))


def test_a_text_answer_of_a_packed_months_chat_messages_does_not_read_their_lines() -> None:
    heads = ["@id=;tmi-sent-ts= :u!u@u PRIVMSG #c :", ":u!u@u PRIVMSG #c :"]
    columns = [[0, 1], ["a", "b"], heads[:1], [None, None], ["c"], ["u"], [0, 0], ["hi", "yo"], [False, True]]
    value = bytes(
        cramjam.zstd.compress(msgspec.msgpack.encode([VERSION, 7, *columns, [True, True]]))
    )  # a line short
    frame = unpack_frame(value)
    lines = [
        LogLine("", "", 7 + i, None, _HINT, frame.chats[i], frame.actions[i], None, frame, i) for i in (0, 1)
    ]
    text = b"".join(_encoder(Format.TEXT)(line) for line in lines)
    assert text == b"[1970-01-01 00:00:00] #c u: hi\n[1970-01-01 00:00:00] #c u: yo\n"
    with pytest.raises(PackError, match="columns of different lengths"):  # the lines are read for raw
        _encoder(Format.RAW)(lines[0])
