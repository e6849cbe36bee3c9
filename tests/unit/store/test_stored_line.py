"""store/stored_line.py (issue 17, layout E64s): the id and tmi-sent-ts values a frame holds beside the line
(its message uuid and send time) are left out of the stored line, and restore gives back the exact line, for
every line."""

from __future__ import annotations

import uuid

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.irc_parse import MalformedLine, parse_line
from store.keys import message_uuid
from store.stored_line import VERBATIM, restore, strip
from tests.peer_lines import PEER_LINES, peer_lines

MID = "b34ccfc7-4977-403a-8a94-33c6bac34fb8"
TS = 1594545155039
LINE = (
    "@badge-info=;badges=broadcaster/1;color=#0000FF;display-name=JuN1oRRRR;emotes=;flags=;"
    f"id={MID};mod=0;room-id=29;subscriber=0;tmi-sent-ts={TS};turbo=0;user-id=29;user-type= "
    ":jun1orrrr!jun1orrrr@jun1orrrr.tmi.twitch.tv PRIVMSG #jun1orrrr :id=x;tmi-sent-ts=1 ünïcödé"
)


def roundtrip(raw: str, message_id: str | uuid.UUID, sent_at: int) -> str:
    return restore(strip(raw, message_id, sent_at), message_id, sent_at)


def test_a_twitch_line_is_stored_without_the_two_values_and_restored_exactly() -> None:
    stored = strip(LINE, MID, TS)
    assert len(stored) == len(LINE) - len(MID) - len(str(TS))
    assert ";id=;" in stored and ";tmi-sent-ts=;" in stored
    assert MID not in stored and str(TS) not in stored
    assert stored.endswith(":id=x;tmi-sent-ts=1 ünïcödé")  # the text is never touched
    assert restore(stored, MID, TS) == LINE
    assert restore(stored, uuid.UUID(MID), TS) == LINE  # the reader has the row's uuid


@pytest.mark.parametrize(
    "raw",
    [
        f"@id={MID};tmi-sent-ts={TS} PRIVMSG #c :x",  # first tags
        f"@room-id=1;tmi-sent-ts={TS};id={MID} PRIVMSG #c :x",  # last tag, any order
        f"@tmi-sent-ts={TS};id={MID}",  # no space: the whole line is the tag section
    ],
)
def test_the_tags_are_stripped_wherever_they_are(raw: str) -> None:
    stored = strip(raw, MID, TS)
    assert MID not in stored and str(TS) not in stored
    assert restore(stored, MID, TS) == raw


@pytest.mark.parametrize(
    ("raw", "message_id", "sent_at"),
    [
        (LINE, "00000000-0000-0000-0000-000000000000", TS + 1),  # another id and time: the line keeps both
        (LINE.replace(MID, MID.upper()), MID, 0),  # not the uuid's canonical text
        ("@id=a\\sb;tmi-sent-ts=01 PRIVMSG #c :x", "a b", 1),  # escaped value, leading zero
        ("@msgid=abc;time=2020-01-01T00:00:00Z :n!u@h PRIVMSG #c :x", "abc", TS),  # no id tag
        (":n!u@h PRIVMSG #c :id=abc", "abc", TS),  # no tags at all
        ("@id;tmi-sent-ts PRIVMSG #c :x", "id", TS),  # keys without a value
        (f"@id=other;id={MID} PRIVMSG #c :x", MID, TS),  # only the first `id` counts
    ],
)
def test_values_that_are_not_the_rows_stay_in_the_line(raw: str, message_id: str, sent_at: int) -> None:
    expected = raw.replace(f"tmi-sent-ts={sent_at}", "tmi-sent-ts=")
    assert strip(raw, message_id, sent_at) == expected
    assert roundtrip(raw, message_id, sent_at) == raw


@pytest.mark.parametrize(
    "raw",
    [
        f"@id=;tmi-sent-ts={TS} PRIVMSG #c :x",  # restore would fill the empty id
        f"@id={MID};tmi-sent-ts= PRIVMSG #c :x",  # ... or the empty time
        VERBATIM + "odd line",
        VERBATIM,
    ],
)
def test_a_line_restore_would_change_is_stored_verbatim(raw: str) -> None:
    assert strip(raw, MID, TS) == VERBATIM + raw
    assert roundtrip(raw, MID, TS) == raw


def test_an_empty_line_and_an_empty_id() -> None:
    assert strip("", MID, TS) == "" and restore("", MID, TS) == ""
    raw = f"@id=;tmi-sent-ts={TS} X"
    assert roundtrip(raw, "", TS) == raw


# -- every line: hypothesis -----------------------------------------------------------------------------

_UUIDS = st.uuids().map(str)
_TIMES = st.integers(min_value=-(2**63), max_value=2**63 - 1)
_TAG_TEXT = st.text(alphabet=st.characters(exclude_characters="; "), max_size=12)


@st.composite
def tagged_lines(draw: st.DrawFn) -> tuple[str, str, int]:
    """A line whose tag section mixes the row's id and time, other values, empty and bare tags."""
    message_id = draw(st.one_of(_UUIDS, st.text(max_size=40)))
    sent_at = draw(_TIMES)
    key = st.sampled_from(["id", "tmi-sent-ts", "room-id", "user-id", "msgid", "badges"]) | _TAG_TEXT
    value = st.sampled_from([message_id, str(sent_at), "", "\\s\\:\\\\", MID]) | _TAG_TEXT
    element = st.one_of(st.tuples(key, value).map("=".join), key)
    elements = draw(st.lists(element, max_size=8))
    rest = draw(st.text(max_size=60))
    space = draw(st.sampled_from([" ", ""]))
    return "@" + ";".join(elements) + (space + rest if space else ""), message_id, sent_at


@settings(max_examples=600, deadline=None)
@given(tagged_lines())
@example((f"@id={MID};tmi-sent-ts=", MID, TS))
def test_restore_of_strip_is_the_line_for_tagged_lines(case: tuple[str, str, int]) -> None:
    raw, message_id, sent_at = case
    assert roundtrip(raw, message_id, sent_at) == raw


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=200), st.one_of(_UUIDS, st.text(max_size=40)), _TIMES)
def test_restore_of_strip_is_the_line_for_any_text(raw: str, message_id: str, sent_at: int) -> None:
    assert roundtrip(raw, message_id, sent_at) == raw


# -- the real Twitch lines other client libraries assert (shared test data, read at run time) ------------

NOW = 1_900_000_000_000  # receive time after every line's tmi-sent-ts


def _row_key(raw: str) -> tuple[str, int] | None:
    """(str(message uuid), sent_at) of the row a line becomes, as the sink will key it; None if no event."""
    try:
        event = parse_line(raw, received_at=NOW)
    except MalformedLine:
        return None
    if event is None:
        return None
    return str(message_uuid(event.message_id)), event.sent_at


def test_every_real_twitch_line_is_restored_exactly() -> None:
    items = peer_lines()
    if not items:
        pytest.skip(f"{PEER_LINES} is not here")
    stripped = events = 0
    for item in items:
        raw = item["raw"]
        key = _row_key(raw)
        message_id, sent_at = key if key else (MID, TS)
        stored = strip(raw, message_id, sent_at)
        assert restore(stored, message_id, sent_at) == raw, item["source"]
        events += key is not None
        if key and f"id={message_id}" in raw:
            assert message_id not in stored, item["source"]
            stripped += 1
    assert len(items) == 194 and events >= 100
    assert stripped >= 40  # the PRIVMSG/USERNOTICE/CLEARMSG lines with a Twitch uuid id


def test_the_event_is_derived_again_from_the_stored_line_and_the_key() -> None:
    """What the channel table drops is derivable: parsing the restored line with the row's sent_at as the
    receive time gives the same event but for received_at and ingester (which the line does not hold)."""
    items = peer_lines()
    if not items:
        pytest.skip(f"{PEER_LINES} is not here")
    checked = 0
    for item in items:
        for received_at in (NOW, TS):  # TS: before some lines' tmi-sent-ts, which is then implausible
            try:
                event = parse_line(item["raw"], received_at=received_at, ingester="w1")
            except MalformedLine:
                continue
            if event is None:
                continue
            key = message_uuid(event.message_id)
            stored = strip(event.raw, key, event.sent_at)
            again = parse_line(restore(stored, key, event.sent_at), received_at=event.sent_at)
            assert again is not None, item["source"]
            assert again == msgspec.structs.replace(event, received_at=event.sent_at, ingester=None)
            checked += 1
    assert checked >= 200


def _restored_by_elements(stored: str, message_id: str, sent_at: int) -> str:
    """restore() written plainly: the tag section split into elements, the first whose key is ``id`` (and
    the first ``tmi-sent-ts``) filled when it is ``key=``."""
    if stored[:1] != "@":
        return stored[1:] if stored[:1] == VERBATIM else stored
    section, space, rest = stored[1:].partition(" ")
    elements = section.split(";")
    for key, value in (("id", message_id), ("tmi-sent-ts", str(sent_at))):
        for i, element in enumerate(elements):
            if element.partition("=")[0] == key:
                if element == key + "=":
                    elements[i] = element + value
                break
    return "@" + ";".join(elements) + space + rest


_PIECES = st.sampled_from(["id", "id=", "tmi-sent-ts", "tmi-sent-ts=", "x", "=", ";", " ", "idx=", "1", "@"])


@given(st.lists(_PIECES, max_size=12).map("".join), st.text(max_size=8), _TIMES)
def test_restore_fills_the_first_empty_element_of_each_key_in_any_line(
    line: str, message_id: str, sent_at: int
) -> None:
    for stored in (line, "@" + line):
        assert restore(stored, message_id, sent_at) == _restored_by_elements(stored, message_id, sent_at)


_ELEMENT_NAMES = "id id= id=v tmi-sent-ts tmi-sent-ts= tmi-sent-ts=1 idx= tmi-sent-tsx= a=b @"
_ELEMENTS = st.sampled_from([*_ELEMENT_NAMES.split(" "), ""])


@given(
    st.lists(_ELEMENTS, max_size=8),
    st.sampled_from([[], ["id="], ["tmi-sent-ts=", "id="], ["id=", "tmi-sent-ts="]]),
    st.sampled_from([" :a!a@a PRIVMSG #c :id=;tmi-sent-ts=;", " ", ""]),
    st.text(max_size=8),
    _TIMES,
)
def test_restore_of_sections_holding_both_empty_elements_is_by_the_elements(
    elements: list[str], last: list[str], rest: str, message_id: str, sent_at: int
) -> None:
    """restore's shortcut for a Twitch line (`;id=;` and `;tmi-sent-ts=;` found in the section) fills what
    the element rule fills, whatever comes before them (an `id` without a value, `idx=`, a repeated key)."""
    stored = "@" + ";".join(elements + last) + rest
    assert restore(stored, message_id, sent_at) == _restored_by_elements(stored, message_id, sent_at)
