"""store/merge.py: the blocks of a scan, overlapping or one after another, merged into one stream of lines in
line order (newest first when reversed), each line once however many blocks hold it, a line given only once
no block still to come can precede it, and given as soon as that is so."""

from __future__ import annotations

import itertools
import random
import uuid
from collections.abc import Sequence
from typing import Any

import cramjam
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store import frame
from store.frame import Frame
from store.keys import line_order
from store.merge import Merge

Point = tuple[int, bytes]
"""A line: (sent_at, message uuid bytes)."""


def _uuid(version: int, data: bytes) -> bytes:
    raw = bytearray(data)
    raw[6] = (raw[6] & 0x0F) | (version << 4)
    raw[8] = (raw[8] & 0x3F) | 0x80
    return bytes(raw)


_IDS = st.builds(_uuid, st.sampled_from([1, 4, 5]), st.binary(min_size=16, max_size=16))


def _encode(points: Sequence[Point]) -> bytes:
    ordered = sorted(points, key=lambda p: line_order(*p))
    return frame.encode([(sent, mid, f"line {sent}", None, None, None) for sent, mid in ordered])


class _Block:
    def __init__(self, points: Sequence[Point]) -> None:
        self.points = list(points)
        self.first = min(p[0] for p in points)
        self.last = max(p[0] for p in points)
        self.frame = frame.decode(_encode(points))


@st.composite
def _scans(draw: st.DrawFn) -> tuple[list[_Block], int, int]:
    """Blocks over a pool of lines: each line in one block or more (a replay, a backfill over logged time),
    blocks overlapping in time or not; and a window."""
    pool = draw(
        st.lists(st.tuples(st.integers(0, 40), _IDS), min_size=1, max_size=60, unique_by=lambda p: p[1])
    )
    count = draw(st.integers(1, 6))
    homes = draw(
        st.lists(st.sets(st.integers(0, count - 1), min_size=1), min_size=len(pool), max_size=len(pool))
    )
    runs: list[list[Point]] = [[] for _ in range(count)]
    for point, blocks in zip(pool, homes, strict=True):
        for b in blocks:
            runs[b].append(point)
    lo = draw(st.integers(-1, 41))
    hi = draw(st.integers(lo, 42))
    return [_Block(run) for run in runs if run], lo, hi


def _make(found: Frame, index: int, owner: Any) -> tuple[int, bytes, Any]:
    return found.sents[index], found.ids()[index], owner


def _merged(
    blocks: list[_Block], lo: int, hi: int, reverse: bool, loose: bool, rng: random.Random
) -> list[tuple[int, bytes, Any]]:
    """Feed ``blocks`` to a :class:`Merge` as a scan gives them (by first line, ties in any order; newest
    first when reversed) with the bound of the protocol after each (``loose``: a later one, as store.read's
    reverse scan takes it), checking what each ``take`` gives."""
    rng.shuffle(blocks)
    scan = sorted(blocks, key=lambda b: -b.first if reverse else b.first)
    merge = Merge(lo, hi, _make, reverse=reverse)
    out: list[tuple[int, bytes, Any]] = []
    added: set[Point] = set()
    for k, block in enumerate(scan):
        merge.add(block.frame, k)
        added.update(p for p in block.points if lo <= p[0] < hi)
        rest = scan[k + 1 :]
        if not rest:
            bound = None
        elif not reverse:
            bound = rest[0].first
        elif loose:
            bound = max(b.last for b in scan if b.first <= block.first)
        else:
            bound = max(b.last for b in rest)
        taken = merge.take(bound)
        if bound is not None:
            assert all((p[0] > bound) if reverse else (p[0] < bound) for p in taken)  # none given too early
            due = {p for p in added if (p[0] > bound if reverse else p[0] < bound)}
        else:
            due = added
        out += taken
        assert {p[:2] for p in out} == due  # and none held longer than the bound asks
    assert not merge
    return out


@settings(max_examples=400, deadline=None)
@given(_scans(), st.booleans(), st.booleans(), st.randoms(use_true_random=False))
def test_blocks_merge_into_every_line_once_in_line_order(
    scan: tuple[list[_Block], int, int], reverse: bool, loose: bool, rng: random.Random
) -> None:
    blocks, lo, hi = scan
    out = _merged(blocks, lo, hi, reverse, loose, rng)
    expected = sorted(
        {p for b in blocks for p in b.points if lo <= p[0] < hi},
        key=lambda p: line_order(*p),
        reverse=reverse,
    )
    assert [p[:2] for p in out] == expected


def test_overlapping_blocks_of_one_millisecond_merge_by_the_uuids_order() -> None:
    time_uuid = uuid.UUID(fields=(1, 0, 0x1000, 0x80, 0, 0)).bytes
    twitch = uuid.UUID("ffffffff-0000-4000-8000-000000000000").bytes
    hashed = uuid.UUID("00000000-0000-5000-8000-000000000000").bytes
    a, b = _Block([(5, hashed), (5, time_uuid)]), _Block([(5, twitch), (5, time_uuid), (6, hashed)])
    out = _merged([a, b], 0, 10, False, False, random.Random(1))
    assert [p[:2] for p in out] == [(5, time_uuid), (5, twitch), (5, hashed), (6, hashed)]
    back = _merged([a, b], 0, 10, True, False, random.Random(1))
    assert [p[:2] for p in back] == [(6, hashed), (5, hashed), (5, twitch), (5, time_uuid)]


def test_a_line_is_held_until_no_block_to_come_can_precede_it() -> None:
    early, late = _Block([(1, _id(1)), (10, _id(2))]), _Block([(5, _id(3)), (7, _id(4))])
    merge = Merge(0, 100, _make)
    merge.add(early.frame, "early")
    assert [p[0] for p in merge.take(5)] == [1]  # 10 waits: the next block starts at 5
    merge.add(late.frame, "late")
    assert merge.take(None) == [(5, _id(3), "late"), (7, _id(4), "late"), (10, _id(2), "early")]
    assert not merge


def _id(n: int) -> bytes:
    return uuid.UUID(int=n, version=4).bytes


def test_the_usual_partition_is_given_block_by_block_without_reading_an_id() -> None:
    """Blocks one after another (a stream's micro-batches): each block's lines in its own order, their ids
    never read (these frames' id columns are damaged: reading one would fail)."""
    damaged = [frame.decode(_short(times)) for times in ([1, 2, 3], [4, 5], [8, 9])]
    merge = Merge(0, 100, lambda f, i, owner: (f.sents[i], owner))
    out: list[Any] = []
    for k, (found, bound) in enumerate(zip(damaged, [4, 8, None], strict=True)):
        merge.add(found, k)
        out += merge.take(bound)
    assert out == [(1, 0), (2, 0), (3, 0), (4, 1), (5, 1), (8, 2), (9, 2)]
    with pytest.raises(frame.FrameError):
        damaged[0].ids()


def test_the_usual_partition_is_given_as_runs_of_its_blocks() -> None:
    """While one block is open, what a take gives is one run of it (``run``: its frame, the indices taken
    in order, its owner), and nothing at all when none is due; overlapping blocks are merged line by line
    (``make``) as ever."""
    blocks = [
        _Block([(t, _id(t + k * 100)) for t in times])
        for k, times in enumerate(([1, 2, 3, 6], [6, 7], [20, 21]))
    ]
    runs: list[tuple[Frame, list[int], Any]] = []

    def run(found: Frame, indices: Sequence[int], owner: Any) -> list[Any]:
        runs.append((found, list(indices), owner))
        return [("run", found.sents[i], owner) for i in indices]

    merge = Merge(0, 100, _make, run=run)
    merge.add(blocks[0].frame, "a")
    assert merge.take(2) == [("run", 1, "a")]
    assert merge.take(2) == []  # nothing due: no run made
    assert merge.take(6) == [("run", 2, "a"), ("run", 3, "a")]
    assert [(f is blocks[0].frame, i, o) for f, i, o in runs] == [(True, [0], "a"), (True, [1, 2], "a")]
    merge.add(blocks[1].frame, "b")  # overlaps a's last line: merged by line order from here
    assert [p[0] for p in merge.take(20)] == [6, 6, 7]
    merge.add(blocks[2].frame, "c")
    assert merge.take(None) == [("run", 20, "c"), ("run", 21, "c")]
    assert len(runs) == 3 and not merge


def _short(times: list[int]) -> bytes:
    """A version 3 frame of lines sent at ``times`` whose head column is one short (found when read)."""
    encode = msgspec.msgpack.encode
    ids = [str(uuid.UUID(int=t)) for t in times]
    n = len(times)
    deltas = [0, *(b - a for a, b in itertools.pairwise(times))]
    heads = msgspec.Raw(encode(["x"] * (n - 1)))  # a line short
    received = msgspec.Raw(encode([None] * n))
    value = [3, times[0], deltas, msgspec.Raw(encode(ids)), heads, received, [], [], [0] * n, [None] * n]
    value += [[False] * n, [False] * n]
    return bytes(cramjam.zstd.compress(encode(value)))


def test_a_window_leaves_out_the_lines_outside_it_and_an_empty_block_adds_nothing() -> None:
    merge = Merge(10, 20, _make, reverse=True)
    merge.add(_Block([(5, _id(1)), (9, _id(2))]).frame, "before")
    assert not merge
    merge.add(_Block([(10, _id(3)), (19, _id(4)), (20, _id(5))]).frame, "in")
    assert [p[0] for p in merge.take(None)] == [19, 10]
