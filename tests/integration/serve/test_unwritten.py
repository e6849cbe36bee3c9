"""Unwritten events from the real Kafka (serve/unwritten.py): the channel's partition as the ingesters'
producer picks it, read from the offsets the sink committed as written, each message once."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from core.settings import StackSettings
from core.testing import chat_events
from ingest.registry import PARTITIONER
from schemas.chat_event import encode
from schemas.topics import sink_written_group
from serve.settings import FreshSettings
from serve.unwritten import UnwrittenReader, partition_of

pytestmark = pytest.mark.integration


def test_the_unwritten_events_of_a_channel_each_once_beyond_the_written_offsets(
    fresh_topics: StackSettings, unique: str
) -> None:
    settings = fresh_topics
    events = chat_events(400, channels=7)
    producer = Producer({**settings.kafka_client_config(), "partitioner": PARTITIONER})
    where: dict[str, set[int]] = {}

    def delivered(err: object, msg: object) -> None:
        assert err is None
        where.setdefault(msg.key().decode(), set()).add(msg.partition())  # type: ignore[attr-defined]

    for _copy in range(2):  # two replica groups: every event twice
        for event in events:
            producer.produce(
                settings.topic_messages,
                key=event.channel.encode(),
                value=encode(event),
                on_delivery=delivered,
            )
        producer.flush(30)
    partitions = settings.messages_partitions
    for channel, found in where.items():  # the reader computes the partition librdkafka picked
        assert found == {partition_of(channel.encode(), partitions)}, channel

    keyspace = f"k{unique}"
    fresh = FreshSettings(**{n: getattr(settings, n) for n in ("kafka_bootstrap_servers", "topic_messages")})
    reader = UnwrittenReader(fresh, keyspace)
    try:
        channel = events[0].channel
        mine = [e for e in events if e.channel == channel]
        assert reader.read(channel).events == []  # no sink wrote this keyspace: nothing to add

        part = partition_of(channel.encode(), partitions)
        committer = Consumer({**settings.kafka_client_config(), "group.id": sink_written_group(keyspace)})
        tp = TopicPartition(settings.topic_messages, part)
        low, high = committer.get_watermark_offsets(tp, timeout=10)
        committer.commit(offsets=[TopicPartition(tp.topic, part, low)], asynchronous=False)
        got = reader.read(channel)  # the sink has written nothing yet: everything, each copy once
        assert got.complete and got.read == high - low
        assert [e.message_id for e in got.events] == [e.message_id for e in mine]

        half = low + (high - low) // 2  # the sink has read the first copy of everything
        committer.commit(offsets=[TopicPartition(tp.topic, part, half)], asynchronous=False)
        beyond = reader.read(channel)  # the second copies (the read side drops those it finds stored)
        assert [e.message_id for e in beyond.events] == [e.message_id for e in mine]
        assert beyond.read == high - half

        window = reader.read(channel, mine[10].sent_at, mine[20].sent_at)
        assert [e.message_id for e in window.events] == [e.message_id for e in mine[10:20]]

        committer.commit(offsets=[TopicPartition(tp.topic, part, high)], asynchronous=False)
        committer.close()
        assert reader.read(channel).events == []  # everything written
    finally:
        reader.close()


def test_a_bound_on_records_read_says_the_answer_is_incomplete(
    fresh_topics: StackSettings, unique: str
) -> None:
    settings = fresh_topics
    events = [e for e in chat_events(300, channels=1)]
    producer = Producer({**settings.kafka_client_config(), "partitioner": PARTITIONER})
    for event in events:
        producer.produce(settings.topic_messages, key=event.channel.encode(), value=encode(event))
    producer.flush(30)
    fresh = FreshSettings.model_validate(
        {
            "kafka_bootstrap_servers": settings.kafka_bootstrap_servers,
            "topic_messages": settings.topic_messages,
            "serve_fresh_max_records": 100,
        }
    )
    keyspace = f"k{unique}"
    part = partition_of(events[0].channel.encode(), settings.messages_partitions)
    committer = Consumer({**settings.kafka_client_config(), "group.id": sink_written_group(keyspace)})
    committer.commit(offsets=[TopicPartition(settings.topic_messages, part, 0)], asynchronous=False)
    committer.close()
    reader = UnwrittenReader(fresh, keyspace)
    try:
        got = reader.read(events[0].channel)
        assert not got.complete
        assert [e.message_id for e in got.events] == [e.message_id for e in events[-100:]]  # the newest
    finally:
        reader.close()
