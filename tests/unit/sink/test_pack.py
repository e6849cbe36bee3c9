"""sink.pack without Cassandra: a partition's rows merged with its old frame (clustering order, a time and id
once, a row's values over the frame's), and the one line a run prints."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest
from schemas.cql import message_uuid
from schemas.packed_month import PackedChat, PackedRow, pack, unpack
from sink.pack import PackReport, _merged, chat_split, packed_frame

from core.irc_parse import parse_line, tag_section
from core.irc_tags import plain_tags
from core.testing import chat_events
from store.stored_line import VERBATIM, strip
from tests.unit.serve.store.stored_lines import NOW, T, events_of_peer_lines, stored_row

V4 = "00000000-0000-4000-8000-00000000000{}"
V1 = str(uuid.UUID(int=(1 << 76) | 5))  # a version-1 (time) uuid: before every v4 of the same millisecond


def _row(sent: int, mid: str, line: str, received: int | None = None) -> SimpleNamespace:
    return SimpleNamespace(sent_ms=sent, mid=mid, line=line, received_ms=received)


def test_rows_and_an_old_frame_merge_in_clustering_order_once_each() -> None:
    old = pack([(1_000, V4.format(1), "old a", 1_001), (3_000, V4.format(3), "old c", None)])
    rows = [
        _row(2_000, V4.format(2), "late b"),
        _row(3_000, V4.format(3), "c again", 3_005),
        _row(1_000, V1, "v1"),
    ]
    assert _merged(rows, old) == [
        (1_000, V1, "v1", None),  # Cassandra's order: the uuid's version first
        (1_000, V4.format(1), "old a", 1_001),
        (2_000, V4.format(2), "late b", None),
        (3_000, V4.format(3), "c again", 3_005),  # the row written again stands for the frame's copy
    ]


def test_rows_alone_keep_a_missing_line_as_empty() -> None:
    assert _merged([_row(5, V4.format(5), None)], None) == [(5, V4.format(5), "", None)]  # type: ignore[arg-type]


def test_the_summary_names_what_was_left_and_why() -> None:
    report = PackReport(months=7, packed=4, rows=1_200, frame_bytes=2_500_000)
    report.skipped["recent"] = 2
    report.skipped["spilled"] = 1
    assert report.summary() == (
        "packed 4 of 7 ended user-month(s): 1200 row(s) into 2.5 MB of frames; left as they are: "
        "2 recent, 1 spilled"
    )
    assert PackReport().summary().endswith("left as they are: none")


# -- the chat split of a row (what a frame stores instead of the line's text) -------------------------------

_MID = "00000000-0000-4000-8000-000000000001"
_T = 1_700_000_000_000


def _split_back(line: str) -> tuple[PackedChat | None, bool]:
    """The chat (and is_action) a one-row frame of ``line`` gives back; the line whole as it went in."""
    ((sent, mid, back, received, chat, action),) = unpack(packed_frame([(_T, _MID, line, None)]))
    assert (sent, mid, back, received) == (_T, _MID, line, None)
    return chat, action


@pytest.mark.parametrize(
    ("line", "split"),
    [
        (":bob!b@h PRIVMSG #Chan :hi there", (("chan", "bob", "hi there"), False)),
        (":bob!b@h PRIVMSG #c :\x01ACTION waves\x01", (("c", "bob", "waves"), True)),
        (":bob!b@h PRIVMSG #c :", (("c", "bob", ""), False)),
        ("@id=;x=1 :bob!b@h PRIVMSG #c :hi", None),  # stored VERBATIM (below)
        (":bob!b@h PRIVMSG #c :\x01ACTION\x01", (None, False)),  # an action, but not head + its text
        (":bob!b@h PRIVMSG #c :\x01ACTION waves", (None, False)),  # no closing \x01: the same
        (":bob!b@h PRIVMSG #c :hi\r", (None, False)),  # the parser leaves the \r out of its raw line
        (":bob!b@h PRIVMSG #c :\r\r", (None, False)),
        (":bob!b@h PRIVMSG #c", (None, False)),  # no text
        ("@login=al :bob!b@h PRIVMSG #c :hi", (None, False)),  # the sender is the tag's: parsed
        (":bob!b@h PRIVMSG #c a :hi", (None, False)),  # the general parameter shape
        ("@room-id=1 :tmi.twitch.tv CLEARCHAT #c :bob", (None, False)),
        (":bob!b@h NOTICE #c :hi", (None, False)),
        ("not irc at all", (None, False)),
        ("", (None, False)),
    ],
)
def test_a_chat_message_with_a_text_is_split_and_every_other_line_kept_whole(
    line: str, split: tuple[PackedChat | None, bool] | None
) -> None:
    stored = strip(line, _MID, _T)
    if split is None:  # a line the stored-line format keeps VERBATIM: split all the same
        assert stored == VERBATIM + line
        split = (("c", "bob", "hi"), False)
    assert _split_back(stored) == split


def test_a_split_is_the_lines_parsed_event_for_real_twitch_lines() -> None:
    events = [e for _, e in events_of_peer_lines(NOW)] + chat_events(300, channels=3, now_ms=T)
    split = plain = 0
    for event in events:
        line, key, sent_at, received_at = stored_row(event)
        chat = chat_split((sent_at, str(key), line, received_at))
        if chat is not None:
            split += 1
            assert chat[:4] == (event.channel, event.user_login, event.text, event.is_action)
            section = tag_section(event.raw)
            assert chat[4] == (bool(section) and plain_tags(section))
            plain += chat[4]
        else:
            assert (
                event.kind != "PRIVMSG"
                or event.text is None
                or "login" in event.tags
                or event.raw[-1:] == "\r"
            )
    assert split > 250  # chatlog's own chat events alone split 292 (the real lines are not in every clone)
    assert plain > 250  # and their tag sections are plain


def test_a_month_of_real_lines_packs_smaller_than_its_lines_and_no_larger_than_whole() -> None:
    from bench.storage import corpus

    rows: list[PackedRow] = []
    for i, raw in enumerate(corpus(300)):
        event = parse_line(raw, received_at=_T)
        assert event is not None
        mid = str(message_uuid(event.message_id))
        rows.append((event.sent_at, mid, strip(raw, mid, event.sent_at), event.received_at + i))
    frame = packed_frame(rows)
    assert [row[:4] for row in unpack(frame)] == rows
    assert all(row[4] is not None for row in unpack(frame))
    assert len(frame) < sum(len(row[2]) for row in rows) / 3
    assert len(frame) <= len(pack(rows)) + len(rows)  # the split costs no more than a byte a row
