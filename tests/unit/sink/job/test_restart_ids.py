"""Which offsets a restarted sink reads back for its dedup ids: those of the checkpoint's committed batches
of the last window (by commit time), the last one always."""

from __future__ import annotations

import json
import os
from pathlib import Path

from sink.job.restart_ids import window_offsets

TOPIC = "t.messages"


def _batch(root: Path, batch: int, ends: dict[int, int], committed_at: float | None) -> None:
    (root / "offsets").mkdir(parents=True, exist_ok=True)
    (root / "commits").mkdir(parents=True, exist_ok=True)
    meta = json.dumps({"batchWatermarkMs": 0})
    offsets = json.dumps({TOPIC: {str(p): o for p, o in ends.items()}})
    (root / "offsets" / str(batch)).write_text(f"v1\n{meta}\n{offsets}")
    if committed_at is not None:
        (root / "commits" / str(batch)).write_text("v1\n{}")
        os.utime(root / "commits" / str(batch), (committed_at, committed_at))


def test_the_batches_committed_within_the_window_before_the_last_and_not_the_uncommitted_one(
    tmp_path: Path,
) -> None:
    _batch(tmp_path, 0, {0: 100, 1: 50}, 1000.0)
    _batch(tmp_path, 1, {0: 200, 1: 50}, 1020.0)  # 25 s before the last: outside a 10 s window
    _batch(tmp_path, 2, {0: 300, 1: 80}, 1040.0)
    _batch(tmp_path, 3, {0: 350, 1: 90}, 1045.0)
    _batch(tmp_path, 4, {0: 999, 1: 999}, None)  # logged, not committed: the batch a restart re-runs
    assert window_offsets(str(tmp_path), TOPIC, 10.0) == {0: (200, 350), 1: (50, 90)}
    assert window_offsets(f"file://{tmp_path}", TOPIC, 100.0) == {0: (0, 350), 1: (0, 90)}
    assert window_offsets(str(tmp_path), TOPIC, 0.0) == {0: (300, 350), 1: (80, 90)}  # the last always


def test_nothing_to_seed_from_a_fresh_remote_or_unreadable_checkpoint(tmp_path: Path) -> None:
    assert window_offsets(str(tmp_path / "none"), TOPIC, 10.0) is None
    assert window_offsets("hdfs://nn/checkpoint", TOPIC, 10.0) is None
    _batch(tmp_path, 0, {0: 5}, 1000.0)
    assert window_offsets(str(tmp_path), "another.topic", 10.0) is None
    (tmp_path / "offsets" / "0").write_text("v1\nnot json")
    assert window_offsets(str(tmp_path), TOPIC, 10.0) is None
