"""store/line.py over v4 frames: a LogLine given as its frame and index (as store.read makes every line: the
chat its frame's split holds; the id, stored line and receive time read from the frame when asked; the tags'
JSON by replaces where the split found them plain) answers in every format (serve/api/stream.py's encoders)
with the bytes a LogLine of the same stored row given plain makes, a chat message without parsing its line,
for the real Twitch lines, the benchmark's corpus, every kind chatlog's tests write and lines hypothesis
makes."""

from __future__ import annotations

import uuid

import cramjam
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.irc_parse import MalformedLine, parse_line
from schemas.chat_event import ChatEvent
from serve.api.params import Format
from serve.api.stream import _encoder
from store import frame
from store.line import LogLine, Span
from tests.unit.store.stored_lines import NOW, T, every_event, framed_lines, stored_row

_HINT = "hint"


def _same_in_every_format(events: list[ChatEvent], per_frame: int = 50) -> int:
    """Assert that each event's line read from a frame and its stored row given plain agree in every format,
    and that a chat message is answered without a parse; how many lines had a chat."""
    preset = 0
    for event, framed in framed_lines(events, per_frame=per_frame, hint=_HINT):
        line, mid, sent, received = stored_row(event)
        for fmt in Format:  # a fresh framed line per format: each answers on its own
            fresh = LogLine("", "", sent, None, _HINT, *_chat_of(framed), None, framed._frame, framed._index)
            assert _encoder(fmt)([fresh]) == _encoder(fmt)([LogLine(line, mid, sent, received, _HINT)]), (
                fmt,
                line,
            )
            if framed.chat() is not None:
                assert fresh._event is None, (fmt, line)  # answered without a parse
        assert (framed.stored, framed.message_id, framed.received_at) == (line, mid, received)
        plain = LogLine(line, mid, sent, received, _HINT)
        if event.raw.endswith("\r"):
            # a line received with two trailing CRs keeps one in its raw line, and core.irc_parse takes that
            # one off again when the stored line is parsed: such a line reads back as its stored row does
            # (above), not as the ingested event (a limitation of the parser, not of the frame)
            assert (framed.chat(), framed.event) == (plain.chat(), plain.event)
            continue
        chat = framed.chat()
        if chat is not None:
            preset += 1
            assert event.kind == "PRIVMSG" and chat == (event.channel, event.user_login, event.text), line
            parsed = msgspec.structs.replace(event, ingester=None)
            assert framed.privmsg() == (
                parsed.raw,
                parsed.tags,
                parsed.channel,
                parsed.user_login,
                parsed.text,
                parsed.is_action,
            )
        else:  # read as any line: the same
            assert (chat, framed.privmsg()) == (plain.chat(), plain.privmsg())
        assert framed.event == plain.event == msgspec.structs.replace(event, ingester=None)
    return preset


def _chat_of(line: LogLine) -> tuple[tuple[str, str | None, str | None] | None, bool]:
    found = line._frame
    assert found is not None
    i = line._index
    return found.chats[i], found.actions[i]


def test_every_kind_and_the_real_twitch_lines_read_the_same_from_frames() -> None:
    events = every_event()
    assert _same_in_every_format(events) > 300
    assert _same_in_every_format(events[:40], per_frame=1) > 0  # a frame of one line: raw msgpack


def test_the_corpus_reads_the_same_from_frames() -> None:
    from lab.bench.storage import corpus

    events = [parse_line(line, received_at=NOW) for line in corpus(1_000)]
    assert _same_in_every_format([e for e in events if e is not None]) == 1_000


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


@settings(max_examples=300, deadline=None)
@given(st.lists(_lines(), min_size=1, max_size=8))
def test_lines_hypothesis_makes_read_the_same_from_frames(lines: list[str]) -> None:
    events = []
    for i, line in enumerate(lines):
        try:
            event = parse_line(line, received_at=T + i)
        except MalformedLine:
            continue
        if event is not None:
            events.append(event)
    if events:
        _same_in_every_format(events)


def test_a_text_answer_of_a_frames_chat_messages_does_not_read_their_lines() -> None:
    ids = msgspec.Raw(msgspec.msgpack.encode([str(uuid.UUID(int=1)), str(uuid.UUID(int=2))]))
    heads = msgspec.Raw(msgspec.msgpack.encode(["@id=;tmi-sent-ts= :u!u@u PRIVMSG #c :"]))  # a line short
    received = msgspec.Raw(msgspec.msgpack.encode([None, None]))
    columns = [
        7,
        [0, 1],
        ids,
        heads,
        received,
        ["c"],
        ["u"],
        [0, 0],
        ["hi", "yo"],
        [False, True],
        [True, True],
    ]
    found = frame.decode(bytes(cramjam.zstd.compress(msgspec.msgpack.encode([3, *columns]))))
    lines = [
        LogLine("", "", 7 + i, None, _HINT, found.chats[i], found.actions[i], None, found, i) for i in (0, 1)
    ]
    text = _encoder(Format.TEXT)(lines)
    assert text == b"[1970-01-01 00:00:00] #c u: hi\n[1970-01-01 00:00:00] #c u: yo\n"
    assert _encoder(Format.TEXT)(Span(found, range(2), None, _HINT)) == text
    with pytest.raises(frame.FrameError, match="columns of different lengths"):  # the lines are read for raw
        _encoder(Format.RAW)(lines[:1])


class _Owners:
    """A block's owners that count the lines asked about."""

    def __init__(self) -> None:
        self.asked: list[int] = []

    def of(self, index: int) -> tuple[str, str] | None:
        self.asked.append(index)
        return None if index == 1 else ("500", f"100{index}")


def test_a_frames_line_asks_its_blocks_owners_only_when_its_owner_is_asked() -> None:
    """Only an opt-out needs a line's ``(channel id, user id)``: a line made of a frame keeps its block's
    owners and asks them for its own index when :attr:`~store.line.LogLine.owner` is read, not before."""
    events = every_event()[:3]
    owners = _Owners()
    lines = [
        LogLine("", "", framed.sent_at, None, _HINT, *_chat_of(framed), owners, framed._frame, framed._index)
        for _, framed in framed_lines(events)
    ]
    text = _encoder(Format.TEXT)(lines)
    assert text and owners.asked == []
    assert [line.owner for line in lines] == [("500", "1000"), None, ("500", "1002")]
    assert owners.asked == [0, 1, 2]
    assert LogLine.of(events[0]).owner is None


def test_a_span_of_a_frame_is_its_lines_and_answers_as_they_do() -> None:
    """A :class:`~store.line.Span` (what the reader hands on for a stretch of one block) is the lines a
    frame's indices make, in their order, forward, reversed or picked; sliced, kept by a mask and encoded
    in every format it gives what those lines give one by one."""
    framed = framed_lines(every_event(), per_frame=400)
    block = framed[0][1]._frame
    assert block is not None and len(block) == 400
    owners = _Owners()
    for indices in (range(0, 400), range(399, -1, -1), range(10, 60), [5, 3, 300, 7]):
        span = Span(block, indices, owners, _HINT)
        chats, actions = block.chats, block.actions
        lines = [
            LogLine("", "", block.sents[i], None, _HINT, chats[i], actions[i], owners, block, i)
            for i in indices
        ]
        assert len(span) == len(lines)
        assert [(x.sent_at, x.chat(), x.stored, x.message_id) for x in span] == [
            (x.sent_at, x.chat(), x.stored, x.message_id) for x in lines
        ]
        assert span.columns() == ([x.sent_at for x in lines], [block.chats[i] for i in indices])
        assert [x.stored for x in span[1:4]] == [x.stored for x in lines[1:4]]
        assert span[-1].stored == lines[-1].stored
        keep = [n % 3 == 0 for n in range(len(lines))]
        assert [x.stored for x in span.kept(keep)] == [
            x.stored for x, k in zip(lines, keep, strict=True) if k
        ]
        each = [owners.of(i) for i in indices]
        assert span.owners() == (None if None in each else each)
        for fmt in Format:
            between = b"," if fmt in (Format.JSON, Format.JSON_BASIC) else b""  # an array's, added per run
            assert _encoder(fmt)(span) == between.join(_encoder(fmt)([line]) for line in lines), fmt
    said = sum(chat is not None for chat in block.chats)
    assert 0 < said < 400  # chat messages answered from the columns, the other lines parsed
