"""The pure parts of ``chatlog pack`` (store/pack.py): a partition's blocks read back into lines (each
block's, copies included) and framed again into the blocks that replace them (every line once, in line
order), the same blocks again for a partition packed already (so a second run packs nothing), the statements
that delete a replaced block at its own write time, and the one line a run prints."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from core.testing import chat_events
from store import frame
from store.blocks import CHANNEL, MAX_BLOCK_LINES, USER, Block, Framed, blocks_of, framed, partitions
from store.pack import BlockRow, Blocks, Head, PackReport, Read, mergeable, rewrite
from tests.unit.store.session_doubles import PreparingSession

AT = 1_700_000_000_000


def _read(blocks: list[Block]) -> Read:
    """A partition's rows as :func:`store.pack.read` gives them: (first_ms, block id, frame, written, ttl,
    last_ms)."""
    rows: list[BlockRow] = [
        (b.first_at, b.block, b.frame, 1_000 + i, None, b.first_at) for i, b in enumerate(blocks)
    ]
    return Read(rows)


def _partition() -> tuple[tuple[Any, ...], list[Framed]]:
    """The lines of one channel day (many micro-batches' worth)."""
    items = [framed(e) for e in chat_events(600, channels=1, now_ms=AT)]
    ((key, run),) = [
        (key, run) for (table, key), run in partitions(items, lambda *_: None).items() if table == CHANNEL
    ]
    return key, run


def test_a_partitions_blocks_pack_into_every_line_once_in_line_order() -> None:
    key, items = _partition()
    batches = [items[i : i + 70] for i in range(0, len(items), 70)]  # micro-batches
    replay = items[100:250]  # a replay cut into other batches: its lines in two blocks
    written = [b for run in [*batches, replay] for b in blocks_of(CHANNEL, key, run)]
    found = _read(written).lines(key)
    assert len(found) == len(items) + len(replay)  # every block's lines, copies included
    packed = blocks_of(CHANNEL, key, found, level=frame.PACKED_LEVEL)
    lines = [line for b in packed for line in frame.decode(b.frame).lines(range(b.lines))]
    assert lines == [f.line for f in sorted(items, key=lambda f: f.order)]
    assert len(packed) < len(written) and {b.block for b in packed}.isdisjoint({b.block for b in written})
    for item in found:  # each line keeps its keys: the channel's, and the user it is filed under
        assert (item.channel_key, item.user_key) == (key[0], item.line[5])


def test_a_partition_packed_already_packs_into_the_same_blocks() -> None:
    """What store.pack.rewrite compares: the blocks of the lines read are the blocks read, so nothing is
    written or deleted again."""
    key, items = _partition()
    packed = blocks_of(CHANNEL, key, items, level=frame.PACKED_LEVEL)
    again = blocks_of(CHANNEL, key, _read(packed).lines(key), level=frame.PACKED_LEVEL)
    assert [(b.block, b.frame) for b in again] == [(b.block, b.frame) for b in packed]


def test_rewriting_a_partition_packed_already_frames_and_writes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run over packed partitions compares block ids before it frames anything: framing at the packed
    level is what a pack spends its time on (a backfilled month, packed as written, took 335 s to pack
    nothing when every partition was framed again to be compared)."""
    key, items = _partition()
    packed = blocks_of(CHANNEL, key, items, level=frame.PACKED_LEVEL)
    framings: list[int] = []

    def encode(lines: list[Any], **_: Any) -> bytes:
        framings.append(len(lines))
        return b""

    monkeypatch.setattr(frame, "encode", encode)
    blocks = Blocks(PreparingSession(), "ks", CHANNEL)
    assert rewrite(blocks, key, _read(packed)) == (len(packed), len(packed), len(items), 0, False)
    assert framings == []


def test_a_users_month_reads_back_under_its_user() -> None:
    items = [framed(e) for e in chat_events(200, channels=1, now_ms=AT)]
    months = {key: run for (table, key), run in partitions(items, lambda *_: None).items() if table == USER}
    key, run = next(iter(months.items()))
    found = _read(blocks_of(USER, key, run)).lines(key)
    assert {item.user_key for item in found} == {key[1]} and len(found) == len(run)


def test_a_replaced_block_is_deleted_at_its_own_write_time() -> None:
    session = PreparingSession()
    for table, where in ((CHANNEL, "channel_key = ? AND day = ? AND part = ?"),
                         (USER, "channel_key = ? AND user_key = ? AND month = ? AND part = ?")):  # fmt: skip
        blocks = Blocks(session, "ks", table)
        name = "channel_blocks" if table == CHANNEL else "user_blocks"
        index = "channel_days" if table == CHANNEL else "user_months"
        assert (
            blocks.delete
            == f"DELETE FROM ks.{name} USING TIMESTAMP ? WHERE {where} AND first_at = ? AND block = ?"
        )
        assert blocks.delete_index == f"DELETE FROM ks.{index} USING TIMESTAMP ? WHERE {where}"
        assert blocks.read == (
            "SELECT toUnixTimestamp(first_at) AS first_ms, block, frame, writetime(frame) AS written, "
            f"ttl(frame) AS ttl, toUnixTimestamp(last_at) AS last_ms FROM ks.{name} WHERE {where}"
        )


def test_the_summary_names_what_was_packed_and_what_was_left() -> None:
    report = PackReport(partitions=7, packed=4, blocks_before=1_200, blocks_after=5, lines=90_000)
    report.skipped_recent = 2
    report.open_partitions, report.open_packed = 3, 1
    assert report.summary() == (
        "pack: 4 of 7 closed partition(s) and 1 of 3 open one(s) packed (1200 block(s) -> 5, 90000 line(s)); "
        "2 written within the settle time left for a later run"
    )


def _head(first_ms: int, lines: int) -> Head:
    return (first_ms, uuid.uuid4(), 1, first_ms + 1, lines)


def test_a_channel_day_is_worth_packing_when_an_hour_holds_two_blocks() -> None:
    hour = 3_600_000
    packed = [_head(h * hour + 5, 900) for h in range(24)]  # a packed day: one block an hour
    assert not mergeable(CHANNEL, packed)
    assert mergeable(CHANNEL, [*packed, _head(7 * hour + 60_000, 3)])  # a micro-batch of hour 7 came since
    assert not mergeable(CHANNEL, [_head(5, 3)])  # one block: nothing to merge
    assert not mergeable(CHANNEL, [])


def test_a_users_month_is_worth_packing_when_it_has_more_blocks_than_its_lines_need() -> None:
    assert not mergeable(USER, [_head(5, 300)])
    assert mergeable(USER, [_head(5, 300), _head(9, 1)])  # one line since: into the month's block
    full = [_head(i, MAX_BLOCK_LINES) for i in range(2)]
    assert not mergeable(USER, [*full, _head(9, 1)])  # 2 full blocks and 1 line: three blocks are needed
    assert mergeable(USER, [*full, _head(9, 1), _head(10, 1)])


def test_reading_a_damaged_block_is_a_frame_error() -> None:
    row: BlockRow = (0, uuid.uuid4(), b"not a frame", 1, None, 0)
    bad = Read([row])
    with pytest.raises(frame.FrameError):
        bad.lines(("7", 0, 0))
