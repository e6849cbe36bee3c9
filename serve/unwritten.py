"""What Kafka holds of a channel that the sink has not written yet, for reads that must not miss it.

The streaming sink commits, per partition of the messages topic, the offset below which everything is in
Cassandra (:mod:`sink.job.written`, group :func:`schemas.topics.sink_written_group`). A read of recent events
needs the channel's records from there to the partition's end: the events keyed by the channel, each copy once
(redundant ingester groups log every message twice, with one id). The channel's partition is the one the
ingesters' producer picks (``murmur2_random``, the Java client's partitioner; aiokafka's murmur2, which
faust-streaming brings, computes the same).

The tail of each partition a read asked for is kept (:class:`_Tail`): its records from the sink's committed
offset on, read incrementally, each record fetched once however many reads follow, its value decoded only when
a read of its channel needs it (and then kept decoded). A read refreshes the committed offsets (at most every
:data:`COMMITTED_TTL_S`: a stale one only means a few records more, dropped by id against what is stored),
drops what the sink has written since, and reads what was appended since the last read, up to the partition's
end at the time of the read: so a line said before a read started is in its answer.

Where nothing is committed (no streaming sink ever wrote this keyspace from this topic: a first start, a sink
that never ran, a keyspace rebuilt by a backfill), the tail starts at the offsets of :data:`HORIZON_MS` ago
(``offsets_for_times``): what a read of the present can ask for, each event once against what is stored.

Bounds: at most ``serve_fresh_max_records`` records per partition (the newest; :attr:`Unwritten.complete`
says when a read hit it), each read within ``serve_fresh_timeout_s``. A partition no read asked for during
:data:`IDLE_S` is let go. The consumer is assigned a partition only while a read fetches from it. Kafka that
does not answer makes the read return what it has, marked incomplete, and the reads of the next
:data:`RETRY_AFTER_S` do not ask it; the stored events are answered anyway.

The consumer never subscribes (it reads the sink group's committed offsets and assigns itself the partitions
it reads), so the reader of each ``chatlog serve`` worker process (:mod:`serve.api.workers`) joins no group
and reads every channel: no partitions are shared out between workers.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from core.errors import one_line
from core.times import now_ms
from schemas.chat_event import ChatEvent, InvalidEvent, decode
from schemas.topics import sink_written_group

if TYPE_CHECKING:
    from serve.settings import FreshSettings

log = logging.getLogger(__name__)

RETRY_AFTER_S: Final = 5.0
"""After a failed read, the reads of the next seconds answer without Kafka at once."""
METADATA_TTL_S: Final = 60.0
"""How long a partition count is trusted (a topic's partitions can be added, never removed)."""
COMMITTED_TTL_S: Final = 1.0
"""How long the sink's committed offsets are trusted before a read asks them again."""
IDLE_S: Final = 300.0
"""A partition no read asked for during this long is let go (its tail dropped)."""
_POLL_S: Final = 0.1
_IDLE_POLLS: Final = 5
"""Polls without a record after which a read stops short of the end it saw (offsets without records: a
deleted or aborted stretch of the log)."""
HORIZON_MS: Final = 86_400_000
"""Where nothing is committed, a tail starts this long ago (the reads of the present reach back a day)."""


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
    """False when the tail was cut at its bound, the read hit its time limit, or Kafka did not answer."""
    read: int = 0
    """Kafka records fetched by this read (of every channel of the partition)."""


class _Tail:
    """One partition's records from the sink's committed offset (or :data:`HORIZON_MS` ago) to where the last
    read ended, by key (channel): ``[offset, value or decoded event]``, oldest first."""

    __slots__ = ("by_key", "committed", "committed_at", "count", "cut", "next", "used")

    def __init__(self, start: int, committed: int | None) -> None:
        self.by_key: dict[bytes | None, deque[list[Any]]] = {}
        self.count = 0
        self.next = start
        self.committed = committed
        self.committed_at = time.monotonic()
        self.cut = False
        """Whether records were dropped at the bound (not yet written, not held)."""
        self.used = time.monotonic()

    def add(self, offset: int, key: bytes | None, value: bytes | None) -> None:
        self.by_key.setdefault(key, deque()).append([offset, value])
        self.count += 1

    def trim(self, committed: int | None) -> None:
        """Drop what the sink has written (everything below ``committed``)."""
        if committed is None or (self.committed is not None and committed <= self.committed):
            return
        self.committed = committed
        for key in list(self.by_key):
            records = self.by_key[key]
            while records and records[0][0] < committed:
                records.popleft()
                self.count -= 1
            if not records:
                del self.by_key[key]
        self.next = max(self.next, committed)
        self.cut = False if self.count == 0 else self.cut

    def bound(self, most: int) -> None:
        """Keep at most ``most`` records, the newest."""
        while self.count > most:
            oldest = min(self.by_key, key=lambda k: self.by_key[k][0][0])
            records = self.by_key[oldest]
            drop = max(1, min(len(records), self.count - most))
            for _ in range(drop):
                records.popleft()
            self.count -= drop
            if not records:
                del self.by_key[oldest]
            self.cut = True

    def clear(self) -> None:
        self.by_key.clear()
        self.count = 0


class UnwrittenReader:
    """Reads a channel's unwritten events (see the module doc). Thread-safe: one consumer, one read at a time
    (the reads are short; run them off the event loop)."""

    def __init__(
        self,
        settings: FreshSettings,
        keyspace: str,
        consumer: Any = None,
        *,
        committed_ttl_s: float = COMMITTED_TTL_S,
    ) -> None:
        self.committed_ttl_s = committed_ttl_s
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
                    "enable.partition.eof": True,
                    "client.id": "chatlog-serve-fresh",
                    "fetch.wait.max.ms": 10,
                    "log_level": 2,  # a Kafka that is down is one line of read()'s, not librdkafka's
                    "error_cb": _ignored,
                }
            )
        self._consumer = consumer
        self._lock = threading.Lock()
        self._partitions: tuple[float, int] | None = None
        self._tails: dict[int, _Tail] = {}
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
                self._drop_all()
                log.warning(
                    "the unwritten events of %s could not be read from Kafka at %s "
                    "(CHATLOG_KAFKA_BOOTSTRAP_SERVERS), answering from Cassandra alone: %s",
                    channel,
                    self.servers,
                    one_line(exc),
                )
                return Unwritten(complete=False)

    def _read(self, key: bytes, lo_ms: int, hi_ms: int | None, deadline: float) -> Unwritten:
        from confluent_kafka import TopicPartition

        out = Unwritten()
        count = self._partition_count(deadline)
        if count is None:
            out.complete = False
            return out
        partition = partition_of(key, count)
        self._let_go_idle()
        tail = self._tails.get(partition)
        if tail is None:
            tail = self._start(partition, deadline)
        elif time.monotonic() - tail.committed_at >= self.committed_ttl_s:
            tail.trim(self._committed(TopicPartition(self.topic, partition), deadline))
            tail.committed_at = time.monotonic()
        if time.monotonic() - tail.used > 5.0:  # not read for a while: maybe far behind
            self._skip_to_bound(partition, tail, deadline)
        tail.used = time.monotonic()
        out.read, out.complete = self._catch_up(partition, tail, deadline)
        out.complete = out.complete and not tail.cut
        seen: set[str] = set()
        for record in tail.by_key.get(key, ()):
            value = record[1]
            if not isinstance(value, ChatEvent):
                value = record[1] = _decoded(value)
            if value is None or value.message_id in seen:
                continue
            if value.sent_at < lo_ms or (hi_ms is not None and value.sent_at >= hi_ms):
                continue
            seen.add(value.message_id)
            out.events.append(value)
        return out

    def _start(self, partition: int, deadline: float) -> _Tail:
        """A new tail of ``partition``: from the sink's committed offset, else from :data:`HORIZON_MS` ago;
        at most :attr:`max_records` before the partition's end."""
        from confluent_kafka import OFFSET_INVALID, TopicPartition

        part = TopicPartition(self.topic, partition)
        committed = self._committed(part, deadline)
        low, high = self._consumer.get_watermark_offsets(part, timeout=max(0.1, deadline - time.monotonic()))
        if committed == OFFSET_INVALID or committed is None:
            since = TopicPartition(self.topic, partition, now_ms() - HORIZON_MS)
            found = self._consumer.offsets_for_times([since], timeout=max(0.1, deadline - time.monotonic()))
            start = found[0].offset if found and found[0].offset >= 0 else high
            committed_at: int | None = None
        else:
            start, committed_at = committed, committed
        start = max(low, start)
        tail = _Tail(start, committed_at)
        if high - start > self.max_records:
            tail.next, tail.cut = high - self.max_records, True
        self._tails[partition] = tail
        return tail

    def _skip_to_bound(self, partition: int, tail: _Tail, deadline: float) -> None:
        """A tail more than :attr:`max_records` behind the partition's end starts again at the newest of
        them (its answers say they are incomplete)."""
        from confluent_kafka import TopicPartition

        part = TopicPartition(self.topic, partition)
        _low, high = self._consumer.get_watermark_offsets(part, timeout=max(0.1, deadline - time.monotonic()))
        if high - tail.next > self.max_records:
            tail.clear()
            tail.next, tail.cut = high - self.max_records, True

    def _catch_up(self, partition: int, tail: _Tail, deadline: float) -> tuple[int, bool]:
        """Fetch what ``partition`` holds beyond ``tail`` up to its end now; (records fetched, whether the end
        was reached in time). The end is asked first (one offsets request, ~0.5 ms here): a tail at the end
        already (most reads: the channel said nothing since the last one) fetches nothing. A fetch of a log
        with nothing new waits for the broker's ``fetch.wait.max.ms`` and the end-of-partition event: 21.8 ms
        a read here, while every request of the channel waited for it. Otherwise the partition is assigned
        from the tail's end only meanwhile (an idle server sends Kafka no fetches) and read up to that end,
        or a fetch response's newer end (librdkafka keeps the last: ``get_watermark_offsets(cached=True)``),
        or the end-of-partition event."""
        from confluent_kafka import KafkaError, TopicPartition

        consumer = self._consumer
        fetched = 0
        part = TopicPartition(self.topic, partition)
        _low, end = consumer.get_watermark_offsets(part, timeout=max(0.1, deadline - time.monotonic()))
        if tail.next >= end:
            tail.bound(self.max_records)
            return 0, True
        consumer.assign([TopicPartition(self.topic, partition, tail.next)])
        try:
            idle = 0
            while idle < _IDLE_POLLS:
                left = deadline - time.monotonic()
                if left <= 0:
                    return fetched, False
                batch = consumer.consume(10_000, timeout=0)  # what is there, at once
                if not batch:
                    one = consumer.poll(min(left, _POLL_S))  # the next record or event, as soon as it comes
                    batch = [one] if one is not None else []
                idle = 0 if batch else idle + 1
                for record in batch:
                    error = record.error()
                    if error is not None:
                        if error.code() == KafkaError._PARTITION_EOF and record.partition() == partition:
                            tail.bound(self.max_records)
                            return fetched, True
                        continue
                    offset = record.offset()
                    if record.partition() != partition or offset < tail.next:
                        continue
                    tail.next = offset + 1
                    tail.add(offset, record.key(), record.value())
                    fetched += 1
                if tail.next >= end or (
                    fetched and tail.next >= consumer.get_watermark_offsets(part, cached=True)[1]
                ):
                    tail.bound(self.max_records)  # records came, so the cached end is of a fetch of this read
                    return fetched, True
        finally:
            consumer.unassign()
        tail.bound(self.max_records)
        return fetched, False

    def _let_go_idle(self) -> None:
        now = time.monotonic()
        for partition in [p for p, tail in self._tails.items() if now - tail.used > IDLE_S]:
            del self._tails[partition]

    def _drop_all(self) -> None:
        """After a failure: every tail let go (they start again from the committed offsets)."""
        self._tails.clear()

    def _committed(self, part: Any, deadline: float) -> int | None:
        """The offset the sink committed as written for ``part`` (None: nothing committed), retried while the
        group's coordinator is being found or loaded, until ``deadline``."""
        from confluent_kafka import OFFSET_INVALID, KafkaException

        while True:
            try:
                found: int = self._consumer.committed([part], timeout=max(0.1, deadline - time.monotonic()))[
                    0
                ].offset
                return None if found == OFFSET_INVALID or found < 0 else found
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
