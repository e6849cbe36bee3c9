"""The sink's dedup (sink/dedup.py): the ids the streaming sink wrote lately (sink_dedup=writer), a window of
batch time; which dedup a streaming query runs, the mode its checkpoint started with."""

from __future__ import annotations

from pathlib import Path

import pytest

from sink.dedup import (
    MISMATCH,
    Mode,
    RecentIds,
    checkpoint_mode,
    effective_mode,
    id_of,
    id_set,
    mismatch_message,
)
from sink.settings import SinkSettings


def _settings(checkpoint: str, mode: Mode) -> SinkSettings:
    return SinkSettings(sink_checkpoint=checkpoint, sink_dedup=mode)  # type: ignore[call-arg]


def test_a_checkpoint_with_dedup_state_is_spark_one_with_commits_only_is_writer(tmp_path: Path) -> None:
    assert checkpoint_mode(str(tmp_path / "none")) is None
    (tmp_path / "commits").mkdir()
    (tmp_path / "commits" / ".0.crc").write_text("")
    assert checkpoint_mode(str(tmp_path)) is None  # nothing committed yet: either mode may start it
    (tmp_path / "commits" / "0").write_text("v1")
    assert checkpoint_mode(str(tmp_path)) == "writer"
    assert checkpoint_mode(f"file://{tmp_path}") == "writer"
    (tmp_path / "state" / "0").mkdir(parents=True)
    assert checkpoint_mode(str(tmp_path)) == "spark"
    assert checkpoint_mode("s3a://bucket/checkpoint") is None  # not looked into


def test_the_checkpoint_mode_wins_over_the_setting_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "state").mkdir()
    assert effective_mode(_settings(str(tmp_path), "writer")) == "spark"
    assert "was started with sink_dedup=spark: keeping it" in caplog.text
    assert effective_mode(_settings(str(tmp_path / "new"), "writer")) == "writer"


def test_sparks_refusal_of_a_changed_operator_is_one_line_naming_the_settings() -> None:
    settings = _settings("s3a://bucket/cp", "writer")
    line = mismatch_message(f"[STREAM_FAILED] ... [{MISMATCH}] Streaming stateful operator ...", settings)
    assert line is not None and "\n" not in line
    assert (
        "s3a://bucket/cp" in line
        and "CHATLOG_SINK_DEDUP=writer" in line
        and "CHATLOG_SINK_CHECKPOINT" in line
    )
    assert mismatch_message("[STREAM_FAILED] something else", settings) is None


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_next_batch_gets_the_ids_of_the_batches_within_the_window() -> None:
    clock = _Clock()
    recent = RecentIds(10_000, clock)
    recent.add(id_of("a"))
    clock.now += 6
    recent.add(id_of("b") + id_of("c"))
    clock.now += 5  # batch "a" ended 11 s ago: out of the 10-s window
    assert id_set(recent.blob()) == {id_of("b"), id_of("c")}
    assert len(recent) == 2


def test_the_latest_batch_is_kept_however_old() -> None:
    clock = _Clock()
    recent = RecentIds(1_000, clock)
    assert recent.blob() == b""
    recent.add(id_of("a"))
    recent.add(id_of("b"))
    clock.now += 3600  # an idle sink
    assert id_set(recent.blob()) == {id_of("b")}
