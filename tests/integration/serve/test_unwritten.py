"""Unwritten events from the real Kafka (serve/unwritten.py): the channel's partition as the ingesters'
producer picks it, read from the offsets the sink committed as written (from a day ago where none are),
incrementally (each record fetched once), each message once."""

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
    reader = UnwrittenReader(fresh, keyspace, committed_ttl_s=0)
    try:
        channel = events[0].channel
        mine = [e for e in events if e.channel == channel]
        # no sink wrote this keyspace (nothing committed): what the day holds, each message once
        first = reader.read(channel)
        assert first.complete
        assert [e.message_id for e in first.events] == [e.message_id for e in mine]

        part = partition_of(channel.encode(), partitions)
        committer = Consumer({**settings.kafka_client_config(), "group.id": sink_written_group(keyspace)})
        tp = TopicPartition(settings.topic_messages, part)
        low, high = committer.get_watermark_offsets(tp, timeout=10)
        committer.commit(offsets=[TopicPartition(tp.topic, part, low)], asynchronous=False)
        again = reader.read(channel)  # the sink has written nothing yet: everything, nothing fetched twice
        assert again.complete and again.read == 0
        assert [e.message_id for e in again.events] == [e.message_id for e in mine]

        half = low + (high - low) // 2  # the sink has written the first copy of everything
        committer.commit(offsets=[TopicPartition(tp.topic, part, half)], asynchronous=False)
        beyond = reader.read(channel)  # the second copies (the read side drops those it finds stored)
        assert [e.message_id for e in beyond.events] == [e.message_id for e in mine]

        window = reader.read(channel, mine[10].sent_at, mine[20].sent_at)
        assert [e.message_id for e in window.events] == [e.message_id for e in mine[10:20]]

        more = chat_events(5, channels=1, id_prefix="more-")
        for event in more:
            event.channel = channel
            producer.produce(settings.topic_messages, key=channel.encode(), value=encode(event))
        producer.flush(30)
        grown = reader.read(channel)  # what came since is fetched, and only that
        assert grown.read == len(more)
        assert [e.message_id for e in grown.events] == [e.message_id for e in [*mine, *more]]

        _low, end = committer.get_watermark_offsets(tp, timeout=10)
        committer.commit(offsets=[TopicPartition(tp.topic, part, end)], asynchronous=False)
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
