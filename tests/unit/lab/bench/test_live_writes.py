"""``lab.bench.live_writes``: a tree's lines cut into the streaming sink's micro-batches (no Cassandra)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from lab.bench.justlog_tree import TreeParams, write_tree
from lab.bench.live_writes import micro_batches, tree_lines


def test_each_trigger_interval_of_send_time_is_one_micro_batch(tmp_path: Path) -> None:
    tree = write_tree(tmp_path, TreeParams(days=2, lines_per_day=3_000, users=50, user_month_lines=20))
    trigger_ms = 60_000
    batches = list(micro_batches(tree_lines(tree), trigger_ms))
    events = [json.loads(value) for batch in batches for value in batch]
    assert len(events) == tree.lines  # every line is a chat event, once, in order
    sent = [e["sent_at"] for e in events]
    assert sent == sorted(sent)
    assert all(e["received_at"] == e["sent_at"] for e in events)
    windows = [{json.loads(v)["sent_at"] // trigger_ms for v in batch} for batch in batches]
    assert all(len(w) == 1 for w in windows)  # a batch is one interval
    firsts = [min(w) for w in windows]
    assert firsts == sorted(set(firsts))  # and no interval is split over two batches
    # 3,000 lines a day, 1,440 minutes: most minutes hold two or three lines
    assert 1_400 * 2 <= len(batches) <= 1_440 * 2


def test_a_current_trees_last_day_is_read_too(tmp_path: Path) -> None:
    now = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    tree = write_tree(tmp_path, TreeParams(days=2, lines_per_day=500, users=50, user_month_lines=20), now=now)
    events = [json.loads(v) for batch in micro_batches(tree_lines(tree), 10_000) for v in batch]
    assert len(events) == 1_000 and events[-1]["sent_at"] < int(now.timestamp() * 1000)
