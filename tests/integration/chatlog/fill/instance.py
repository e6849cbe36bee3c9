"""What a fill left in its instance: the messages topic's records, and the lines once stored."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from core.settings import StackSettings
from sink.settings import SinkSettings


def sink_settings(settings: StackSettings, tmp_path: Path) -> SinkSettings:
    values: dict[str, Any] = {
        "cassandra_keyspace": settings.cassandra_keyspace,
        "topic_messages": settings.topic_messages,
        "topic_deadletter": settings.topic_deadletter,
        "sink_checkpoint": str(tmp_path / "checkpoint"),
        "sink_metrics_port": 0,
    }
    return SinkSettings(**values)


def records(settings: StackSettings) -> list[bytes]:
    """Every value of the instance's messages topic."""
    topic = settings.topic_messages
    consumer = Consumer(
        settings.kafka_client_config()
        | {
            "group.id": f"t-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        tps = [TopicPartition(topic, p, 0) for p in parts]
        total = sum(consumer.get_watermark_offsets(tp, timeout=10)[1] for tp in tps)
        consumer.assign(tps)
        out: list[bytes] = []
        while len(out) < total:
            msg = consumer.poll(10)
            assert msg is not None, f"read {len(out)} of {total} records"
            if msg.error() is None:
                out.append(msg.value() or b"")
        return out
    finally:
        consumer.close()


def store_records(settings: StackSettings, tmp_path: Path) -> None:
    """Write the topic's records into the keyspace as the sink does (a backfill run would)."""
    from sink.writer.partition import write_partition
    from store.write import close_sessions

    write_partition(((value, None, None) for value in records(settings)), sink_settings(settings, tmp_path))
    close_sessions()
