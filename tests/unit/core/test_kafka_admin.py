"""What "the topics are ready" means for ensure_topics (issue 13, item 11), on metadata doubles; the
largest topics the settings allow are ones librdkafka creates."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient, NewTopic, PartitionMetadata, TopicMetadata

from core.kafka_admin import not_ready
from core.settings import KafkaSettings, load
from schemas.topics import topic_specs

MAX_PARTITIONS = 100_000  # librdkafka's limits of a NewTopic
MAX_REPLICATION_FACTOR = 10_000


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


def test_the_largest_partition_count_and_replication_factor_allowed_are_topics_librdkafka_creates() -> None:
    """librdkafka checks a NewTopic when create_topics is called (no broker needed): one past these limits
    is a ValueError there, past int32 an OverflowError in NewTopic; the settings stop both first."""
    settings = load(
        KafkaSettings,
        kafka_bootstrap_servers="127.0.0.1:1",
        channel_buckets=10_000,
        messages_partitions=MAX_PARTITIONS,
        topic_replication_factor=MAX_REPLICATION_FACTOR,
    )
    topics = [
        NewTopic(s.name, num_partitions=s.partitions, replication_factor=settings.topic_replication_factor)
        for s in topic_specs(settings)
    ]
    admin = AdminClient({"bootstrap.servers": settings.kafka_bootstrap_servers, "log_level": 0})
    assert len(admin.create_topics(topics, operation_timeout=0.1, request_timeout=0.1)) == len(topics)
    with pytest.raises(ValueError, match="num_partitions"):
        admin.create_topics([NewTopic("x", num_partitions=MAX_PARTITIONS + 1, replication_factor=1)])
    with pytest.raises(ValueError, match="replication_factor"):
        admin.create_topics([NewTopic("x", num_partitions=1, replication_factor=MAX_REPLICATION_FACTOR + 1)])
