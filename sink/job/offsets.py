"""The Kafka offsets of a time range, per partition: what a backfill reads.

Spark's Kafka source can start at a timestamp, but it fails the whole query when a partition holds no
record at or after that time (the normal case for a quiet channel's partition). So the range is
resolved here, once, with Kafka's own offsets-for-times lookup, and handed to Spark as exact
per-partition offsets: a partition with nothing in the range starts and ends at its end offset and is
read as empty.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from confluent_kafka import Consumer, KafkaException

from core import kafka_offsets
from core.errors import ChatlogError

if TYPE_CHECKING:
    from core.settings import KafkaSettings

NO_OFFSET = -1
"""What Kafka answers for a time after the partition's last record."""


@dataclass(frozen=True)
class PartitionRange:
    """Offsets ``[start, end)`` of one partition."""

    partition: int
    start: int
    end: int

    @property
    def records(self) -> int:
        return max(0, self.end - self.start)


@dataclass(frozen=True)
class TopicRange:
    """The offsets of one topic that hold the records of a time range."""

    topic: str
    partitions: tuple[PartitionRange, ...]

    @property
    def records(self) -> int:
        """Records in the range (an upper bound: compaction or retention may have removed some)."""
        return sum(p.records for p in self.partitions)

    def spark_options(self) -> dict[str, str]:
        """``assign`` plus ``startingOffsets`` / ``endingOffsets`` for Spark's Kafka source, exact."""
        start = {str(p.partition): p.start for p in self.partitions}
        end = {str(p.partition): p.end for p in self.partitions}
        return {
            "assign": json.dumps({self.topic: [p.partition for p in self.partitions]}),
            "startingOffsets": json.dumps({self.topic: start}),
            "endingOffsets": json.dumps({self.topic: end}),
        }


def resolve(
    partitions: list[int],
    high: dict[int, int],
    at_start: dict[int, int],
    at_end: dict[int, int] | None,
) -> tuple[PartitionRange, ...]:
    """Per partition: the first offset at or after each time, or the end offset when there is none."""
    out = []
    for p in sorted(partitions):
        start = at_start.get(p, NO_OFFSET)
        start = high[p] if start < 0 else min(start, high[p])
        end = high[p] if at_end is None else at_end.get(p, NO_OFFSET)
        end = high[p] if end < 0 else min(end, high[p])
        out.append(PartitionRange(p, start, max(start, end)))
    return tuple(out)


def time_range(
    settings: KafkaSettings, start_ms: int, end_ms: int | None, timeout: float = 20.0
) -> TopicRange:
    """The offsets of ``[start_ms, end_ms)`` (Kafka record time) in the message topic, every partition."""
    topic = settings.topic_messages
    consumer = Consumer(
        {
            **settings.kafka_client_config(),
            "group.id": "chatlog-backfill-offsets",
            "enable.auto.commit": False,
            "socket.timeout.ms": int(timeout * 1000),
        }
    )
    try:
        meta = consumer.list_topics(topic, timeout=timeout).topics.get(topic)
        if meta is None or meta.error is not None or not meta.partitions:
            raise ChatlogError(
                f"topic {topic} does not exist at {settings.kafka_bootstrap_servers} (CHATLOG_TOPIC_MESSAGES)"
            )
        partitions = sorted(meta.partitions)
        high = kafka_offsets.ends(consumer, topic, partitions, timeout)
        at_start = kafka_offsets.offsets_at(consumer, topic, partitions, start_ms, timeout)
        at_end = (
            None if end_ms is None else kafka_offsets.offsets_at(consumer, topic, partitions, end_ms, timeout)
        )
    except KafkaException as exc:
        raise ChatlogError(
            f"reading the offsets of {topic} from Kafka at {settings.kafka_bootstrap_servers}: "
            f"{exc.args[0].str() if exc.args else exc}"
        ) from None
    finally:
        consumer.close()
    return TopicRange(topic, resolve(partitions, high, at_start, at_end))
