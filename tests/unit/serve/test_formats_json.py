"""serve/formats.py's json messages of a stored line as bytes (log_json_bytes, log_full_bytes,
log_basic_bytes, log_page_bytes): a chat message's made from its restored line without the full parse,
every other line's from its parsed event, and byte for byte the message of the parsed event
(``encode_json(json_message(line.event))`` and so on) for every row: the benchmark corpus, the real Twitch
lines, every kind chatlog's tests write, generated lines; stored stripped of their id and time or not, with
the row's own send time."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.irc_parse import MalformedLine, parse_line
from lab.bench.storage import corpus
from schemas.chat_event import ChatEvent
from serve.formats import (
    basic_message,
    encode_json,
    full_message,
    json_message,
    log_basic_bytes,
    log_full_bytes,
    log_json_bytes,
    log_page_bytes,
    page_message,
)
from store.keys import message_uuid
from store.line import LogLine
from store.stored_line import VERBATIM, strip
from tests.irc_strategies import TAG_VALUE
from tests.peer_lines import PEER_LINES
from tests.unit.store.stored_lines import NOW, every_event, stored_row

Row = tuple[str, uuid.UUID | str, int, int | None, str]
PAIRS: list[tuple[Callable[[LogLine], bytes], Callable[[ChatEvent], dict[str, Any]]]] = [
    (log_json_bytes, json_message),
    (log_full_bytes, full_message),
    (log_basic_bytes, basic_message),
    (log_page_bytes, page_message),
]


def _rows(event: ChatEvent) -> list[Row]:
    """The rows a reader may find for ``event``: as the sink stores it (its id and time left out when they
    are the key's), the whole line, the whole line marked verbatim, and the whole line under another send
    time and without a receive time (the row's key stands)."""
    line, key, sent_at, received_at = stored_row(event)
    return [
        (line, key, sent_at, received_at, event.channel),
        (event.raw, key, sent_at, received_at, event.channel),
        (VERBATIM + event.raw, str(key), sent_at, None, event.channel),
        (event.raw, key, sent_at + 1_234, None, "hint"),
    ]


def _row_of_line(raw: str) -> list[Row]:
    """Rows of any line: its event's (:func:`_rows`) when it parses, else rows a third party could write."""
    try:
        event = parse_line(raw, received_at=NOW)
    except MalformedLine:
        event = None
    if event is not None:
        return _rows(event)
    key = uuid.uuid5(uuid.NAMESPACE_OID, raw)
    return [(strip(raw, key, NOW), key, NOW, None, "hint"), (raw, key, NOW + 1, NOW, "hint")]


def _same(row: Row) -> bool:
    """Every json message of a fresh line of ``row`` is the one of its parsed event; True when the line was
    a chat message read the short way."""
    for stored_message, event_message in PAIRS:
        made = stored_message(LogLine(*row))
        assert made == encode_json(event_message(LogLine(*row).event)), (stored_message.__name__, row)
    return LogLine(*row).privmsg() is not None


def test_every_corpus_row_is_the_parsed_events_message_and_read_the_short_way() -> None:
    events = [parse_line(raw, received_at=NOW) for raw in corpus(3000)]
    rows = [row for event in events if event is not None for row in _rows(event)]
    assert len(rows) == 4 * 3000
    assert all([_same(row) for row in rows])


def test_every_real_twitch_row_is_the_parsed_events_message() -> None:
    if not PEER_LINES.exists():
        pytest.skip(f"{PEER_LINES} is not here")
    events = every_event()
    short = [_same(row) for event in events for row in _rows(event)]
    assert sum(short) >= 4 * sum(e.kind == "PRIVMSG" for e in events) > 1_000
    assert len(short) > sum(short)  # the other kinds, from their events


def test_every_kind_chatlog_writes_is_the_parsed_events_message() -> None:
    events = every_event()
    assert {e.kind for e in events} >= {"PRIVMSG", "CLEARCHAT", "CLEARMSG"}
    for event in events:
        for row in _rows(event):
            assert _same(row) == (event.kind == "PRIVMSG")


def test_a_line_read_once_parsed_gives_its_events_message() -> None:
    event = every_event()[-1]
    line = LogLine(*_rows(event)[0])
    assert line.event.kind == "PRIVMSG"  # parsed first: the fields come from the event
    assert line.privmsg() == (event.raw, event.tags, event.channel, event.user_login, event.text, False)
    for stored_message, event_message in PAIRS:
        assert stored_message(line) == encode_json(event_message(line.event))
    assert LogLine.of(event).privmsg() == line.privmsg()


@pytest.mark.parametrize(
    "raw",
    [
        "@login=alice :bob!b@h PRIVMSG #c :a login tag: parsed",
        f"@id={'x' * 129};tmi-sent-ts=1 :bob!b@h PRIVMSG #c :an id over its bound: no event, the line",
        f"@user-id={'1' * 65} :bob!b@h PRIVMSG #c :a user id over its bound",
        ":bob!b@h privmsg #c :lower case",
        "PRIVMSG #c :no prefix",
        ":bob!b@h PRIVMSG #c a b :the general parameter shape",
        "@badges=;system-msg=hi\\sthere :tmi.twitch.tv USERNOTICE #c :\x01ACTION words\x01",
        ":tmi.twitch.tv CLEARCHAT #c :bob",
        "no command at all",
        f":bob!b@h PRIVMSG #c :{'x' * 16_380}",
    ],
)
def test_lines_the_short_way_declines_answer_as_before(raw: str) -> None:
    assert not any([_same(row) for row in _row_of_line(raw)])


_KEY = st.sampled_from(
    ["id", "display-name", "emotes", "login", "room-id", "user-id", "tmi-sent-ts", "a", ""]
)
_TAGS = st.lists(st.one_of(st.tuples(_KEY, TAG_VALUE).map("=".join), _KEY), max_size=6).map(";".join)
_TEXT = st.lists(
    st.sampled_from(["\x01ACTION", "\x01", " ", ":", "hi", "é", "\r", "\x00", "\u202e", '"', "\\"]),
    max_size=6,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(
    _TAGS,
    st.sampled_from([" ", "  "]),
    st.sampled_from([":bob!b@h", ":Bob", ":irc.example.org", ":İ!i@h"]),
    st.sampled_from(["PRIVMSG #c", "PRIVMSG #Chan", "PRIVMSG #c x", "USERNOTICE #c", "privmsg #c"]),
    st.one_of(st.none(), _TEXT),
)
@example("display-name=;id=", " ", ":bob!b@h", "PRIVMSG #c", "")
@example('display-name=\\"x\\s;a', " ", ":bob", "PRIVMSG #c", "\x01ACTION \x00\x01")
@example(
    "id=a;display-name=x\\sy;id=b;display-name=z\\:w", " ", ":bob!b@h", "PRIVMSG #c", "hi"
)  # repeated keys
@example(
    "display-name;a=\\\\s;b=\\s\\", " ", ":bob!b@h", "PRIVMSG #c", ""
)  # no `=`; escaped backslash, lone one
@example('display-name=a"b;id=x', " ", ":bob!b@h", "PRIVMSG #c", '"quoted"')
@example("display-name=\x01;a=\x7f", " ", ":bob!b@h", "PRIVMSG #c", "\x01ACTION\x01")  # control characters
@example("display-name=日本\\s語;a=", " ", ":İnci!i@h", "PRIVMSG #Chan", "😀 é")
def test_generated_rows_are_the_parsed_events_message(
    tags: str, gap: str, prefix: str, command: str, text: str | None
) -> None:
    raw = f"@{tags}{gap}{prefix} {command}" + ("" if text is None else f" :{text}")
    for row in _row_of_line(raw):
        _same(row)


def test_a_row_with_a_uuid_id_is_stored_stripped_and_its_json_has_the_id_back() -> None:
    raw = corpus(1)[0]
    event = parse_line(raw, received_at=NOW)
    assert event is not None
    stored, key, sent_at, received_at = stored_row(event)
    assert str(key) not in stored and str(sent_at) not in stored
    message = json.loads(log_json_bytes(LogLine(stored, key, sent_at, received_at, event.channel)))
    assert message["id"] == str(key) == str(message_uuid(event.message_id))
    assert message["tags"]["tmi-sent-ts"] == str(sent_at) and message["raw"] == raw


_TAGS_JSON = '{"display-name":"Bob","id":"m1","room-id":"1","tmi-sent-ts":"1700000000123","user-id":"2"}'
_HEAD = (
    f'"text":"waves","displayName":"Bob","timestamp":"2023-11-14T22:13:20.123Z","id":"m1","tags":{_TAGS_JSON}'
)
_RAW = (
    "@display-name=Bob;id=m1;room-id=1;tmi-sent-ts=1700000000123;user-id=2"
    " :bob!b@h PRIVMSG #chan :\x01ACTION waves\x01"
)
_RAW_JSON = _RAW.replace("\x01", "\\u0001")


@pytest.mark.parametrize(
    ("made", "wire"),
    [
        (
            log_json_bytes,
            f'{{{_HEAD},"username":"bob","channel":"chan","raw":"{_RAW_JSON}","type":1,"systemText":""}}',
        ),
        (
            log_full_bytes,
            f'{{{_HEAD},"username":"bob","channel":"chan","raw":"{_RAW_JSON}","type":1,"systemText":""}}',
        ),
        (log_basic_bytes, f"{{{_HEAD}}}"),
        (
            log_page_bytes,
            f'{{{_HEAD},"username":"bob","channel":"chan","type":1,"systemText":"","action":true,"deletedText":""}}',
        ),
    ],
)
def test_the_wire_bytes_of_a_chat_message_keys_in_their_order(
    made: Callable[[LogLine], bytes], wire: str
) -> None:
    line = LogLine(_RAW, "m1", 1_700_000_000_123, None, "chan")
    assert made(line) == wire.encode()
    assert made(LogLine.of(line.event)) == wire.encode()  # from the parsed event, the same bytes
