"""Reading a topic to its end (and on), over a consumer double; and compaction's fold. No Kafka."""

from __future__ import annotations

import time
from collections import deque
from types import SimpleNamespace
from typing import Any, SupportsIndex

import pytest
from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, KafkaError, TopicPartition

from core import compacted
from core.compacted import TopicReader, TopicReadError, fold, read_to_end
from core.errors import ChatlogError
from core.settings import KafkaSettings
from core.testing import FakeMessage

TOPIC = "t"


def record(partition: int, offset: int, key: bytes = b"k", value: bytes | None = b"v") -> FakeMessage:
    return FakeMessage(TOPIC, value, key, partition=partition, offset=offset)


def end(partition: int, offset: int) -> FakeMessage:
    return FakeMessage(TOPIC, partition=partition, offset=offset, error=KafkaError(KafkaError._PARTITION_EOF))


class Partitions:
    """A consumer of assigned partitions: watermarks per partition, then what the test queues."""

    def __init__(self, watermarks: dict[int, tuple[int, int]], *messages: FakeMessage) -> None:
        self.watermarks = watermarks
        self.queue: deque[FakeMessage] = deque(messages)
        self.assigned: list[TopicPartition] = []
        self.refusals: list[KafkaError] = []
        self.times: dict[int, int] = {}
        self.closed = False

    def offsets_for_times(self, tps: list[TopicPartition], timeout: float) -> list[TopicPartition]:
        """ListOffsets: first or end offsets from ``watermarks``, a time's from ``times``; a refusal is
        the answer's error for its first partition."""
        out: list[Any] = []
        for tp in tps:
            low, high = self.watermarks[tp.partition]
            at = {OFFSET_BEGINNING: low, OFFSET_END: high}.get(tp.offset, self.times.get(tp.partition, -1))
            out.append(TopicPartition(tp.topic, tp.partition, at))
        if self.refusals and out:  # a TopicPartition's error is set by the client only
            refused = out[0]
            out[0] = SimpleNamespace(
                topic=refused.topic, partition=refused.partition, offset=-1, error=self.refusals.pop(0)
            )
        return out

    def assign(self, tps: list[TopicPartition]) -> None:
        self.assigned = tps

    def poll(self, timeout: float) -> FakeMessage | None:
        return self.queue.popleft() if self.queue else None

    def consume(self, num_messages: int, timeout: float) -> list[FakeMessage]:
        return [self.queue.popleft() for _ in range(min(num_messages, len(self.queue)))]

    def list_topics(self, topic: str, timeout: float) -> Any:
        class Meta:
            partitions = {p: None for p in self.watermarks}
            error = None

        class Cluster:
            topics = {TOPIC: Meta()}

        return Cluster()

    def close(self) -> None:
        self.closed = True


class Always(list[KafkaError]):
    """Refusals that never run out."""

    def pop(self, index: SupportsIndex = -1) -> KafkaError:
        return self[0]


def soon() -> float:
    return time.monotonic() + 5


def test_a_reader_stops_at_the_ends_it_saw_and_drops_what_came_later() -> None:
    consumer = Partitions(
        {0: (0, 2), 1: (0, 0), 2: (3, 5)}, record(0, 0), record(2, 3), record(0, 1), record(0, 2)
    )
    reader = TopicReader(consumer, TOPIC, follow=False)
    reader.assign([2, 1, 0], deadline=soon())
    assert [(tp.partition, tp.offset) for tp in consumer.assigned] == [
        (0, OFFSET_BEGINNING),
        (2, OFFSET_BEGINNING),
    ]
    assert reader.ends == {0: 2, 1: 0, 2: 5} and not reader.caught_up
    records, errors = reader.read(0.1, 100)
    assert [(r.partition(), r.offset()) for r in records] == [(0, 0), (2, 3), (0, 1)] and errors == []
    assert not reader.caught_up  # partition 2: offset 4 is a gap left by compaction, its end comes next
    consumer.queue.extend([end(2, 5), record(2, 5)])
    records, _ = reader.read(0.1, 100)
    assert records == [] and reader.caught_up


def test_a_follower_assigns_empty_partitions_too_and_reads_on() -> None:
    consumer = Partitions({0: (0, 1), 1: (0, 0)}, record(0, 0), record(1, 0), record(0, 1))
    reader = TopicReader(consumer, TOPIC, follow=True)
    reader.assign([0, 1], deadline=soon())
    assert [tp.partition for tp in consumer.assigned] == [0, 1]
    records, _ = reader.read(0.1, 2)  # the batch bound: the third record waits
    assert [(r.partition(), r.offset()) for r in records] == [(0, 0), (1, 0)] and reader.caught_up
    assert [(r.partition(), r.offset()) for r in reader.read(0.1, 2).records] == [(0, 1)]
    assert reader.read(0.1, 2) == ([], [])


def test_an_error_is_returned_and_an_end_before_the_end_does_not_count() -> None:
    refused = KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)
    consumer = Partitions({0: (0, 3)}, end(0, 1), FakeMessage(TOPIC, partition=0, error=refused))
    reader = TopicReader(consumer, TOPIC, follow=True)
    reader.assign([0], deadline=soon())
    records, errors = reader.read(0.1, 10)
    assert records == [] and [e.code() for e in errors] == [KafkaError.UNKNOWN_TOPIC_OR_PART]
    assert not reader.caught_up


def test_since_starts_at_the_first_record_that_recent_or_at_the_end() -> None:
    consumer = Partitions({0: (0, 9), 1: (0, 4)})
    consumer.times = {0: 7}  # partition 1: nothing that recent (-1)
    reader = TopicReader(consumer, TOPIC, follow=False)
    reader.assign([0, 1], deadline=soon(), since_ms=1_000)
    assert [(tp.partition, tp.offset) for tp in consumer.assigned] == [(0, 7)]
    consumer.queue.extend([record(0, 7), record(0, 8)])
    assert len(reader.read(0.1, 10).records) == 2 and reader.caught_up


def test_a_partition_without_a_leader_yet_is_asked_again_a_refusal_is_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("core.compacted.time.sleep", lambda _s: None)
    consumer = Partitions({0: (0, 1)})
    consumer.refusals = [KafkaError(KafkaError.LEADER_NOT_AVAILABLE)]
    TopicReader(consumer, TOPIC, follow=False).assign([0], deadline=soon())
    assert consumer.assigned and not consumer.refusals
    consumer.refusals = [KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)]
    with pytest.raises(TopicReadError, match="reading topic t: Broker: Topic authorization failed") as caught:
        TopicReader(consumer, TOPIC, follow=False).assign([0], deadline=soon())
    assert (
        caught.value.error is not None and caught.value.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    )
    consumer.refusals = Always([KafkaError(KafkaError.LEADER_NOT_AVAILABLE)])  # each ask retries it a while
    with pytest.raises(TopicReadError, match="reading topic t timed out: Broker: Leader not available"):
        TopicReader(consumer, TOPIC, follow=False).assign([0], deadline=time.monotonic() - 1)


def test_read_to_end_yields_the_records_then_closes(monkeypatch: pytest.MonkeyPatch) -> None:
    consumer = Partitions(
        {0: (0, 2), 1: (0, 1)}, record(0, 0, b"a"), record(1, 0, b"b", None), record(0, 1, b"c")
    )
    configs: list[dict[str, Any]] = []

    def make(conf: dict[str, Any]) -> Partitions:
        configs.append(conf)
        return consumer

    monkeypatch.setattr(compacted, "Consumer", make)
    assert list(read_to_end(KafkaSettings(), TOPIC)) == [(b"a", b"v"), (b"b", None), (b"c", b"v")]
    assert consumer.closed and configs[0]["enable.partition.eof"] is True
    assert configs[0]["group.id"].startswith("chatlog-reader-") and not configs[0]["enable.auto.commit"]


def test_read_to_end_says_an_error_or_a_timeout_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    failing = Partitions(
        {0: (0, 2)}, FakeMessage(TOPIC, partition=0, error=KafkaError(KafkaError._TRANSPORT))
    )
    monkeypatch.setattr(compacted, "Consumer", lambda _conf: failing)
    with pytest.raises(ChatlogError, match=r"^reading topic t: "):
        list(read_to_end(KafkaSettings(), TOPIC))
    assert failing.closed
    silent = Partitions({0: (0, 2)})
    monkeypatch.setattr(compacted, "Consumer", lambda _conf: silent)
    with pytest.raises(ChatlogError, match="reading topic t timed out after 0s"):
        list(read_to_end(KafkaSettings(), TOPIC, timeout=0.01))


def test_fold_last_value_wins_and_tombstones_remove() -> None:
    records = [
        (b"a", b"1"),
        (b"b", b"1"),
        (b"a", b"2"),
        (b"b", None),
        (b"c", None),  # tombstone for something never added
        (None, b"x"),  # keyless: ignored
        (b"d", b"1"),
        (b"d", None),
        (b"d", b"3"),  # re-added after removal
    ]
    assert fold(records) == {b"a": b"2", b"d": b"3"}
