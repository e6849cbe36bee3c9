"""The frame of a packed user-month (schemas.packed_month): every row back as it went in, in order; anything
that is not a frame is a PackError, never garbage rows."""

from __future__ import annotations

import cramjam
import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from schemas.packed_month import VERSION, PackedRow, PackError, pack, unpack

_ROW = st.tuples(
    st.integers(min_value=0, max_value=253_402_300_799_999),
    st.uuids().map(str),
    st.text(max_size=600),
    st.none() | st.integers(min_value=0, max_value=253_402_300_799_999),
)


@given(st.lists(_ROW, min_size=1, max_size=50))
def test_every_row_comes_back_as_it_went_in(rows: list[PackedRow]) -> None:
    rows.sort(key=lambda r: r[0])
    assert unpack(pack(rows)) == rows


def test_times_out_of_order_come_back_too() -> None:
    rows: list[PackedRow] = [(2_000, "b", "x", None), (1_000, "a", "", 999), (1_000, "c", "!raw", 5_000)]
    assert unpack(pack(rows, level=1)) == rows


def test_nothing_to_pack_is_refused() -> None:
    with pytest.raises(ValueError, match="nothing to pack"):
        pack([])


@pytest.mark.parametrize(
    "value",
    [
        b"",
        b"not zstd at all",
        bytes(cramjam.zstd.compress(b"\x93\x01\x02\x03")),  # zstd, but not a frame's msgpack
        bytes(
            cramjam.zstd.compress(msgspec.msgpack.encode([VERSION, 0, [0], ["a"], ["l"]]))
        ),  # a column short
        bytes(cramjam.zstd.compress(msgspec.msgpack.encode([VERSION, 0, [0, 1], ["a"], ["l"], [None]]))),
    ],
)
def test_what_is_not_a_frame_is_a_pack_error(value: bytes) -> None:
    with pytest.raises(PackError, match="packed month"):
        unpack(value)


def test_a_newer_version_is_refused_by_name() -> None:
    frame = bytes(cramjam.zstd.compress(msgspec.msgpack.encode([VERSION + 1, 0, [0], ["a"], ["l"], [None]])))
    with pytest.raises(PackError, match=f"version {VERSION + 1}"):
        unpack(frame)


def test_a_month_of_real_lines_packs_smaller_than_its_lines() -> None:
    from bench.storage import corpus

    lines = corpus(300)
    rows: list[PackedRow] = [
        (1_000 + i, f"00000000-0000-4000-8000-{i:012d}", line, None) for i, line in enumerate(lines)
    ]
    frame = pack(rows)
    assert unpack(frame) == rows
    assert len(frame) < sum(len(line) for line in lines) / 3
