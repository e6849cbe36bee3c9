"""The data set of ``chatlog bench serve``: every event's line says what the event says (the readers derive
every field from the stored line), and :func:`event_line` rebuilds real Twitch lines exactly."""

from __future__ import annotations

import msgspec
import pytest

from core.irc_parse import parse_line
from lab.bench.serve_data import USER, DataSet, event_line, relined
from lab.bench.storage import T0_MS, corpus
from schemas.chat_event import ChatEvent


def _parsed(event: ChatEvent) -> ChatEvent:
    parsed = parse_line(event.raw, received_at=event.received_at)
    assert parsed is not None, event.raw
    return msgspec.structs.replace(parsed, ingester=event.ingester)  # the line does not hold the ingester


def test_every_event_of_a_data_set_is_the_parse_of_its_line() -> None:
    data = DataSet(month_lines=400, day_lines=150, user_lines=30)
    events = list(data.events())
    assert len(events) == data.total
    for event in events:
        assert _parsed(event) == event
    heavy = [e for e in events if e.user_login == USER]
    assert len(heavy) == data.user_lines
    for event in heavy:  # the prefix, the display name and the id all name the heavy chatter
        assert event.raw.split(" ", 2)[1] == f":{USER}!{USER}@{USER}.tmi.twitch.tv"
        assert event.tags["display-name"] == event.display_name == USER.capitalize()
        assert event.tags["user-id"] == event.user_id
        assert event.tags["tmi-sent-ts"] == str(event.sent_at)


def test_the_line_follows_a_changed_field() -> None:
    (event,) = DataSet(month_lines=1, day_lines=0, user_lines=0).events()
    moved = relined(
        msgspec.structs.replace(
            event,
            channel="elsewhere",
            text="new text",
            tags={**event.tags, "room-id": "4242"},
            channel_id="4242",
        )
    )
    assert " PRIVMSG #elsewhere :new text" in moved.raw
    assert _parsed(moved) == moved


def test_event_line_rebuilds_real_twitch_lines_exactly() -> None:
    lines = corpus(2000, seed=5)  # replies (escaped tag values), /me, non-Latin text
    assert any("\\s" in line for line in lines)
    assert any("\x01ACTION " in line for line in lines)
    for line in lines:
        event = parse_line(line, received_at=T0_MS + 86_400_000)
        assert event is not None
        assert event_line(event) == line


@pytest.mark.parametrize("value", ["a b", "semi;colon", "back\\slash", "cr\rlf\n", "", "plain"])
def test_tag_values_are_escaped_so_they_parse_back(value: str) -> None:
    (event,) = DataSet(month_lines=1, day_lines=0, user_lines=0).events()
    odd = relined(msgspec.structs.replace(event, tags={**event.tags, "odd": value}))
    assert _parsed(odd).tags["odd"] == value


def test_a_server_message_gets_the_servers_prefix() -> None:
    line = "@room-id=1;target-user-id=2;tmi-sent-ts=1700000000000 :tmi.twitch.tv CLEARCHAT #chan :someone"
    event = parse_line(line, received_at=1_700_000_000_100)
    assert event is not None and event.user_login is None
    assert event_line(event) == line
