"""The frame of a packed user-month (schemas.packed_month): every row back as it went in, in order, with the
chat split it was packed with where the line ends in that text exactly; a version 1 frame read as before;
anything that is not a frame is a PackError, never garbage rows."""

from __future__ import annotations

import cramjam
import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from schemas.packed_month import (
    VERSION,
    ChatSplit,
    PackedRow,
    PackError,
    UnpackedRow,
    pack,
    unpack,
    unpack_frame,
)
from tests.packed_frames import v1_frame

_TIME = st.integers(min_value=0, max_value=253_402_300_799_999)
_ROW = st.tuples(_TIME, st.uuids().map(str), st.text(max_size=600), st.none() | _TIME)
_SPLIT = st.none() | st.tuples(
    st.text(min_size=1, max_size=25),
    st.none() | st.text(max_size=25),
    st.text(max_size=100),
    st.booleans(),
    st.booleans(),
)


def _whole(rows: list[PackedRow]) -> list[UnpackedRow]:
    return [(*row, None, False) for row in rows]


def _trailing(split: ChatSplit) -> str:
    return f"\x01ACTION {split[2]}\x01" if split[3] else split[2]


@given(st.lists(_ROW, min_size=1, max_size=50))
def test_every_row_comes_back_as_it_went_in(rows: list[PackedRow]) -> None:
    rows.sort(key=lambda r: r[0])
    assert unpack(pack(rows)) == _whole(rows)


@given(st.lists(st.tuples(_ROW, _SPLIT, st.booleans()), min_size=1, max_size=50))
def test_a_line_that_ends_in_its_chats_text_comes_back_whole_with_that_chat(
    items: list[tuple[PackedRow, ChatSplit | None, bool]],
) -> None:
    rows: list[PackedRow] = []
    splits: list[ChatSplit | None] = []
    expected: list[UnpackedRow] = []
    for (sent, mid, start, received), split, ends_so in items:
        line = start + _trailing(split) if split is not None and ends_so else start
        rows.append((sent, mid, line, received))
        splits.append(split)
        if split is not None and line.endswith(_trailing(split)):
            expected.append((sent, mid, line, received, split[:3], split[3]))
        else:
            expected.append((sent, mid, line, received, None, False))
    value = pack(rows, splits)
    assert unpack(value) == expected
    plains = [
        split is not None and row[4] is not None and split[4]
        for row, split in zip(expected, splits, strict=True)
    ]
    assert unpack_frame(value).plains == plains  # as split, where it is


def test_times_out_of_order_come_back_too() -> None:
    rows: list[PackedRow] = [(2_000, "b", "x", None), (1_000, "a", "", 999), (1_000, "c", "!raw", 5_000)]
    assert unpack(pack(rows, level=1)) == _whole(rows)


def test_a_split_is_made_only_where_the_line_ends_in_its_text_exactly() -> None:
    rows: list[PackedRow] = [
        (1, "a", ":a!a@a PRIVMSG #c :hi", None),
        (2, "b", ":a!a@a PRIVMSG #c :\x01ACTION waves\x01", None),
        (3, "c", ":a!a@a PRIVMSG #c :\x01ACTION waves", None),  # no closing \x01: not the action form
        (4, "d", ":a!a@a PRIVMSG #c :hi\r", None),
        (5, "e", ":b!b@b PRIVMSG #d :yo", 7),
        (6, "f", "NOTICE #c :x", None),
    ]
    splits: list[ChatSplit | None] = [
        ("c", "a", "hi", False, True),
        ("c", "a", "waves", True, True),
        ("c", "a", "waves", True, True),
        ("c", "a", "hi", False, True),
        ("d", "b", "yo", False, False),
        None,
    ]
    got = unpack(pack(rows, splits))
    assert [row[:4] for row in got] == rows
    assert [(row[4], row[5]) for row in got] == [
        (("c", "a", "hi"), False),
        (("c", "a", "waves"), True),
        (None, False),
        (None, False),
        (("d", "b", "yo"), False),  # a second sender: the frame's table has two
        (None, False),
    ]


def test_a_version_1_frame_reads_as_its_rows_without_chats() -> None:
    rows: list[PackedRow] = [(1_000, "a", ":a!a@a PRIVMSG #c :hi", 1_001), (1_005, "b", "!x", None)]
    assert unpack(v1_frame(rows)) == _whole(rows)


def test_nothing_to_pack_is_refused() -> None:
    with pytest.raises(ValueError, match="nothing to pack"):
        pack([])
    with pytest.raises(ValueError, match="1 chat splits for 2 rows"):
        pack([(1, "a", "x", None), (2, "b", "y", None)], [None])


def _frame(*values: object) -> bytes:
    return bytes(cramjam.zstd.compress(msgspec.msgpack.encode(list(values))))


@pytest.mark.parametrize(
    "value",
    [
        b"",
        b"not zstd at all",
        bytes(cramjam.zstd.compress(b"\x93\x01\x02\x03")),  # zstd, but not a frame's msgpack
        _frame(1, 0, [0], ["a"], ["l"]),  # a column short
        _frame(1, 0, [0, 1], ["a"], ["l"], [None]),
        _frame(2, 0, [0], ["a"], ["l"], [None], ["c"], ["u"], [0], ["t"]),  # a column short
        _frame(2, 0, [0, 1], ["a"], ["l"], [None], ["c"], ["u"], [0], ["t"], [False]),
        _frame(2, 0, [0], ["a"], ["l"], [None], ["c"], [], [0], ["t"], [False]),  # the table's
        _frame(2, 0, [0], ["a"], ["l"], [None], [], [], [0], ["t"], [False]),  # no sender for a text
        _frame(2, 0, [0], ["a"], ["l"], [None], ["c", "d"], ["u", "v"], [2], ["t"], [False]),
        _frame(2, 0, [0], ["a"], ["l"], [None], ["c", "d"], ["u", "v"], [-1], ["t"], [False]),
        _frame(3, 0, [0], ["a"], ["l"], [None], ["c"], ["u"], [0], ["t"], [False]),  # no plains
        _frame(3, 0, [0], ["a"], ["l"], [None], ["c"], ["u"], [0], ["t"], [False], [True, True]),
    ],
)
def test_what_is_not_a_frame_is_a_pack_error(value: bytes) -> None:
    with pytest.raises(PackError, match="packed month"):
        unpack(value)


def test_a_newer_version_is_refused_by_name() -> None:
    frame = _frame(VERSION + 1, 0, [0], ["a"], ["l"], [None])
    with pytest.raises(PackError, match=f"version {VERSION + 1}"):
        unpack(frame)


@given(st.lists(_ROW, min_size=1, max_size=40), _TIME, _TIME, st.booleans())
def test_a_window_is_the_rows_sent_in_it_in_time_order(
    rows: list[PackedRow], lo: int, hi: int, reverse: bool
) -> None:
    rows.sort(key=lambda r: r[0])
    frame = unpack_frame(pack(rows))
    expected = [i for i, row in enumerate(rows) if lo <= row[0] < hi]
    assert list(frame.window(lo, hi, reverse)) == (expected[::-1] if reverse else expected)
    assert frame.sents == [row[0] for row in rows]


@given(st.lists(_ROW, min_size=1, max_size=40), _TIME, _TIME, st.booleans())
def test_a_window_of_rows_out_of_time_order_is_theirs_in_the_frames_order(
    rows: list[PackedRow], lo: int, hi: int, reverse: bool
) -> None:
    frame = unpack_frame(pack(rows))  # as packed, not sorted (a frame chatlog pack did not write)
    expected = [i for i, row in enumerate(rows) if lo <= row[0] < hi]
    assert list(frame.window(lo, hi, reverse)) == (expected[::-1] if reverse else expected)
    assert frame.rows(frame.window(lo, hi, False)) == [unpack(pack(rows))[i] for i in expected]


def test_the_ids_and_lines_of_a_frame_are_read_when_asked_and_checked_then() -> None:
    value = _frame(
        VERSION,
        7,
        [0, 1],
        ["a", "b"],
        ["h"],
        [None, None],
        ["#c"],
        ["u"],
        [0, 0],
        ["hi", None],
        [False, False],
        [True, False],
    )
    read = unpack_frame(value)  # the line column is one short: found when the lines are read, not before
    assert read.sents == [7, 8] and read.chats == [("#c", "u", "hi"), None] and read.actions == [False, False]
    assert read.plains == [True, False]
    with pytest.raises(PackError, match="columns of different lengths"):
        read.rest()
    with pytest.raises(PackError, match="columns of different lengths"):
        unpack(value)


def test_a_version_2_frame_reads_as_its_rows_with_no_plain_tags() -> None:
    value = _frame(
        2, 7, [0], ["a"], ["@x=1 :u!u@u PRIVMSG #c :"], [None], ["#c"], ["u"], [0], ["hi"], [False]
    )
    frame = unpack_frame(value)
    assert frame.chats == [("#c", "u", "hi")] and frame.plains == [False]
    assert unpack(value) == [(7, "a", "@x=1 :u!u@u PRIVMSG #c :hi", None, ("#c", "u", "hi"), False)]
