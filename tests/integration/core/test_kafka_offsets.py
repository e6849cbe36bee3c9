"""A topic's offsets in one ListOffsets request for all its partitions (:mod:`core.kafka_offsets`) are the
offsets librdkafka gives one partition at a time, on the real broker."""

from __future__ import annotations

import contextlib
import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from core import kafka_offsets
from core.kafka_admin import admin_client, ensure_topics
from core.settings import StackSettings
from schemas.topics import topic_specs

pytestmark = pytest.mark.integration

PARTITIONS = 16


def test_bounds_and_a_times_offsets_are_those_asked_one_partition_at_a_time(
    stack: StackSettings, unique: str
) -> None:
    settings = stack.with_topics(f"t{unique}", channel_buckets=PARTITIONS, messages_partitions=4)
    ensure_topics(settings)
    topic = settings.topic_channels
    producer = Producer({**settings.kafka_client_config(), "log_level": 0})
    first_ms = int(time.time() * 1000) - 60_000
    for p in range(0, PARTITIONS, 3):  # some partitions empty, the others with p + 1 records, a minute apart
        for i in range(p + 1):
            producer.produce(topic, key=b"k", value=b"v", partition=p, timestamp=first_ms + i * 1000)
    assert producer.flush(30) == 0
    consumer = Consumer({**settings.kafka_client_config(), "group.id": f"g{unique}", "log_level": 0})
    try:
        partitions = list(range(PARTITIONS))
        one_by_one = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10) for p in partitions
        }
        assert kafka_offsets.bounds(consumer, topic, partitions, 10) == one_by_one
        assert kafka_offsets.ends(consumer, topic, partitions, 10) == {
            p: hi for p, (_lo, hi) in one_by_one.items()
        }
        assert kafka_offsets.ends(consumer, topic, [], 10) == {}

        at = (
            first_ms + 2500
        )  # the third record's time: offset 3 where there is one, else -1 (none that recent)
        assert kafka_offsets.offsets_at(consumer, topic, partitions, at, 10) == {
            p: 3 if one_by_one[p][1] > 3 else -1 for p in partitions
        }
        assert kafka_offsets.offsets_at(consumer, topic, [3], at, 10) == {
            tp.partition: tp.offset for tp in consumer.offsets_for_times([TopicPartition(topic, 3, at)], 10)
        }
        with pytest.raises(KafkaException):  # a partition the topic does not have
            kafka_offsets.bounds(consumer, topic, [0, PARTITIONS], 5)
    finally:
        consumer.close()
        names = [spec.name for spec in topic_specs(settings)]
        for fut in admin_client(stack).delete_topics(names, operation_timeout=30).values():
            with contextlib.suppress(Exception):
                fut.result(timeout=60)
