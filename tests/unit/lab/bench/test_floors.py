"""The pacing of the floors at a step's rate (lab/bench/floors.py)."""

from __future__ import annotations

import time

from lab.bench.floors import BATCH_BYTES, BATCH_PARTITIONS, BATCH_ROWS, Written, batched, paced, rounds_of


def test_paced_sends_each_index_once_in_order_and_never_ahead_of_the_rate() -> None:
    start = time.monotonic()
    calls: list[tuple[int, float]] = []
    sent = paced(200.0, 0.5, lambda i: calls.append((i, time.monotonic() - start)))
    assert sent == 100
    assert [i for i, _ in calls] == list(range(100))
    assert all(at >= i / 200.0 - 0.005 for i, at in calls)  # the i-th goes no sooner than i / rate


def test_a_slow_send_is_caught_up_so_the_count_is_the_rate_times_the_time() -> None:
    def slow(i: int) -> None:
        if i == 0:
            time.sleep(0.2)

    assert paced(100.0, 0.4, slow) == 40


def _row(table: str, key: str, at: float, frame_bytes: int = 10) -> Written:
    cells: tuple[object, ...] = (key, 1, 0) if table == "channel_blocks" else (key, "u", 202611, 0)
    return Written(table, (*cells, at, None, None, 1, b"x" * frame_bytes), at)


def test_rounds_are_the_rows_of_the_window_cut_where_nothing_was_written_for_the_gap() -> None:
    rows = [_row("channel_blocks", "c", at) for at in (0.0, 0.2, 0.5, 10.0, 10.3, 20.1, 30.0)]
    rounds = rounds_of(rows, 0.1, 30.0, gap_s=5.0)
    assert [[r.at for r in each] for each in rounds] == [[0.2, 0.5], [10.0, 10.3], [20.1]]
    assert rounds_of(rows, 40.0, 50.0, gap_s=5.0) == []


def test_batches_hold_every_row_once_grouped_by_partition_within_the_sinks_cuts() -> None:
    rows = [_row("user_blocks", f"c{i % 70}", i) for i in range(250)]
    rows += [_row("channel_blocks", "big", 300.0 + i, frame_bytes=20_000) for i in range(5)]
    batches = batched(rows)
    assert sorted(id(r) for b in batches for r in b) == sorted(id(r) for r in rows)
    assert all(len(b) <= BATCH_ROWS for b in batches)
    assert all(len({r.partition for r in b}) <= BATCH_PARTITIONS for b in batches)
    assert all(sum(len(r.cells[-1]) for r in b) <= BATCH_BYTES or len(b) == 1 for b in batches)
    # a partition's rows are next to each other: each partition spans at most the batches it must
    spans = {
        p: {i for i, b in enumerate(batches) for r in b if r.partition == p}
        for p in {r.partition for r in rows}
    }
    assert all(max(s) - min(s) == len(s) - 1 for s in spans.values())
    assert len(batches) < len(rows) / 10
