"""store/line.py: a stored line (as the writer frames it: store.blocks.framed) gives back the ingester's event
(but for ``ingester``), for the real Twitch lines other client libraries assert and for every kind chatlog's
tests write; a line that does not parse comes back as a line, never as an exception; a LogLine answers its raw
line and chat without a parse. The same lines read from v4 frames: tests/unit/store/test_line_frames.py."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import msgspec
import pytest

from core.irc_parse import parse_line, sender_of
from core.testing import chat_events, twitch_line
from schemas.chat_event import ChatEvent
from store.line import UNKNOWN_KIND, LogLine, closing, stored_event
from store.stored_line import strip, unmarked
from tests.peer_lines import PEER_LINES
from tests.unit.store.stored_lines import (
    NOW,
    T,
    events_of_peer_lines,
    every_event,
    stored_lines,
    stored_row,
)

EARLY = 1_500_000_000_000  # before some lines' tmi-sent-ts by more than a day: those are implausible


def _derived(event: ChatEvent) -> ChatEvent:
    line, key, sent_at, received_at = stored_row(event)
    return stored_event(line, key, sent_at, received_at, event.channel)


def test_every_real_twitch_event_is_derived_again_but_for_the_ingester() -> None:
    if not PEER_LINES.exists():
        pytest.skip(f"{PEER_LINES} is not here")
    checked = 0
    for received_at in (NOW, EARLY):
        for source, event in events_of_peer_lines(received_at):
            assert _derived(event) == msgspec.structs.replace(event, ingester=None), source
            checked += 1
    assert checked >= 200
    assert any(e.bad_sent_ts for _, e in events_of_peer_lines(EARLY))


def test_without_a_stored_receive_time_the_send_time_stands_in() -> None:
    if not PEER_LINES.exists():
        pytest.skip(f"{PEER_LINES} is not here")
    for source, event in events_of_peer_lines(NOW):
        line, key, sent_at, _ = stored_row(event)
        got = stored_event(line, key, sent_at, None, event.channel)
        assert got == msgspec.structs.replace(event, received_at=event.sent_at, ingester=None), source


@pytest.mark.parametrize("ids", [True, False])
def test_every_kind_chatlog_writes_is_derived_again(ids: bool) -> None:
    events = chat_events(400, channels=3, now_ms=T, ids=ids)
    assert {e.kind for e in events} == {"PRIVMSG", "CLEARCHAT", "CLEARMSG"}
    for event in events:
        assert _derived(event) == msgspec.structs.replace(event, ingester=None)
    # the lines with a Twitch uuid id are stored without it, and it comes back from the key
    stripped = [e for e in events if e.tags.get("id")]
    assert all(e.message_id not in stored_row(e)[0] for e in stripped) and (len(stripped) > 300) == ids


def test_an_action_with_escapes_and_an_odd_id_round_trips() -> None:
    line = twitch_line(
        "PRIVMSG",
        "chan",
        sent_at=T,
        login="bob",
        user_id="42",
        room_id="7",
        message_id="NOT-A-UUID",
        display_name="B o;b\\",
        text="\x01ACTION waves\x01",
    )
    event = parse_line(line, received_at=T + 3, ingester="x")
    assert event is not None and event.is_action and event.display_name == "B o;b\\"
    assert "id=NOT-A-UUID;" in stored_row(event)[0]  # not the uuid's text: kept in the line
    assert _derived(event) == msgspec.structs.replace(event, ingester=None)
    # a line whose id tags are empty is stored verbatim (`!` + line) and parsed again the same
    empty = parse_line("@id=;tmi-sent-ts= :a!a@a PRIVMSG #chan :empty ids", received_at=T, ingester="x")
    assert empty is not None and stored_row(empty)[0] == "!" + empty.raw
    assert _derived(empty) == msgspec.structs.replace(empty, ingester=None)


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("not irc at all", "not"),
        ("PING :tmi.twitch.tv", "PING"),
        (":tmi.twitch.tv 001 justinfan :Welcome, GLHF!", "001"),
        ("@badge-info=;room-id=1 :tmi.twitch.tv ROOMSTATE #chan", "ROOMSTATE"),
        ("PRIVMSG notachannel :hello", "PRIVMSG"),
        ("NOTICE * :Login unsuccessful", "NOTICE"),
        ("!starts with the verbatim mark", "!starts"),
        ("@only-tags", UNKNOWN_KIND),
        ("", UNKNOWN_KIND),
        (":prefix-only", UNKNOWN_KIND),
        ("@id=x :a!a@a PRIVMSG #" + "c" * 300 + " :channel too long", "PRIVMSG"),
        ("X" * 40, "X" * 32),
    ],
)
def test_a_line_that_is_no_event_comes_back_as_itself(line: str, kind: str) -> None:
    key = uuid.uuid4()
    got = stored_event(strip(line, key, T), key, T, T + 9, "hint")
    assert got.raw == line and got.kind == kind and got.message_id == str(key)
    assert (got.channel, got.sent_at, got.received_at, got.user_login, got.text) == (
        "hint",
        T,
        T + 9,
        None,
        None,
    )


def stored_sender(line: str) -> tuple[str | None, str | None]:
    """What counting by sender reads of a stored line (:meth:`store.read.LogReader.senders`)."""
    return sender_of(unmarked(line))


def test_the_sender_scan_agrees_with_the_derived_event() -> None:
    peer = [e for _, e in events_of_peer_lines(NOW)]  # none in a clone without ../shared
    assert not PEER_LINES.exists() or len(peer) > 100
    events = peer + chat_events(300, channels=2, now_ms=T) + chat_events(300, channels=2, now_ms=T, ids=False)
    for event in events:
        line, key, sent_at, received_at = stored_row(event)
        derived = stored_event(line, key, sent_at, received_at, event.channel)
        assert stored_sender(line) == (derived.user_login, derived.user_id), event.raw
    assert stored_sender("!" + ":Nick!n@h PRIVMSG #c :x") == ("nick", None)
    assert stored_sender("@login=;user-id=5 :irc.local NOTICE #c :x") == (None, "5")
    assert stored_sender("@user-id=5") == (None, None)


def test_a_record_whose_line_has_no_time_keeps_the_rows_sent_at() -> None:
    """Another producer's record (sent_at given, received 3 ms later, a line without tmi-sent-ts): the
    row's sent_at stands, not the receive time the parser would take."""
    line = ":bob!bob@bob PRIVMSG #chan :hi"
    key = uuid.uuid4()
    got = stored_event(strip(line, key, T), key, T, T + 3, "chan")
    assert (got.kind, got.user_login, got.text, got.sent_at, got.received_at) == (
        "PRIVMSG",
        "bob",
        "hi",
        T,
        T + 3,
    )


def test_a_log_line_gives_its_raw_line_and_chat_text_without_a_parse_and_the_event_with_one() -> None:
    answered = 0
    for event, line in stored_lines(every_event()):
        raw, chat = line.raw, line.chat()
        assert line._event is None  # neither parsed
        assert raw == event.raw
        if chat is not None:
            answered += 1
            assert event.kind == "PRIVMSG" and chat == (event.channel, event.user_login, event.text)
        assert line.event == msgspec.structs.replace(event, ingester=None)
        assert line.event is line.event  # parsed once
    assert answered > 300


def test_a_log_lines_chat_fields_are_its_events_read_from_the_restored_line_or_from_the_event() -> None:
    answered = 0
    for event, line in stored_lines(every_event()):
        fields = line.privmsg()
        assert line._event is None  # not parsed
        if event.kind == "PRIVMSG":
            answered += 1
            assert fields == (
                event.raw,
                event.tags,
                event.channel,
                event.user_login,
                event.text,
                event.is_action,
            )
            assert line.event is not None and line.privmsg() == fields  # the same once parsed
        else:
            assert fields is None and line.event is not None and line.privmsg() is None
    assert answered > 300


def test_a_log_line_of_an_event_is_that_event() -> None:
    event = chat_events(1, channels=1, now_ms=T)[0]
    line = LogLine.of(event)
    assert line.event is event and line.raw == event.raw and line.sent_at == event.sent_at


def test_a_stored_line_near_the_bound_is_left_to_the_parser() -> None:
    text = "x" * 16_300
    line = LogLine(f":bob!b@h PRIVMSG #c :{text}", uuid.uuid4(), T, None, "c")
    assert line.chat() is None and line.event.text == text


def test_a_source_is_closed_when_its_block_ends_early_or_fails() -> None:
    closed: list[str] = []

    async def numbers(name: str) -> AsyncIterator[int]:
        try:
            for n in range(10):
                yield n
        finally:
            closed.append(name)

    async def go() -> list[int]:
        seen = []
        async with closing(numbers("early")) as source:
            async for n in source:
                seen.append(n)
                if n == 2:
                    break
        with pytest.raises(ValueError):
            async with closing(numbers("failed")) as source:
                await anext(source)
                raise ValueError
        async with closing(object()):  # a source with nothing to close
            pass
        return seen

    assert asyncio.run(go()) == [0, 1, 2] and closed == ["early", "failed"]
