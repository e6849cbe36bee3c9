"""ProgressFeed reads each of Spark's progress updates once, newest first, stopping at the first old one, from
the JVM's progress objects (a private API: pyspark's public ``recentProgress`` fallback was removed)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from sink.job.stream import ProgressFeed


class _JProgress:
    """A JVM StreamingQueryProgress as Py4J shows it: ``json()`` is a round trip, recorded in ``reads``."""

    def __init__(self, batch_id: int, second: int, reads: list[int]) -> None:
        self.batch_id = batch_id
        self.body: dict[str, object] = {
            "batchId": batch_id,
            "timestamp": f"2026-11-21T10:{second // 60:02d}:{second % 60:02d}.000Z",
        }
        self.reads = reads

    def json(self) -> str:
        self.reads.append(self.batch_id)
        return json.dumps(self.body)


class _JQuery:
    def __init__(self) -> None:
        self.updates: list[_JProgress] = []
        self.reads: list[int] = []

    def add(self, batch_id: int, second: int) -> None:
        self.updates.append(_JProgress(batch_id, second, self.reads))
        del self.updates[:-100]  # Spark keeps the last 100

    def recentProgress(self) -> list[_JProgress]:  # noqa: N802 (the JVM's name)
        return list(self.updates)


class _Query:
    def __init__(self) -> None:
        self._jsq = _JQuery()


def _batches(found: list[dict[str, Any]]) -> list[int]:
    return [int(p["batchId"]) for p in found]


def test_each_update_is_returned_once_oldest_first() -> None:
    query = _Query()
    feed = ProgressFeed(query)  # type: ignore[arg-type]
    assert feed.new() == []
    query._jsq.add(0, 1)
    query._jsq.add(1, 2)
    assert _batches(feed.new()) == [0, 1]
    query._jsq.add(2, 3)
    query._jsq.add(3, 13)  # an idle update (the next batch's id, nothing executed)
    assert _batches(feed.new()) == [2, 3]
    assert feed.new() == []
    query._jsq.add(3, 14)  # the same batch id again, now executed: a new update
    assert _batches(feed.new()) == [3]


def test_only_new_updates_are_read_from_the_jvm() -> None:
    query = _Query()
    feed = ProgressFeed(query)  # type: ignore[arg-type]
    for batch in range(150):
        query._jsq.add(batch, batch)
    assert _batches(feed.new()) == list(range(50, 150))
    query._jsq.reads.clear()
    query._jsq.add(150, 150)
    assert _batches(feed.new()) == [150]
    assert query._jsq.reads == [150, 149]  # the new update, and the one that showed where to stop


def test_a_query_without_its_jvm_query_is_refused_at_start() -> None:
    from sink.spark_private import PrivateApiMissing

    class _PublicOnly:  # a query seen through pyspark's public API only (no ``_jsq``)
        recentProgress: list[Any] = []  # noqa: N815 (pyspark's name)

    with pytest.raises(PrivateApiMissing, match=r"lacks StreamingQuery\._jsq.*pyproject\.toml"):
        ProgressFeed(_PublicOnly())  # type: ignore[arg-type]


@pytest.mark.spark
def test_a_running_query_s_updates_are_read_once_oldest_first(spark: Any, tmp_path: Path) -> None:
    query = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", 20)
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(processingTime="100 milliseconds")
        .start()
    )
    seen: list[dict[str, Any]] = []
    try:
        feed = ProgressFeed(query)
        deadline = time.monotonic() + 60
        while len({p["batchId"] for p in seen}) < 3 and time.monotonic() < deadline:
            query.awaitTermination(0.3)
            seen.extend(feed.new())
    finally:
        query.stop()
    assert len({p["batchId"] for p in seen}) >= 3
    stamps = [p["timestamp"] for p in seen]
    assert stamps == sorted(set(stamps))  # each update once, oldest first
    assert all("numInputRows" in p for p in seen)
