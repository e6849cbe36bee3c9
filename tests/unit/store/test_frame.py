"""store/frame.py: a block's lines as one value. A version 5 frame gives every column back as it went in
(send and receive times, ids, stored lines, the chat split where the line ends in its text exactly, the
filed-under users), raw msgpack up to RAW_MAX_BYTES and Zstandard above; its window is the lines sent in a
range; the packed user-months of the layout before (versions 1 to 3, as ``schemas/packed_month.py`` wrote
them: tests/packed_frames.py) read as they were; anything that is not a frame is a FrameError, never
garbage lines."""

from __future__ import annotations

import uuid

import cramjam
import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from store.frame import (
    LIVE_LEVEL,
    PACKED_LEVEL,
    RAW_MAX_BYTES,
    VERSION,
    FrameError,
    Line,
    content_size,
    decode,
    encode,
)
from store.keys import line_order
from tests.packed_frames import ChatSplit, PackedRow, old_frame, v1_frame

ZSTD = b"\x28\xb5\x2f\xfd"
_TIME = st.integers(min_value=0, max_value=253_402_300_799_999)
_ID = st.binary(min_size=16, max_size=16)
_SPLIT = st.none() | st.tuples(
    st.text(min_size=1, max_size=25),
    st.none() | st.text(max_size=25),
    st.text(max_size=100),
    st.booleans(),
    st.booleans(),
)
_WHO = st.none() | st.sampled_from(["42", "43", "login:bob", "id:x"])


def _trailing(split: ChatSplit) -> str:
    return f"\x01ACTION {split[2]}\x01" if split[3] else split[2]


@st.composite
def _lines(draw: st.DrawFn, max_size: int = 40) -> list[Line]:
    """Lines in line order, each with a stored line that ends in its chat's text or not."""
    out: list[Line] = []
    for sent, mid, head, received, split, ends_so, who in draw(
        st.lists(
            st.tuples(_TIME, _ID, st.text(max_size=300), st.none() | _TIME, _SPLIT, st.booleans(), _WHO),
            min_size=1,
            max_size=max_size,
            unique_by=lambda t: t[1],
        )
    ):
        stored = head + _trailing(split) if split is not None and ends_so else head
        out.append((sent, mid, stored, received, split, who))
    return sorted(out, key=lambda line: line_order(line[0], line[1]))


def _as_read(line: Line) -> Line:
    """A line as a frame gives it back: its split only where its stored line ends in the split's text."""
    split = line[4]
    if split is not None and not line[2].endswith(_trailing(split)):
        return (*line[:4], None, line[5])
    return line


@settings(max_examples=300, deadline=None)
@given(_lines())
def test_every_column_comes_back_as_it_went_in(lines: list[Line]) -> None:
    value = encode(lines)
    frame = decode(value)
    assert frame.version == VERSION == 5 and len(frame) == len(lines)
    assert frame.lines(range(len(lines))) == [_as_read(line) for line in lines]
    assert frame.sents == [line[0] for line in lines]
    assert frame.ids() == [line[1] for line in lines]
    _ids, stored, received = frame.rest()
    assert (stored, received) == ([line[2] for line in lines], [line[3] for line in lines])
    assert frame.whos == [line[5] for line in lines]
    read = [_as_read(line)[4] for line in lines]
    assert frame.chats == [None if s is None else s[:3] for s in read]
    assert frame.actions == [s is not None and s[3] for s in read]
    assert frame.plains == [s is not None and s[4] for s in read]


@settings(max_examples=200, deadline=None)
@given(_lines(max_size=12), st.sampled_from([1, LIVE_LEVEL, PACKED_LEVEL]))
def test_a_frame_is_raw_msgpack_up_to_the_bound_and_zstandard_above(lines: list[Line], level: int) -> None:
    value = encode(lines, level=level)
    if value[:4] == ZSTD:
        data = bytes(cramjam.zstd.decompress(value))
        assert len(data) > RAW_MAX_BYTES
    else:
        data = value
        assert len(data) <= RAW_MAX_BYTES
    assert msgspec.msgpack.decode(data)[0] == VERSION
    assert decode(value).lines(range(len(lines))) == decode(encode(lines)).lines(range(len(lines)))


def test_the_switch_to_zstandard_is_at_the_bound_exactly() -> None:
    mid = uuid.uuid4().bytes
    sizes = []
    for n in range(800, 1100):
        value = encode([(1_000, mid, "x" * n, None, None, None)])
        compressed = value[:4] == ZSTD
        size = len(bytes(cramjam.zstd.decompress(value))) if compressed else len(value)
        assert compressed is (size > RAW_MAX_BYTES), size
        sizes.append((size, compressed))
    assert (RAW_MAX_BYTES, False) in sizes and (RAW_MAX_BYTES + 1, True) in sizes


def test_a_large_block_compresses_and_a_packed_one_more() -> None:
    lines: list[Line] = [
        (1_000 + i, uuid.UUID(int=i).bytes, f"@id=;tmi-sent-ts= :u{i % 7}!u@u PRIVMSG #c :message {i}", None,
         ("c", f"u{i % 7}", f"message {i}", False, True), str(i % 7))
        for i in range(2_000)
    ]  # fmt: skip
    live, packed = encode(lines), encode(lines, level=PACKED_LEVEL)
    assert live[:4] == packed[:4] == ZSTD
    assert len(packed) < len(live) < sum(len(line[2]) for line in lines)
    assert decode(live).lines(range(2_000)) == decode(packed).lines(range(2_000)) == lines


def _big_lines(n: int) -> list[Line]:
    return [
        (1_000 + i, uuid.UUID(int=i).bytes, f"@id=;tmi-sent-ts= :u{i % 7}!u@u PRIVMSG #c :message {i}", None,
         ("c", f"u{i % 7}", f"message {i}", False, True), str(i % 7))
        for i in range(n)
    ]  # fmt: skip


@pytest.mark.parametrize("n", [20, 600, 2_000])
def test_a_written_frames_header_gives_the_size_it_decompresses_to(n: int) -> None:
    value = encode(_big_lines(n), level=PACKED_LEVEL)
    assert value[:4] == ZSTD
    assert content_size(value) == len(bytes(cramjam.zstd.decompress(value)))


@pytest.mark.parametrize(
    ("header", "size"),
    [
        (bytes([0x20, 0x07]), 7),  # single segment, a 1-byte size
        (bytes([0x60]) + (300 - 256).to_bytes(2, "little"), 300),  # a 2-byte size is 256 more than written
        (bytes([0xA0]) + (70_000).to_bytes(4, "little"), 70_000),
        (bytes([0xE0]) + (5 << 33).to_bytes(8, "little"), 5 << 33),
        (bytes([0x80, 0x58]) + (70_000).to_bytes(4, "little"), 70_000),  # a window descriptor before it
        (bytes([0x82, 0x58, 0x01, 0x02]) + (70_000).to_bytes(4, "little"), 70_000),  # and a dictionary id
        (bytes([0x00, 0x58]), None),  # no size: a streamed frame
        (bytes([0x80, 0x58, 0x01]), None),  # cut short
    ],
)
def test_a_zstandard_header_gives_its_content_size_where_it_has_one(header: bytes, size: int | None) -> None:
    assert content_size(ZSTD + header) == size


def test_a_frame_compressed_without_its_size_in_the_header_reads_as_one_with_it() -> None:
    lines = _big_lines(600)
    value = encode(lines, level=PACKED_LEVEL)
    streamed = cramjam.zstd.Compressor()
    streamed.compress(bytes(cramjam.zstd.decompress(value)))
    unsized = bytes(streamed.finish())
    assert content_size(unsized) is None
    read = [_as_read(line) for line in lines]
    assert decode(unsized).lines(range(600)) == decode(value).lines(range(600)) == read


@pytest.mark.parametrize("wrong", [1, -1, 1_000, -1_000])
def test_a_frame_whose_header_misstates_its_size_is_a_frame_error(wrong: int) -> None:
    value = encode(_big_lines(2_000), level=PACKED_LEVEL)
    size = content_size(value)
    assert size is not None and value[4] == 0xA0  # a single segment, a 4-byte size right after
    damaged = value[:5] + (size + wrong).to_bytes(4, "little") + value[9:]
    with pytest.raises(FrameError, match="not a frame"):
        decode(damaged)


def test_nothing_to_frame_is_refused() -> None:
    with pytest.raises(ValueError, match="nothing to frame"):
        encode([])


def test_a_split_is_made_only_where_the_line_ends_in_its_text_exactly() -> None:
    def mid(n: int) -> bytes:
        return uuid.UUID(int=n).bytes

    lines: list[Line] = [
        (1, mid(1), ":a!a@a PRIVMSG #c :hi", None, ("c", "a", "hi", False, True), "1"),
        (2, mid(2), ":a!a@a PRIVMSG #c :\x01ACTION waves\x01", None, ("c", "a", "waves", True, True), "1"),
        (3, mid(3), ":a!a@a PRIVMSG #c :\x01ACTION waves", None, ("c", "a", "waves", True, True), "1"),
        (4, mid(4), ":a!a@a PRIVMSG #c :hi\r", None, ("c", "a", "hi", False, True), "1"),
        (5, mid(5), ":b!b@b PRIVMSG #d :yo", 7, ("d", "b", "yo", False, False), "2"),
        (6, mid(6), "NOTICE #c :x", None, None, None),
        (7, mid(7), "!@id=;x=1 :a!a@a PRIVMSG #c :", None, ("c", "a", "", False, False), "1"),
    ]
    frame = decode(encode(lines))
    assert frame.rest()[1] == [line[2] for line in lines]  # every line whole
    assert list(zip(frame.chats, frame.actions, strict=True)) == [
        (("c", "a", "hi"), False),
        (("c", "a", "waves"), True),
        (None, False),  # no closing \x01: not the action form
        (None, False),
        (("d", "b", "yo"), False),  # a second sender: the frame's table has two
        (None, False),
        (("c", "a", ""), False),  # an empty text is a split too
    ]
    assert frame.plains == [True, True, False, False, False, False, False]
    assert frame.whos == ["1", "1", "1", "1", "2", None, "1"]


@settings(max_examples=200, deadline=None)
@given(_lines(), _TIME, _TIME, st.booleans())
@example([(5, b"\x00" * 16, "", None, None, None)], 5, 6, False)
@example([(5, b"\x00" * 16, "", None, None, None)], 6, 5, True)
def test_a_window_is_the_lines_sent_in_it_in_the_frames_order(
    lines: list[Line], lo: int, hi: int, reverse: bool
) -> None:
    frame = decode(encode(lines))
    expected = [i for i, line in enumerate(lines) if lo <= line[0] < hi]
    assert list(frame.window(lo, hi, reverse)) == (expected[::-1] if reverse else expected)
    assert frame.lines(frame.window(lo, hi)) == [_as_read(lines[i]) for i in expected]


# -- the frames of the layout before: versions 1 to 3 ------------------------------------------------------

_ROW = st.tuples(_TIME, st.uuids().map(str), st.text(max_size=300), st.none() | _TIME)


def _old_rows(
    items: list[tuple[PackedRow, ChatSplit | None, bool]],
) -> tuple[list[PackedRow], list[ChatSplit | None]]:
    rows: list[PackedRow] = []
    splits: list[ChatSplit | None] = []
    for (sent, mid, start, received), split, ends_so in items:
        line = start + _trailing(split) if split is not None and ends_so else start
        rows.append((sent, mid, line, received))
        splits.append(split)
    return rows, splits


def _read_as(rows: list[PackedRow], splits: list[ChatSplit | None], version: int) -> list[Line]:
    """What a frame of ``version`` gives back of ``rows``: ids as bytes, no filed-under user (not kept
    before version 4), the split where it was made (never in version 1), plain only from version 3."""
    out: list[Line] = []
    for (sent, mid, line, received), split in zip(rows, splits, strict=True):
        kept = split if version > 1 and split is not None and line.endswith(_trailing(split)) else None
        if kept is not None and version == 2:
            kept = (*kept[:4], False)
        out.append((sent, uuid.UUID(mid).bytes, line, received, kept, None))
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_ROW, _SPLIT, st.booleans()), min_size=1, max_size=30), st.sampled_from([1, 2, 3]))
def test_a_frame_of_the_layout_before_reads_as_its_rows(
    items: list[tuple[PackedRow, ChatSplit | None, bool]], version: int
) -> None:
    items.sort(key=lambda item: item[0][0])
    rows, splits = _old_rows(items)
    frame = decode(old_frame(rows, splits, version=version))
    assert frame.version == version and frame.whos is None
    assert frame.lines(range(len(rows))) == _read_as(rows, splits, version)
    if version == 1:
        assert frame.chats == [None] * len(rows) and frame.plains == [False] * len(rows)


@settings(max_examples=100, deadline=None)
@given(st.lists(_ROW, min_size=1, max_size=30), _TIME, _TIME, st.booleans(), st.sampled_from([1, 2, 3]))
def test_a_window_of_an_old_frame_out_of_time_order_is_its_rows_in_the_frames_order(
    rows: list[PackedRow], lo: int, hi: int, reverse: bool, version: int
) -> None:
    frame = decode(old_frame(rows, version=version))  # as packed, not sorted (not a frame chatlog wrote)
    expected = [i for i, row in enumerate(rows) if lo <= row[0] < hi]
    assert list(frame.window(lo, hi, reverse)) == (expected[::-1] if reverse else expected)
    assert [line[:4] for line in frame.lines(frame.window(lo, hi))] == [
        (rows[i][0], uuid.UUID(rows[i][1]).bytes, rows[i][2], rows[i][3]) for i in expected
    ]


def test_a_version_1_frame_reads_as_its_rows_without_chats() -> None:
    a, b = str(uuid.uuid4()), str(uuid.uuid4())
    rows: list[PackedRow] = [(1_000, a, ":a!a@a PRIVMSG #c :hi", 1_001), (1_005, b, "!x", None)]
    frame = decode(v1_frame(rows))
    assert frame.version == 1 and frame.chats == [None, None]
    assert frame.lines(range(2)) == [
        (1_000, uuid.UUID(a).bytes, ":a!a@a PRIVMSG #c :hi", 1_001, None, None),
        (1_005, uuid.UUID(b).bytes, "!x", None, None, None),
    ]


def test_a_version_2_frame_reads_with_no_plain_tags() -> None:
    mid = str(uuid.uuid4())
    value = old_frame(
        [(7, mid, "@x=1 :u!u@u PRIVMSG #c :hi", None)], [("#c", "u", "hi", False, True)], version=2
    )
    frame = decode(value)
    assert frame.chats == [("#c", "u", "hi")] and frame.plains == [False] and frame.version == 2
    assert frame.rest()[1] == ["@x=1 :u!u@u PRIVMSG #c :hi"]


# -- what is not a frame ------------------------------------------------------------------------------------

_A = str(uuid.UUID(int=1))
_B = str(uuid.UUID(int=2))


def _packed(*values: object) -> bytes:
    return bytes(cramjam.zstd.compress(msgspec.msgpack.encode(list(values))))


def _raw(*values: object) -> bytes:
    return msgspec.msgpack.encode(list(values))


def _column(*values: object) -> msgspec.Raw:
    """A column a frame keeps encoded until it is read (ids before version 4, heads, receive times)."""
    return msgspec.Raw(_raw(*values))


def _two_lines_one_head() -> list[object]:
    """The columns after the heads of a version 3 frame of two lines (the heads given hold one)."""
    return [_column(None, None), ["#c"], ["u"], [0, 0], ["hi", None], [False, False], [True, False]]


def _v4(**change: object) -> list[object]:
    """The columns of a good one-line version 4 frame, some changed."""
    columns: dict[str, object] = {
        "first": 7, "deltas": [0], "ids": b"\x01" * 16, "heads": _column("h"),
        "received": _column(None), "channels": ["c"], "logins": ["u"], "senders": [0],
        "texts": ["t"], "actions": [False], "plains": [False], "users": ["42"], "whos": [0],
    }  # fmt: skip
    columns.update(change)
    return [4, *columns.values()]


_NONCE = bytes(range(16))
_NO_TAGS: list[list[bytes]] = [[b"\x00", b""], [b"\x00", b""], [b"\x00", b""]]


def _v5(tags: object = None, **change: object) -> list[object]:
    """The columns of a good one-line version 5 frame whose head had a client-nonce, some changed."""
    nonce = [[b"\x01", _NONCE], [b"\x00", b""], [b"\x00", b""]]
    return [5, *_v4(heads=_column("@client-nonce=;a=b :h"), **change)[1:], nonce if tags is None else tags]


def test_the_frame_the_damaged_ones_below_are_made_from_is_good() -> None:
    for value in (_raw(*_v4()), _packed(*_v4())):
        assert decode(value).lines(range(1)) == [
            (7, b"\x01" * 16, "ht", None, ("c", "u", "t", False, False), "42")
        ]
    for value in (_raw(*_v5()), _packed(*_v5())):
        frame = decode(value)
        assert frame.version == 5
        assert frame.lines(range(1))[0][2] == f"@client-nonce={_NONCE.hex()};a=b :ht"


def test_a_version_4_frame_reads_with_its_tag_values_in_its_heads() -> None:
    frame = decode(_raw(*_v4(heads=_column(f"@client-nonce={_NONCE.hex()};a=b :h"))))
    assert frame.version == 4
    assert frame.lines(range(1))[0][2] == f"@client-nonce={_NONCE.hex()};a=b :ht"


def test_a_written_frame_keeps_a_twitch_lines_nonce_and_reply_ids_as_bytes_and_gives_the_line_back() -> None:
    nonce, parent, thread = "0123456789abcdef0123456789abcdef", str(uuid.uuid4()), str(uuid.uuid4())
    head = (
        f"@badges=;client-nonce={nonce};id=;reply-parent-msg-id={parent};"
        f"reply-thread-parent-msg-id={thread};tmi-sent-ts= :u!u@u.tmi.twitch.tv PRIVMSG #c :"
    )
    line: Line = (5, uuid.uuid4().bytes, head + "hi", None, ("c", "u", "hi", False, True), "42")
    value = encode([line], level=PACKED_LEVEL)
    raw = _raw_of(value)
    assert nonce.encode() not in raw and parent.encode() not in raw and thread.encode() not in raw
    assert bytes.fromhex(nonce) in raw and uuid.UUID(parent).bytes in raw
    assert decode(value).lines(range(1)) == [line]
    # the streaming sink's frames (the live level) keep them in their heads
    live = encode([line])
    assert nonce.encode() in _raw_of(live) and bytes.fromhex(nonce) not in _raw_of(live)
    assert decode(live).version == 5 and decode(live).lines(range(1)) == [line]


@pytest.mark.parametrize(
    "value",
    [
        b"",
        b"not a frame at all",
        ZSTD + b"not zstd after its magic",
        bytes(cramjam.zstd.compress(b"\x93\x01\x02\x03")),  # zstd, but not a frame's msgpack
        _raw("a string"),
        _raw(),
        _packed(1, 0, [0], [_A], ["l"]),  # a column short
        _packed(1, 0, [0, 1], [_A], ["l"], [None]),  # columns of different lengths
        _packed(1, 0, [0], ["not a uuid"], ["l"], [None]),
        _packed(2, 0, [0], [_A], ["l"], [None], ["c"], ["u"], [0], ["t"]),  # a column short
        _packed(2, 0, [0, 1], [_A], ["l"], [None], ["c"], ["u"], [0], ["t"], [False]),
        _packed(2, 0, [0], [_A], ["l"], [None], ["c"], [], [0], ["t"], [False]),  # the table's
        _packed(2, 0, [0], [_A], ["l"], [None], [], [], [0], ["t"], [False]),  # no sender for a text
        _packed(2, 0, [0], [_A], ["l"], [None], ["c", "d"], ["u", "v"], [2], ["t"], [False]),
        _packed(2, 0, [0], [_A], ["l"], [None], ["c", "d"], ["u", "v"], [-1], ["t"], [False]),
        _packed(3, 0, [0], [_A], ["l"], [None], ["c"], ["u"], [0], ["t"], [False]),  # no plains
        _packed(3, 0, [0], [_A], ["l"], [None], ["c"], ["u"], [0], ["t"], [False], [True, True]),
        _raw(*_v4()[:-1]),  # no whos
        _raw(*_v4(whos=[0, 0])),
        _raw(*_v4(whos=[1])),  # a user not in its table
        _raw(*_v4(texts=["t", None])),
        _raw(*_v4(channels=["c", "d"], logins=["u", "v"], senders=[5])),  # a sender not in its table
        _raw(*_v4(ids="not bytes")),
        _raw(*_v4(deltas=["0"])),
        _packed(*_v4(plains=[])),
        _raw(*_v4(heads=msgspec.Raw(b"\xc1"))),  # not msgpack: found at once
        _raw(*_v5()[:-1]),  # no tags: a version 4 frame tagged 5
        _raw(*_v5(tags="no columns")),
    ],
)
def test_what_is_not_a_frame_is_a_frame_error_when_decoded(value: bytes) -> None:
    with pytest.raises(FrameError):
        decode(value).rest()


@pytest.mark.parametrize(
    "value",
    [
        _raw(*_v4(ids=b"\x01" * 15)),  # an id short
        _raw(*_v4(ids=b"\x01" * 32)),
        _raw(*_v4(heads=_column("h", "i"))),
        _raw(*_v4(heads=_column(1))),
        _raw(*_v4(received=_column())),
        _packed(2, 0, [0], _column(_A, _B), _column("h"), _column(None), ["c"], ["u"], [0], ["t"], [False]),
        _packed(
            2, 0, [0], _column("no uuid"), _column("h"), _column(None), ["c"], ["u"], [0], ["t"], [False]
        ),
        _packed(3, 7, [0, 1], _column(_A, _B), _column("h"), *_two_lines_one_head()),
        _raw(*_v5(tags=_NO_TAGS[:2])),  # a tag's column short
        _raw(*_v5(tags=[[b"\x01", _NONCE[:15]], *_NO_TAGS[1:]])),  # a value short
        _raw(*_v5(tags=[[b"\x01\x00", _NONCE], *_NO_TAGS[1:]])),  # presence for more lines
        _raw(*_v5(tags=[[b"\x00", b""], [b"\x01", _NONCE], [b"\x00", b""]])),  # no such tag in the head
    ],
)
def test_the_ids_and_lines_of_a_frame_are_read_when_asked_and_checked_then(value: bytes) -> None:
    frame = decode(value)  # the send times, chats and users are read at once: these are fine
    assert len(frame.sents) == len(frame.chats) >= 1
    with pytest.raises(FrameError):
        frame.rest()
    with pytest.raises(FrameError):
        frame.lines(range(len(frame)))


def test_a_text_answer_reads_a_frames_chats_without_its_lines() -> None:
    value = _packed(3, 7, [0, 1], _column(_A, _B), _column("h"), *_two_lines_one_head())
    frame = decode(value)  # the head column is one short: found when the lines are read, not before
    assert (
        frame.sents == [7, 8] and frame.chats == [("#c", "u", "hi"), None] and frame.actions == [False, False]
    )
    assert frame.plains == [True, False] and frame.version == 3
    with pytest.raises(FrameError, match="columns of different lengths"):
        frame.ids()


def test_a_newer_version_is_refused_by_name() -> None:
    for value in (_raw(VERSION + 1, 0, [0]), _packed(VERSION + 1, 0, [0], [_A], ["l"], [None]), _raw(0, 0)):
        with pytest.raises(
            FrameError, match=f"version {msgspec.msgpack.decode(_raw_of(value))[0]}, this reader"
        ):
            decode(value)


def _raw_of(value: bytes) -> bytes:
    return bytes(cramjam.zstd.decompress(value)) if value[:4] == ZSTD else value
