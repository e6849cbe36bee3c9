"""Telling readers how far the sink has written: after each executed micro-batch, the offsets it read up
to are committed to Kafka under :func:`schemas.topics.sink_written_group` (no member consumes in that
group; Spark's own progress stays in its checkpoint). The read side reads the messages topic from these
offsets to its end, so a read never misses what Kafka holds and the sink has not written yet.

A commit is a courtesy, never a condition: it runs off the batches' path (asynchronously, after the batch
is done), a failed one is logged once per outage and retried with the next batch, and the offsets only
move forward. Committed late, a reader reads a few records more (it drops those already stored by
message id); never committed, it reads from the topic's start within its bounds.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from schemas.topics import sink_written_group
from sink.job.progress import end_offsets

if TYPE_CHECKING:
    from sink.settings import SinkSettings

log = logging.getLogger(__name__)


class WrittenOffsets:
    """Commits the end offsets of the executed batches of ``settings.topic_messages``."""

    def __init__(self, settings: SinkSettings, consumer: Any = None) -> None:
        self.topic = settings.topic_messages
        self.group = sink_written_group(settings.cassandra_keyspace)
        if consumer is None:
            from confluent_kafka import Consumer

            consumer = Consumer(
                {
                    **settings.kafka_client_config(),
                    "group.id": self.group,
                    "enable.auto.commit": False,
                    "client.id": "chatlog-sink-written",
                }
            )
        self._consumer = consumer
        self._committed: dict[int, int] = {}
        self._failing = False

    def commit(self, progresses: Iterable[dict[str, Any]]) -> dict[int, int] | None:
        """Commit what the executed ones among ``progresses`` read up to; the offsets committed (None:
        nothing new)."""
        newest: dict[int, int] = {}
        for progress in progresses:
            if "addBatch" not in (progress.get("durationMs") or {}):
                continue  # not executed (no data, or planned only)
            for partition, offset in end_offsets(progress).get(self.topic, {}).items():
                if offset > max(newest.get(partition, -1), self._committed.get(partition, -1)):
                    newest[partition] = offset
        if not newest:
            return None
        from confluent_kafka import KafkaException, TopicPartition

        try:
            self._consumer.poll(0)  # serves the previous commits' results
            self._consumer.commit(
                offsets=[TopicPartition(self.topic, p, o) for p, o in sorted(newest.items())],
                asynchronous=True,
            )
        except KafkaException as exc:
            if not self._failing:
                log.warning(
                    "committing the written offsets to group %s failed (retried): %s", self.group, exc
                )
            self._failing = True
            return None
        self._failing = False
        self._committed.update(newest)
        return newest

    def close(self) -> None:
        with contextlib.suppress(RuntimeError):  # closed already
            self._consumer.close()
