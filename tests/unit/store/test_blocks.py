"""store/blocks.py: an event framed once (its stored line, id, keys and chat split), a partition's lines into
blocks (in line order, a line once by its id, cut at MAX_BLOCK_LINES and MAX_BLOCK_CHARS, a channel's at each
UTC hour, a user's not), block ids that depend on the lines only, and the partitions of both copies of a
line (a channel's day, a filed-under user's month) in the part the writer's rule gives."""

from __future__ import annotations

import random
import uuid
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.irc_parse import parse_line, tag_section
from core.irc_tags import plain_tags
from core.testing import chat_events, twitch_event
from schemas.chat_event import ChatEvent
from store import frame
from store.blocks import (
    BLOCK_NAMESPACE,
    CHANNEL,
    CHANNEL_SPAN_MS,
    MAX_BLOCK_CHARS,
    MAX_BLOCK_LINES,
    USER,
    Framed,
    Table,
    block_id,
    blocks_of,
    chat_split,
    framed,
    partitions,
)
from store.keys import (
    channel_key,
    channel_part,
    day_of,
    filed_under,
    is_canonical_uuid,
    line_order,
    message_id_bytes,
    month_of,
    user_part,
    uuid_text,
)
from store.stored_line import VERBATIM, restore
from tests.unit.store.stored_lines import NOW, T, events_of_peer_lines, every_event

HOUR = 3_600_000


# -- one event framed -----------------------------------------------------------------------------------


def test_an_event_is_framed_with_its_stored_line_id_keys_and_order() -> None:
    for event in every_event():
        item = framed(event, origin=("record", 0, 1))
        sent, mid, stored, received, split, who = item.line
        assert (sent, received, who) == (event.sent_at, event.received_at, filed_under(event))
        assert mid == message_id_bytes(event.message_id)
        assert item.channel_key == channel_key(event.channel_id, event.channel) and item.user_key == who
        assert item.order == line_order(sent, mid) and item.origin == ("record", 0, 1)
        assert split == chat_split(event)
        # the reader has the uuid's text: the line comes back whole with it
        assert restore(stored, uuid_text(mid), sent) == event.raw
        if is_canonical_uuid(event.message_id) and f"id={event.message_id}" in event.raw:
            assert event.message_id not in stored  # a Twitch id is left out: the frame holds it


def test_an_id_given_is_the_one_framed_and_an_id_cassandra_cannot_hold_is_refused() -> None:
    event = chat_events(1, channels=1, now_ms=T)[0]
    given_id = uuid.uuid4().bytes
    assert framed(event, mid=given_id).line[1] == given_id
    bad = twitch_event("PRIVMSG", "c", sent_at=T, login="bob", text="hi", message_id="a\ud800b")
    with pytest.raises(ValueError):
        framed(bad)


@pytest.mark.parametrize(
    ("line", "split"),
    [
        (":bob!b@h PRIVMSG #Chan :hi there", (("chan", "bob", "hi there"), False)),
        (":bob!b@h PRIVMSG #c :\x01ACTION waves\x01", (("c", "bob", "waves"), True)),
        (":bob!b@h PRIVMSG #c :\x01ACTION \x01", (("c", "bob", ""), True)),
        (":bob!b@h PRIVMSG #c :", (("c", "bob", ""), False)),
        (
            "@id=;x=1 :bob!b@h PRIVMSG #c :hi",
            (("c", "bob", "hi"), False),
        ),  # stored verbatim, split all the same
        ("@login=al :bob!b@h PRIVMSG #c :hi", (("c", "al", "hi"), False)),  # the event's sender: the tag's
        ("PRIVMSG #c hello", (("c", None, "hello"), False)),  # no sender, no colon
        (":bob!b@h PRIVMSG #c :\x01ACTION\x01", (None, False)),  # an action, but not head + its text
        (":bob!b@h PRIVMSG #c :\x01ACTION waves", (None, False)),  # no closing \x01: the same
        (":bob!b@h PRIVMSG #c :\r\r", (None, False)),  # the raw line ends in a CR
        (":bob!b@h PRIVMSG #c", (None, False)),  # no text
        ("@room-id=1 :tmi.twitch.tv CLEARCHAT #c :bob", (None, False)),
        (":bob!b@h NOTICE #c :hi", (None, False)),
    ],
)
def test_a_chat_message_with_a_text_is_split_and_every_other_line_kept_whole(
    line: str, split: tuple[tuple[str, str | None, str] | None, bool]
) -> None:
    event = parse_line(line, received_at=T)
    assert event is not None
    item = framed(event)
    decoded = frame.decode(frame.encode([item.line]))
    assert (decoded.chats[0], decoded.actions[0]) == split
    assert decoded.rest()[1] == [item.line[2]]  # the stored line whole
    assert item.line[2] == (VERBATIM + event.raw if line.startswith("@id=;") else event.raw)


def test_a_split_is_the_events_for_real_twitch_lines_and_every_kind_chatlog_writes() -> None:
    events = [e for _, e in events_of_peer_lines(NOW)] + chat_events(300, channels=3, now_ms=T)
    split = plain = 0
    for event in events:
        item = framed(event)
        decoded = frame.decode(frame.encode([item.line]))
        chat = decoded.chats[0]
        if chat is not None:
            split += 1
            assert chat == (event.channel, event.user_login, event.text) and event.kind == "PRIVMSG"
            assert decoded.actions[0] == event.is_action
            section = tag_section(event.raw)
            assert decoded.plains[0] == (bool(section) and plain_tags(section))
            plain += decoded.plains[0]
        elif (
            item.line[4] is None
        ):  # no split: not a chat message with a text, or one whose raw line ends in CR
            assert event.kind != "PRIVMSG" or event.text is None or event.raw.endswith("\r"), event.raw
        else:  # a split the line does not end in (an ACTION without its space or closing \x01): none kept
            text, action = item.line[4][2], item.line[4][3]
            assert not item.line[2].endswith(f"\x01ACTION {text}\x01" if action else text), event.raw
    assert split > 250  # chatlog's own chat events alone split 292 (the real lines are not in every clone)
    assert plain > 250  # and their tag sections are plain


# -- a partition's blocks ---------------------------------------------------------------------------------


def _item(sent: int, n: int, *, chars: int = 10, origin: Any = None, user: str | None = "42") -> Framed:
    mid = uuid.UUID(int=n).bytes
    line: frame.Line = (sent, mid, f"{n:0{chars}d}", sent + 5, None, user)
    return Framed(line, "7", user, line_order(sent, mid), origin)


def _lines_of(blocks: list[Any]) -> list[frame.Line]:
    out = []
    for block in blocks:
        decoded = frame.decode(block.frame)
        out += decoded.lines(range(len(decoded)))
    return out


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3 * HOUR), st.integers(0, 60)), min_size=1, max_size=80),
    st.sampled_from([CHANNEL, USER]),
    st.randoms(use_true_random=False),
)
def test_a_partitions_lines_are_each_once_in_line_order_and_the_first_copy_is_kept(
    pairs: list[tuple[int, int]], table: Table, rng: random.Random
) -> None:
    items = [_item(sent, n, origin=i) for i, (sent, n) in enumerate(pairs)]
    rng.shuffle(items)
    key = ("7", 0, 0) if table == CHANNEL else ("7", "42", 202611, 0)
    blocks = blocks_of(table, key, items)
    first: dict[bytes, Framed] = {}
    for item in items:
        first.setdefault(item.line[1], item)
    expected = sorted(first.values(), key=lambda f: f.order)
    assert _lines_of(blocks) == [f.line for f in expected]
    assert [o for b in blocks for o in b.origins] == [f.origin for f in expected]
    for block in blocks:
        lines = _lines_of([block])
        assert (block.table, block.key, block.lines) == (table, key, len(lines))
        assert block.first_at == lines[0][0] == min(line[0] for line in lines)
        assert block.last_at == max(line[0] for line in lines)
        assert block.block == block_id(line[1] for line in lines)
        if table == CHANNEL:
            assert len({line[0] // CHANNEL_SPAN_MS for line in lines}) == 1  # one UTC hour
    if table == USER:
        assert len(blocks) == 1  # a user's lines are not cut by the hour
    else:
        assert len(blocks) == len({f.line[0] // CHANNEL_SPAN_MS for f in expected})


def test_a_block_id_is_the_same_for_the_same_lines_however_they_come() -> None:
    items = [_item(1_000 + n % 5, n) for n in range(50)]
    one = blocks_of(USER, ("7", "42", 202611, 0), items)
    again = blocks_of(USER, ("7", "42", 202611, 0), [*reversed(items), *items[:10]])  # and copies
    assert [(b.block, b.frame) for b in one] == [(b.block, b.frame) for b in again]
    other = blocks_of(USER, ("7", "42", 202611, 0), items[:-1])
    assert other[0].block != one[0].block
    assert one[0].block.version == 5
    pinned = block_id([uuid.UUID(int=1).bytes])  # a re-run batch must make the same rows: never changed
    assert pinned == uuid.UUID(bytes=_sha1(BLOCK_NAMESPACE.bytes + uuid.UUID(int=1).bytes), version=5)


def _sha1(data: bytes) -> bytes:
    import hashlib

    return hashlib.sha1(data).digest()[:16]


def test_a_partition_is_cut_at_the_most_lines_of_a_block() -> None:
    n = 2 * MAX_BLOCK_LINES + 7
    items = [_item(1_000_000 + i // 10, i, chars=1) for i in range(n)]
    blocks = blocks_of(USER, ("7", "42", 202611, 0), items)
    assert [b.lines for b in blocks] == [MAX_BLOCK_LINES, MAX_BLOCK_LINES, 7]
    assert _lines_of(blocks) == [i.line for i in sorted(items, key=lambda f: f.order)]
    assert len({b.block for b in blocks}) == 3


def test_a_partition_is_cut_before_a_line_that_would_take_a_block_past_its_characters() -> None:
    size = MAX_BLOCK_CHARS // 4
    items = [_item(1_000 + i, i, chars=size) for i in range(9)]  # four fit exactly; a fifth is over
    blocks = blocks_of(CHANNEL, ("7", 0, 0), items)
    assert [b.lines for b in blocks] == [4, 4, 1]
    huge = blocks_of(CHANNEL, ("7", 0, 0), [_item(5, 1, chars=MAX_BLOCK_CHARS + 1), _item(6, 2)])
    assert [b.lines for b in huge] == [1, 1]  # a line larger than a block still goes, alone


def test_a_channels_blocks_stop_at_each_utc_hour_and_a_users_do_not() -> None:
    start = 1_700_000_000_000 - 1_700_000_000_000 % HOUR
    items = [
        _item(start + HOUR - 2, 1),
        _item(start + HOUR - 1, 2),
        _item(start + HOUR, 3),
        _item(start + 3 * HOUR, 4),
    ]
    channel = blocks_of(CHANNEL, ("7", day_of(start), 0), items)
    assert [(b.first_at, b.last_at, b.lines) for b in channel] == [
        (start + HOUR - 2, start + HOUR - 1, 2),
        (start + HOUR, start + HOUR, 1),
        (start + 3 * HOUR, start + 3 * HOUR, 1),
    ]
    user = blocks_of(USER, ("7", "42", month_of(start), 0), items)
    assert [(b.first_at, b.last_at, b.lines) for b in user] == [(start + HOUR - 2, start + 3 * HOUR, 4)]


def test_a_block_is_framed_at_the_level_asked() -> None:
    items = [_item(1_000 + i, i, chars=40) for i in range(2_000)]
    live = blocks_of(USER, ("7", "42", 202611, 0), items)
    packed = blocks_of(USER, ("7", "42", 202611, 0), items, level=frame.PACKED_LEVEL)
    assert len(packed[0].frame) < len(live[0].frame) and packed[0].block == live[0].block
    assert _lines_of(packed) == _lines_of(live)


# -- the partitions of both copies ---------------------------------------------------------------------------


def _events() -> list[ChatEvent]:
    at = 1_700_000_000_000  # 2023-11-14 22:13 UTC: the events span the day's end
    return [
        *chat_events(300, channels=3, now_ms=at + HOUR * 3),
        *chat_events(100, channels=2, now_ms=at, ids=False),
        twitch_event("CLEARCHAT", "chan0", sent_at=at),  # nobody's: the channel's only
        twitch_event("NOTICE", "chan1", sent_at=at, text="slow mode"),
    ]


def test_each_line_is_in_its_channels_day_and_its_users_month_in_part_0() -> None:
    items = [framed(e) for e in _events()]
    found = partitions(items, lambda _table, _key: None)
    seen: Counter[tuple[str, bytes]] = Counter()
    for (table, key), run in found.items():
        assert key[-1] == 0
        for item in run:
            sent = item.line[0]
            if table == CHANNEL:
                assert key == (item.channel_key, day_of(sent), 0)
            else:
                assert key == (item.channel_key, item.user_key, month_of(sent), 0)
            seen[(table, item.line[1])] += 1
    assert all(n == 1 for n in seen.values())
    assert sum(t == CHANNEL for t, _ in seen) == len(items)
    assert sum(t == USER for t, _ in seen) == sum(item.user_key is not None for item in items) < len(items)
    assert len({key[1] for table, key in found if table == CHANNEL}) == 2  # two UTC days


def test_a_partition_whose_part_0_is_full_takes_the_rest_into_its_parts() -> None:
    items = [framed(e) for e in _events()]
    full_day = (items[0].channel_key, day_of(items[0].line[0]))
    full_month = (items[0].channel_key, items[0].user_key, month_of(items[0].line[0]))
    asked: list[tuple[Table, tuple[Any, ...]]] = []

    def part_of(table: Table, key: tuple[Any, ...]) -> Any:
        asked.append((table, key))
        if (table, key) == (CHANNEL, full_day):
            return channel_part
        if (table, key) == (USER, full_month):
            return user_part
        return None

    found = partitions(items, part_of)
    for (table, key), run in found.items():
        for item in run:
            sent = item.line[0]
            if table == CHANNEL and key[:2] == full_day:
                assert key[2] == channel_part(sent) >= 1
            elif table == USER and key[:3] == full_month:
                assert key[3] == user_part(sent) >= 1
            else:
                assert key[-1] == 0
    assert {key for table, key in asked if table == CHANNEL} >= {full_day}
    assert any(key[:2] == full_day and key[2] > 0 for table, key in found if table == CHANNEL)
    assert any(key[:3] == full_month and key[3] > 0 for table, key in found if table == USER)
