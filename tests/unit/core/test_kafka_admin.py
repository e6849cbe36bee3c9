"""What "the topics are ready" means for ensure_topics (issue 13, item 11), on metadata doubles."""

from __future__ import annotations

from confluent_kafka import KafkaError
from confluent_kafka.admin import PartitionMetadata, TopicMetadata

from core.kafka_admin import not_ready


def _topic(leaders: list[int], error: KafkaError | None = None) -> TopicMetadata:
    meta = TopicMetadata()
    meta.error = error
    for i, leader in enumerate(leaders):
        p = PartitionMetadata()
        p.id, p.leader = i, leader
        meta.partitions[i] = p
    return meta


def test_a_topic_is_ready_when_every_partition_has_a_leader() -> None:
    topics = {
        "a": _topic([1, 1, 1]),
        "b": _topic([1, -1]),
        "c": _topic([]),
        "d": _topic([1], error=KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)),
    }
    assert not_ready(topics, {"a": 3}) == []
    assert not_ready(topics, {"a": None}) == []  # an existing topic: any partition count
    assert not_ready(topics, {"a": 4}) == ["a"]  # created with 4, metadata shows 3 so far
    assert not_ready(topics, {"b": 2, "c": None, "d": 1, "e": 1}) == ["b", "c", "d", "e"]
