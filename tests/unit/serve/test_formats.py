"""Contract: the justlog/rustlog formats, against examples written from their sources and tests
(rustlog src/logs/schema/message/full.rs and basic.rs, justlog api/server.go)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from schemas.chat_event import ChatEvent
from serve.formats import (
    basic_message,
    friendly_text,
    full_message,
    json_message,
    line_text,
    log_text_bytes,
    log_text_line,
    message_type,
    page_fields,
    page_message,
    text_line,
    timestamp,
)
from store.line import LogLine
from tests.unit.store.stored_lines import every_event, stored_lines

# rustlog's parse_old_message example: a PRIVMSG of Snusbot in #forsen at 1489263601000.
SNUSBOT_RAW = (
    "@badges=;color=;display-name=Snusbot;emotes=;mod=0;room-id=22484632;subscriber=0;"
    "tmi-sent-ts=1489263601000;turbo=0;user-id=62541963;user-type= :snusbot!snusbot@snusbot.tmi.twitch.tv "
    "PRIVMSG #forsen :prasoc won 10 points in roulette and now has 2838 points! forsenPls"
)
SNUSBOT_TAGS = {
    "badges": "", "color": "", "display-name": "Snusbot", "emotes": "", "mod": "0", "room-id": "22484632",
    "subscriber": "0", "tmi-sent-ts": "1489263601000", "turbo": "0", "user-id": "62541963", "user-type": "",
}  # fmt: skip
SNUSBOT_FULL: dict[str, Any] = {
    "text": "prasoc won 10 points in roulette and now has 2838 points! forsenPls",
    "displayName": "Snusbot",
    "timestamp": "2017-03-11T20:20:01Z",
    "id": "",
    "tags": SNUSBOT_TAGS,
    "username": "snusbot",
    "channel": "forsen",
    "raw": SNUSBOT_RAW,
    "type": 1,
    "systemText": "",
}
SNUSBOT_TEXT = "[2017-03-11 20:20:01] #forsen snusbot: " + SNUSBOT_FULL["text"]


def _event(**kw: Any) -> ChatEvent:
    values: dict[str, Any] = {
        "message_id": "h" * 32, "kind": "PRIVMSG", "channel": "forsen", "sent_at": 1489263601000,
        "received_at": 1489263601005, "raw": "", "tags": {},
    }  # fmt: skip
    values.update(kw)
    return ChatEvent(**values)


def _snusbot() -> ChatEvent:
    return _event(
        channel_id="22484632",
        user_login="snusbot",
        user_id="62541963",
        display_name="Snusbot",
        text=SNUSBOT_FULL["text"],
        tags=SNUSBOT_TAGS,
        raw=SNUSBOT_RAW,
    )


def test_full_and_basic_message_shapes() -> None:
    assert full_message(_snusbot()) == SNUSBOT_FULL
    basic = {k: SNUSBOT_FULL[k] for k in ("text", "displayName", "timestamp", "id", "tags")}
    assert basic_message(_snusbot()) == basic


def test_the_web_pages_message_is_the_full_one_without_raw_with_what_the_page_read_from_raw() -> None:
    page = page_message(_snusbot())
    assert page == {k: v for k, v in SNUSBOT_FULL.items() if k != "raw"} | {
        "action": False,
        "deletedText": "",
    }
    action = _event(
        user_login="a", text="waves", is_action=True, raw="@x :a!a@a PRIVMSG #c :\x01ACTION waves\x01"
    )
    assert page_fields(action) == {"action": True, "deletedText": ""}
    deleted = _event(
        kind="CLEARMSG", user_login="a", text="oops", raw="@login=a :tmi.twitch.tv CLEARMSG #c :oops"
    )
    assert page_fields(deleted) == {"action": False, "deletedText": "oops"}
    assert "action" not in full_message(action) and "deletedText" not in full_message(deleted)  # rustlog's


def test_text_line() -> None:
    assert text_line(_snusbot()) == SNUSBOT_TEXT
    assert text_line(_event(user_login="a", text="x\r\n[fake] line")) == (
        "[2017-03-11 20:20:01] #forsen a: x\\r\\n[fake] line"
    )


def test_usernotice_is_system_message_then_text() -> None:
    # rustlog's avoid_escaping_tags example (daney___ resub in #forsen)
    system = "daney___ subscribed at Tier 1. They've subscribed for 19 months!"
    event = _event(
        kind="USERNOTICE",
        user_login="daney___",
        display_name="daney___",
        text="Still here? LULE",
        tags={"system-msg": system, "id": "0a4b7b50-052e-473e-99ee-441f05ce52a7", "msg-id": "resub"},
    )
    full = full_message(event)
    assert full["text"] == f"{system} Still here? LULE"
    assert (full["type"], full["systemText"], full["id"]) == (
        4,
        system,
        "0a4b7b50-052e-473e-99ee-441f05ce52a7",
    )
    assert text_line(event) == f"[2017-03-11 20:20:01] #forsen daney___: {system} Still here? LULE"
    assert full_message(_event(kind="USERNOTICE", tags={"system-msg": system}))["text"] == system


def test_clearchat_texts() -> None:
    timeout = _event(kind="CLEARCHAT", text="bob", tags={"ban-duration": "600"})
    assert text_line(timeout) == "[2017-03-11 20:20:01] #forsen bob has been timed out for 600 seconds"
    assert full_message(timeout)["type"] == 2
    assert full_message(_event(kind="CLEARCHAT", text="bob"))["text"] == "bob has been banned"
    assert text_line(_event(kind="CLEARCHAT")) == "[2017-03-11 20:20:01] #forsen Chat has been cleared"


def test_message_types_and_timestamps() -> None:
    assert [message_type(_event(kind=k)) for k in ("PRIVMSG", "CLEARMSG", "NOTICE", "WALLOPS")] == [
        1,
        13,
        6,
        -1,
    ]
    assert timestamp(1686947117960) == "2023-06-16T20:25:17.960Z"
    assert timestamp(0) == "1970-01-01T00:00:00Z"


def test_a_stored_lines_text_line_is_its_events_whether_read_the_short_way_or_parsed() -> None:
    events = every_event()
    assert len(events) >= 600  # 600 written; the real lines too where ../shared is here
    for event, line in stored_lines(events):
        assert log_text_line(line) == text_line(event), event.raw
        assert log_text_bytes(line) == f"{text_line(event)}\n".encode(), event.raw
        assert line_text(line) == friendly_text(event), event.raw


def test_a_text_line_escapes_what_the_short_way_reads() -> None:
    line = LogLine(
        ":eve!e@h PRIVMSG #c :\x1b[2Jfake\r\n[2017-01-01 00:00:00] #c admin: hi", "m", 0, None, "c"
    )
    assert (
        log_text_line(line)
        == "[1970-01-01 00:00:00] #c eve: \\x1b[2Jfake\\r\\n[2017-01-01 00:00:00] #c admin: hi"
    )


@given(st.integers(min_value=-(10**12), max_value=253_402_300_799_999))
def test_times_are_strftimes_in_utc_whatever_the_second(ms: int) -> None:
    moment = datetime.fromtimestamp(ms // 1000, UTC)
    head = moment.strftime("%Y-%m-%dT%H:%M:%S")
    assert timestamp(ms) == (f"{head}.{ms % 1000:03d}Z" if ms % 1000 else f"{head}Z")
    event = ChatEvent(message_id="m", kind="PRIVMSG", channel="c", sent_at=ms, received_at=ms, raw="x")
    line = text_line(event)
    assert line.startswith(f"[{moment.strftime('%Y-%m-%d %H:%M:%S')}] #c ")


def test_a_deleted_message_is_not_shown_as_said_again() -> None:
    event = _event(kind="CLEARMSG", user_login="alice", text="to be deleted", tags={"login": "alice"})
    assert friendly_text(event) == ""  # rustlog's user_friendly_text of a ClearMsg
    assert full_message(event)["systemText"] == "a message of alice was deleted"
    assert text_line(event) == "[2017-03-11 20:20:01] #forsen a message of alice was deleted: to be deleted"


def test_a_usernotice_text_loses_its_action_wrapper() -> None:
    tags = {"system-msg": "randers subscribed."}
    event = _event(kind="USERNOTICE", user_login="randers", text="\x01ACTION Kappa\x01", tags=tags)
    assert friendly_text(event) == "randers subscribed. Kappa"


# The web frontends, read from their sources: justlog's (gempir/justlog web/src) asks ``?json``; its
# Message.tsx prints ``systemText`` (in italics) then ``text``, with the ``emotes`` tag's positions (useLog.ts
# parseEmotes) counted in ``text``; LogLine.tsx names the line ``displayName``. rustlog's (boring-nick/justlog
# frontend-only-new) asks ``?jsonBasic``, prints ``tags["system-msg"]`` then ``text`` without that prefix.
JUSTLOG_FIELDS = {
    "text",
    "systemText",
    "username",
    "displayName",
    "channel",
    "timestamp",
    "type",
    "raw",
    "id",
}
RUSTLOG_BASIC_FIELDS = {"text", "displayName", "timestamp", "id", "tags"}


def _emote_words(text: str, emotes: str) -> list[str]:
    """The words justlog's and rustlog's frontends draw as emotes: ``runes.substr(text, start, end-start)``
    of each ``id:start-end`` position (code points, as Python indexes)."""
    words = []
    for group in emotes.split("/"):
        for span in group.split(":")[1].split(","):
            start, end = (int(n) for n in span.split("-"))
            words.append(text[start : end + 1])
    return words


def _resub() -> ChatEvent:
    system = "Alice subscribed at Tier 1. They've subscribed for 3 months!"
    return _event(
        kind="USERNOTICE",
        user_login="alice",
        display_name="Alice",
        text="Kappa hi",
        tags={"system-msg": system, "emotes": "25:0-4", "login": "alice", "msg-id": "resub", "id": "u-1"},
    )


def test_json_usernotice_is_justlogs_text_the_users_words_and_system_text_apart() -> None:
    event = _resub()
    message = json_message(event)
    assert JUSTLOG_FIELDS | {"tags"} == set(message)
    assert message["text"] == "Kappa hi"  # justlog: message.Message, the user's words only
    assert message["systemText"] == event.tags["system-msg"]
    assert (message["username"], message["displayName"], message["id"], message["type"]) == (
        "alice",
        "Alice",
        "u-1",
        4,
    )
    assert _emote_words(message["text"], message["tags"]["emotes"]) == ["Kappa"]
    # without words: the system message alone, in systemText
    bare = json_message(_event(kind="USERNOTICE", tags={"system-msg": "x subscribed."}))
    assert (bare["text"], bare["systemText"]) == ("", "x subscribed.")


def test_json_basic_usernotice_is_rustlogs_system_message_then_words() -> None:
    event = _resub()
    basic = basic_message(event)
    assert set(basic) == RUSTLOG_BASIC_FIELDS
    system = event.tags["system-msg"]
    assert basic["text"] == f"{system} Kappa hi"
    # rustlog's Message.tsx: text without "<system-msg> ", the emotes indexed in what is left
    shown = basic["text"].replace(basic["tags"]["system-msg"] + " ", "")
    assert _emote_words(shown, basic["tags"]["emotes"]) == ["Kappa"]


def test_json_clearchat_names_its_target_and_says_it_once() -> None:
    timeout = _event(kind="CLEARCHAT", text="alice", tags={"ban-duration": "600", "target-user-id": "7"})
    message = json_message(timeout)
    assert JUSTLOG_FIELDS | {"tags"} == set(message)
    assert (message["username"], message["displayName"]) == ("alice", "alice")
    assert (message["text"], message["systemText"]) == ("", "alice has been timed out for 600 seconds")
    ban = json_message(_event(kind="CLEARCHAT", text="alice"))
    assert (ban["username"], ban["text"], ban["systemText"]) == ("alice", "", "alice has been banned")
    cleared = json_message(_event(kind="CLEARCHAT"))
    assert (cleared["username"], cleared["text"], cleared["systemText"]) == ("", "", "Chat has been cleared")


def test_json_basic_clearchat_is_rustlogs_target_and_sentence() -> None:
    basic = basic_message(_event(kind="CLEARCHAT", text="alice"))
    assert (basic["displayName"], basic["text"]) == ("alice", "alice has been banned")


def test_json_basic_clearmsg_says_whose_message_was_deleted() -> None:
    # rustlog's LogLine.tsx prints "displayName: text": with rustlog's empty text a deletion that chatlog
    # keeps in the user's log (rustlog keeps it in none) was drawn as "troll:" and nothing
    deleted = _event(kind="CLEARMSG", user_login="troll", text="spam", tags={"login": "troll"})
    basic = basic_message(deleted)
    assert set(basic) == RUSTLOG_BASIC_FIELDS
    assert (basic["displayName"], basic["text"]) == ("troll", "a message of troll was deleted")
    assert full_message(deleted)["text"] == ""  # ?ndjson and /api/live: rustlog's FullMessage, unchanged


def test_json_is_the_full_message_for_every_other_kind() -> None:
    for event in every_event():
        if event.kind not in ("USERNOTICE", "CLEARCHAT"):
            assert json_message(event) == full_message(event), event.raw
