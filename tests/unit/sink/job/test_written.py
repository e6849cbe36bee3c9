"""The sink's written offsets (sink/job/written.py), with a consumer double: what is committed, when."""

from __future__ import annotations

from typing import Any

from schemas.topics import sink_written_group
from sink.job.written import WrittenOffsets
from sink.settings import SinkSettings


class Committer:
    """Records the offsets a commit is asked for (what WrittenOffsets uses of confluent_kafka.Consumer)."""

    def __init__(self) -> None:
        self.commits: list[list[tuple[str, int, int]]] = []
        self.closed = False

    def poll(self, timeout: float) -> None:
        return None

    def commit(self, *, offsets: list[Any], asynchronous: bool) -> None:
        assert asynchronous  # never blocks the driver's progress loop
        self.commits.append([(tp.topic, tp.partition, tp.offset) for tp in offsets])

    def close(self) -> None:
        self.closed = True


def _progress(
    end: dict[str, int] | str, *, executed: bool = True, topic: str = "t.messages"
) -> dict[str, Any]:
    offsets = end if isinstance(end, str) else {topic: end}
    return {
        "batchId": 1,
        "durationMs": {"addBatch": 5, "triggerExecution": 9} if executed else {"triggerExecution": 1},
        "sources": [{"description": "KafkaV2", "startOffset": None, "endOffset": offsets}],
    }


def test_the_end_offsets_of_executed_batches_are_committed_forward_only() -> None:
    settings = SinkSettings(topic_messages="t.messages", cassandra_keyspace="ks")  # type: ignore[call-arg]
    committer = Committer()
    written = WrittenOffsets(settings, consumer=committer)
    assert written.group == sink_written_group("ks") == "chatlog-sink-written.ks"
    assert written.commit([_progress({"0": 10, "1": 4}, executed=False)]) is None  # no batch ran
    assert written.commit([_progress({"0": 10, "1": 4}), _progress('{"t.messages": {"0": 12, "1": 4}}')]) == {
        0: 12,
        1: 4,
    }
    assert committer.commits == [[("t.messages", 0, 12), ("t.messages", 1, 4)]]
    assert written.commit([_progress({"0": 12, "1": 4})]) is None  # nothing new: no commit
    assert written.commit([_progress({"0": 11, "1": 6}), _progress({"0": 3}, topic="other")]) == {1: 6}
    assert committer.commits[-1] == [("t.messages", 1, 6)]
    written.close()
    assert committer.closed
