"""What Kafka holds of a channel that the sink has not written yet, for reads that must not miss it.

The streaming sink commits, per partition of the messages topic, the offset below which everything is
in Cassandra (:mod:`sink.job.written`, group :func:`schemas.topics.sink_written_group`). A read of
recent events asks those offsets and reads the channel's partition from there to its end: the events
keyed by the channel, each copy once (redundant ingester groups log every message twice, with one id).
The channel's partition is the one the ingesters' producer picks (``murmur2_random``, the Java client's
partitioner: aiokafka's murmur2, which faust-streaming brings, computes the same).

Bounds: at most ``serve_fresh_max_records`` records are read per request (the newest of them, when the
sink is that far behind: :attr:`Unwritten.complete` says so), within ``serve_fresh_timeout_s``. Nothing
committed (no streaming sink ever wrote this keyspace from this topic: a keyspace rebuilt by a backfill,
a sink that never ran) adds nothing. Kafka that does not answer makes the read return what it has, marked
incomplete, and the reads of the next :data:`RETRY_AFTER_S` do not ask it; the stored events are answered
anyway.

The consumer never subscribes (it only reads the sink group's committed offsets and assigns itself the
partition it reads), so the reader of each ``chatlog serve`` worker process (:mod:`serve.api.workers`) joins
no group and reads every channel: no partitions are shared out between workers.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from core.errors import one_line
from schemas.chat_event import ChatEvent, InvalidEvent, decode
from schemas.topics import sink_written_group

if TYPE_CHECKING:
    from serve.settings import FreshSettings

log = logging.getLogger(__name__)

RETRY_AFTER_S: Final = 5.0
"""After a failed read, the reads of the next seconds answer without Kafka at once (no request waits for a
Kafka that is down; one warning per failure)."""
METADATA_TTL_S: Final = 60.0
"""How long a partition count is trusted (a topic's partitions can be added, never removed)."""


def partition_of(key: bytes, partitions: int) -> int:
    """The partition the ingesters' producer (librdkafka ``murmur2_random``) gives a non-empty ``key``."""
    from aiokafka.partitioner import murmur2

    hashed: int = murmur2(key)
    return (hashed & 0x7FFFFFFF) % partitions


@dataclass
class Unwritten:
    """The events of a channel beyond what the sink has written, oldest first by Kafka order."""

    events: list[ChatEvent] = field(default_factory=list)
    complete: bool = True
    """False when the read stopped at its bound or its time limit, or Kafka did not answer."""
    read: int = 0
    """Kafka records read (of every channel of the partition)."""


class UnwrittenReader:
    """Reads a channel's unwritten events (see the module doc). Thread-safe: one consumer, one read at a
    time (the reads are short; run them off the event loop)."""

    def __init__(self, settings: FreshSettings, keyspace: str, consumer: Any = None) -> None:
        self.topic = settings.topic_messages
        self.servers = settings.kafka_bootstrap_servers
        self.max_records = settings.serve_fresh_max_records
        self.timeout_s = settings.serve_fresh_timeout_s
        if consumer is None:
            from confluent_kafka import Consumer

            consumer = Consumer(
                {
                    **settings.kafka_client_config(),
                    "group.id": sink_written_group(keyspace),
                    "enable.auto.commit": False,
                    "enable.partition.eof": False,
                    "client.id": "chatlog-serve-fresh",
                    "fetch.wait.max.ms": 10,
                    "log_level": 2,  # a Kafka that is down is one line of read()'s, not librdkafka's
                    "error_cb": _ignored,
                }
            )
        self._consumer = consumer
        self._lock = threading.Lock()
        self._partitions: tuple[float, int] | None = None
        self.failures = 0
        self._down_until = 0.0

    def close(self) -> None:
        with self._lock, contextlib.suppress(RuntimeError):
            self._consumer.close()

    def _partition_count(self, deadline: float) -> int | None:
        cached = self._partitions
        now = time.monotonic()
        if cached is not None and now - cached[0] < METADATA_TTL_S:
            return cached[1]
        metadata = self._consumer.list_topics(self.topic, timeout=max(0.1, deadline - now))
        topic = metadata.topics.get(self.topic)
        if topic is None or topic.error is not None or not topic.partitions:
            return None
        self._partitions = (now, len(topic.partitions))
        return len(topic.partitions)

    def read(self, channel: str, lo_ms: int = 0, hi_ms: int | None = None) -> Unwritten:
        """The unwritten events of ``channel`` (login) sent in ``[lo_ms, hi_ms)``, each message id once."""
        from confluent_kafka import KafkaException

        with self._lock:
            now = time.monotonic()
            if now < self._down_until:
                return Unwritten(complete=False)  # Kafka failed a moment ago: no request waits for it again
            try:
                return self._read(channel.encode(), lo_ms, hi_ms, now + self.timeout_s)
            except KafkaException as exc:
                self.failures += 1
                self._down_until = time.monotonic() + RETRY_AFTER_S
                log.warning(
                    "the unwritten events of %s could not be read from Kafka at %s "
                    "(CHATLOG_KAFKA_BOOTSTRAP_SERVERS), answering from Cassandra alone: %s",
                    channel,
                    self.servers,
                    one_line(exc),
                )
                return Unwritten(complete=False)

    def _read(self, key: bytes, lo_ms: int, hi_ms: int | None, deadline: float) -> Unwritten:
        from confluent_kafka import OFFSET_INVALID, TopicPartition

        out = Unwritten()
        count = self._partition_count(deadline)
        if count is None:
            out.complete = False
            return out
        part = TopicPartition(self.topic, partition_of(key, count))
        committed = self._committed(part, deadline)
        if committed == OFFSET_INVALID:
            return out  # no sink has written this keyspace from this topic: nothing to add to it
        low, high = self._consumer.get_watermark_offsets(part, timeout=max(0.1, deadline - time.monotonic()))
        start = max(low, committed)
        if high - start > self.max_records:
            start, out.complete = high - self.max_records, False
        if start >= high:
            return out
        self._consumer.assign([TopicPartition(self.topic, part.partition, start)])
        seen: set[str] = set()
        try:
            next_offset = start
            while next_offset < high:
                left = deadline - time.monotonic()
                if left <= 0:
                    out.complete = False
                    break
                for record in self._consumer.consume(min(1000, high - next_offset), timeout=min(left, 0.5)):
                    if record.error() is not None:
                        continue
                    next_offset = max(next_offset, record.offset() + 1)
                    out.read += 1
                    if record.key() != key:
                        continue
                    event = _decoded(record.value())
                    if event is None or event.message_id in seen:
                        continue
                    if event.sent_at < lo_ms or (hi_ms is not None and event.sent_at >= hi_ms):
                        continue
                    seen.add(event.message_id)
                    out.events.append(event)
        finally:
            self._consumer.unassign()
        return out

    def _committed(self, part: Any, deadline: float) -> int:
        """The offset the sink committed as written for ``part`` (retried while the group's coordinator
        is being found or loaded, until ``deadline``)."""
        from confluent_kafka import KafkaException

        while True:
            try:
                found: int = self._consumer.committed([part], timeout=max(0.1, deadline - time.monotonic()))[
                    0
                ].offset
                return found
            except KafkaException as exc:
                if not _retriable(exc) or time.monotonic() + 0.05 >= deadline:
                    raise
                time.sleep(0.05)


def _ignored(_error: object) -> None:
    """librdkafka's background errors: a read that fails says so itself (:meth:`UnwrittenReader.read`)."""


def _retriable(exc: Exception) -> bool:
    error = exc.args[0] if exc.args else None
    return bool(getattr(error, "retriable", lambda: False)()) or getattr(error, "code", lambda: None)() in (
        16,  # NOT_COORDINATOR: the group's coordinator moved or is not known yet
        14,  # COORDINATOR_LOAD_IN_PROGRESS
        15,  # COORDINATOR_NOT_AVAILABLE
    )


def _decoded(value: bytes | None) -> ChatEvent | None:
    if value is None:
        return None
    try:
        return decode(value)
    except InvalidEvent:
        return None  # the sink sends it to the dead letters; nothing to show
