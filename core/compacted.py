"""Reading a topic to its end: the channel registry, the heartbeats and the opt-out registry.

A :class:`TopicReader` assigns itself partitions of one topic from their beginning (no consumer group,
nothing committed: it is stateless) and notes the end offset each had at that moment. It is caught up
once every partition was read to that end; then it stops (:func:`read_to_end`) or goes on reading what
comes (a follower, such as :class:`consent.registry.OptOutRegistry`). :func:`fold` gives a compacted
topic's records the meaning compaction gives them: the last value of a key wins, a tombstone removes it.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final, NamedTuple, TypeVar

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message, TopicPartition

from core import kafka_offsets
from core.errors import ChatlogError
from core.settings import KafkaSettings

BATCH: Final = 10_000
"""Records taken from the consumer at once by :func:`read_to_end`."""
POLL_S: Final = 0.5
"""Longest wait of one poll of :func:`read_to_end` (it checks its deadline between polls)."""
FOLLOW_FETCH_WAIT_MS: Final = 5000
"""librdkafka ``fetch.wait.max.ms`` of a consumer that follows a quiet topic to its end and beyond (the
opt-out registry, the coverage watch, the ledger). A record answers a waiting fetch at once whatever this
is (a fetch waits for ``fetch.min.bytes``, one byte); the wait bounds only an idle follower's requests,
one per wait (the broker's CPU goes with requests), and how soon a partition-end event comes, which
:class:`TopicReader` needs only where compaction left a gap at a partition's end."""


_NEW_TOPIC_PATIENCE_S: Final = 5.0
_T = TypeVar("_T")
_NO_LEADER_YET: Final = kafka_offsets.LEADER_MOVING | {
    KafkaError.UNKNOWN_TOPIC_OR_PART,
    KafkaError._UNKNOWN_PARTITION,
}


class TopicReadError(ChatlogError):
    """The end offsets of a topic could not be read; ``error`` is librdkafka's, when it gave one."""

    def __init__(self, message: str, error: KafkaError | None = None) -> None:
        super().__init__(message)
        self.error = error


class Batch(NamedTuple):
    """What one :meth:`TopicReader.read` took: the records, and the errors other than a partition's end."""

    records: list[Message]
    errors: list[KafkaError]


def reader_config(settings: KafkaSettings, group_id: str, **extra: Any) -> dict[str, Any]:
    """librdkafka settings of a stateless reader: a group id it never joins, nothing committed, and a
    message at each partition's end (how a reader knows it has caught up)."""
    return {
        **settings.kafka_client_config(),
        "group.id": group_id,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": True,
        **extra,
    }


def follower_options(client_id: str) -> dict[str, Any]:
    """The librdkafka keys of a follower of a quiet topic: its name to the broker, and its fetch wait
    (:data:`FOLLOW_FETCH_WAIT_MS`)."""
    return {"client.id": client_id, "fetch.wait.max.ms": FOLLOW_FETCH_WAIT_MS}


class TopicReader:
    """Partitions of ``topic`` read from their beginning over ``consumer`` (see the module doc).

    ``follow``: records past the end offsets are read too (else they are dropped, and a partition read to
    its end is not read further)."""

    def __init__(self, consumer: Any, topic: str, *, follow: bool) -> None:
        self.consumer = consumer
        self.topic = topic
        self.follow = follow
        self.ends: dict[int, int] = {}
        """Partition -> its end offset when :meth:`assign` read it."""
        self._behind: set[int] = set()

    @property
    def caught_up(self) -> bool:
        """Every partition was read up to the end offset it had at :meth:`assign`."""
        return not self._behind

    def assign(self, partitions: Iterable[int], *, deadline: float, since_ms: int | None = None) -> None:
        """Note each partition's end offset and assign it from its beginning (with ``since_ms``: from its
        first record of that time or later). A partition with nothing to read is caught up at once (and
        assigned only when following). Retries while a new topic's partition has no leader yet, until
        ``deadline`` (``time.monotonic()``); :class:`TopicReadError` when it cannot."""
        wanted = sorted(partitions)
        bounds = self._asked(lambda t: kafka_offsets.bounds(self.consumer, self.topic, wanted, t), deadline)
        starts: dict[int, int] = {}
        if since_ms is not None:  # -1: nothing that recent
            recent = [p for p in wanted if bounds[p][1] > bounds[p][0]]
            found = self._asked(
                lambda t: kafka_offsets.offsets_at(self.consumer, self.topic, recent, since_ms, t), deadline
            )
            starts = {p: offset if offset >= 0 else bounds[p][1] for p, offset in found.items()}
        assignment = []
        for p in wanted:
            low, high = bounds[p]
            low = starts.get(p, low)
            self.ends[p] = high
            if high > low:
                self._behind.add(p)
            if high > low or self.follow:
                assignment.append(TopicPartition(self.topic, p, starts.get(p, OFFSET_BEGINNING)))
        if assignment:
            self.consumer.assign(assignment)

    def _asked(self, ask: Callable[[float], _T], deadline: float) -> _T:
        """``ask(timeout)``, again while a new topic's partition has no leader yet, until ``deadline``."""
        while True:
            try:
                return ask(max(1.0, deadline - time.monotonic()))
            except KafkaException as exc:
                err = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
                if err is None or (not err.retriable() and err.code() not in _NO_LEADER_YET):
                    raise TopicReadError(f"reading topic {self.topic}: {_text(exc)}", err) from None
                if time.monotonic() > deadline:
                    raise TopicReadError(f"reading topic {self.topic} timed out: {err.str()}", err) from None
                time.sleep(0.2)

    def read(self, timeout: float, max_records: int) -> Batch:
        """Wait up to ``timeout`` for a record, then take what else is there (``max_records`` at most):
        a record that arrives ends the wait at once."""
        first = self.consumer.poll(timeout)
        if first is None:
            return Batch([], [])
        records: list[Message] = []
        errors: list[KafkaError] = []
        for msg in [first, *self.consumer.consume(max_records - 1, 0)]:
            partition = msg.partition()
            offset = msg.offset() or 0
            err = msg.error()
            if err is not None:
                if err.code() != KafkaError._PARTITION_EOF:
                    errors.append(err)
                elif partition in self._behind and offset >= self.ends[partition]:
                    self._behind.discard(partition)  # the end can be a gap left by compaction
                continue
            if partition in self._behind:
                if offset + 1 >= self.ends[partition]:
                    self._behind.discard(partition)
            elif not self.follow:
                continue
            records.append(msg)
        return Batch(records, errors)

    def close(self) -> None:
        self.consumer.close()


def _text(exc: KafkaException) -> str:
    err = exc.args[0] if exc.args else exc
    return err.str() if isinstance(err, KafkaError) else str(err)


def read_to_end(
    settings: KafkaSettings, topic: str, *, timeout: float = 30.0, since_ms: int | None = None
) -> Iterator[tuple[bytes | None, bytes | None]]:
    """Every (key, value) of ``topic`` up to the end offsets seen at the start (log order per partition).

    ``since_ms`` starts each partition at the first record with that timestamp or later instead of at
    its beginning. :class:`ChatlogError` (one line) when Kafka or the topic is not there, or the end is
    not reached within ``timeout`` seconds.
    """
    consumer = Consumer(reader_config(settings, f"chatlog-reader-{uuid.uuid4().hex}", log_level=2))
    reader = TopicReader(consumer, topic, follow=False)
    try:
        deadline = time.monotonic() + timeout
        meta = _topic_metadata(consumer, topic, settings.kafka_bootstrap_servers, timeout)
        reader.assign(meta.partitions, deadline=deadline, since_ms=since_ms)
        while not reader.caught_up:
            if time.monotonic() > deadline:
                raise ChatlogError(f"reading topic {topic} timed out after {timeout:.0f}s")
            records, errors = reader.read(POLL_S, BATCH)
            if errors:
                raise ChatlogError(f"reading topic {topic}: {errors[0]}")
            for msg in records:
                yield msg.key(), msg.value()
    finally:
        reader.close()


def _topic_metadata(consumer: Consumer, topic: str, servers: str, timeout: float) -> Any:
    """The topic's metadata; a topic created a moment ago gets a few seconds to show up."""
    patience = time.monotonic() + min(timeout, _NEW_TOPIC_PATIENCE_S)
    while True:
        try:
            meta = consumer.list_topics(topic, timeout=min(timeout, 15.0)).topics.get(topic)
        except KafkaException as exc:
            raise ChatlogError(f"cannot reach Kafka at {servers}: {exc}") from None
        if meta is not None and meta.error is None and meta.partitions:
            return meta
        if time.monotonic() > patience:
            raise ChatlogError(f"Kafka topic {topic} does not exist (run `chatlog stack up`?)")
        time.sleep(0.2)


def fold(records: Iterable[tuple[bytes | None, bytes | None]]) -> dict[bytes, bytes]:
    """Compaction semantics over records in log order: the last value per key wins, a tombstone removes."""
    latest: dict[bytes, bytes] = {}
    for key, value in records:
        if key is None:
            continue
        if value is None:
            latest.pop(key, None)
        else:
            latest[key] = value
    return latest
