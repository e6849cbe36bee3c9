"""serve/unwritten.py: where a read of a partition's tail ends (a double of the librdkafka consumer: each
poll() and consume() answers from a script, the cached high watermark is what the last fetch told)."""

from __future__ import annotations

from collections import deque
from typing import Any

from confluent_kafka import TopicPartition

from core.testing import FakeMessage, chat_events
from schemas.chat_event import encode
from serve.settings import FreshSettings
from serve.unwritten import UnwrittenReader

TOPIC = "chatlog.messages"


class TailConsumer:
    """One partition (0) of ``TOPIC``, nothing committed past ``committed``. ``fetches`` is what each
    consume()/poll() after an assign() returns, in turn ([]: nothing yet); a batch sets the cached high
    watermark to ``end_after`` of that step. Never sends an end-of-partition event unless scripted."""

    def __init__(self, committed: int, high: int) -> None:
        self._committed = committed
        self.high = high
        self.cached_high = 0
        self.fetches: deque[tuple[list[FakeMessage], int]] = deque()
        self.polls = 0
        self.assigned: list[TopicPartition] = []
        self.assigns = 0

    def list_topics(self, topic: str, timeout: float) -> Any:
        class Topic:
            error = None
            partitions = {0: None}

        class Metadata:
            topics = {TOPIC: Topic()}

        return Metadata()

    def committed(self, parts: list[TopicPartition], timeout: float) -> list[TopicPartition]:
        return [TopicPartition(TOPIC, 0, self._committed)]

    def get_watermark_offsets(
        self, part: TopicPartition, timeout: float = 1.0, cached: bool = False
    ) -> tuple[int, int]:
        return (0, self.cached_high if cached else self.high)

    def assign(self, parts: list[TopicPartition]) -> None:
        self.assigned = parts
        self.assigns += 1

    def unassign(self) -> None:
        self.assigned = []

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[FakeMessage]:
        return self._next()

    def poll(self, timeout: float = -1) -> FakeMessage | None:
        self.polls += 1
        batch = self._next()
        return batch[0] if batch else None

    def _next(self) -> list[FakeMessage]:
        if not self.fetches:
            return []
        batch, end = self.fetches.popleft()
        if batch:
            self.cached_high = end
        return batch

    def close(self) -> None:
        return None


def records(first: int, n: int) -> list[FakeMessage]:
    events = chat_events(n, channels=1)  # all of channel chan0
    return [
        FakeMessage(TOPIC, encode(e), key=b"chan0", partition=0, offset=first + i)
        for i, e in enumerate(events)
    ]


def reader_of(consumer: TailConsumer) -> UnwrittenReader:
    return UnwrittenReader(FreshSettings(), "ks", consumer=consumer, committed_ttl_s=0.0)  # type: ignore[call-arg]


def test_a_fetch_that_reached_the_end_ends_the_read_without_an_end_of_partition_event() -> None:
    consumer = TailConsumer(committed=10, high=15)
    consumer.fetches.append((records(10, 5), 15))  # one fetch brings offsets 10..14; its high watermark is 15
    out = reader_of(consumer).read("chan0")
    assert out.complete and len(out.events) == 5 and out.read == 5
    assert consumer.polls == 0  # no wait for an event that says what the fetch already said


def test_an_end_cached_from_an_earlier_fetch_does_not_end_a_read_that_had_no_records_yet() -> None:
    consumer = TailConsumer(committed=10, high=15)
    reader = reader_of(consumer)
    consumer.fetches.append((records(10, 5), 15))
    assert len(reader.read("chan0").events) == 5
    # the next read: the cached end (15) is the last read's; a line said since arrives on the second poll
    consumer.high = 16
    consumer.fetches.extend([([], 15), ([], 15), (records(15, 1), 16)])
    out = reader.read("chan0")
    assert out.complete and out.read == 1 and len(out.events) == 6


def test_records_short_of_the_fetch_s_end_are_read_on_until_it() -> None:
    consumer = TailConsumer(committed=0, high=8)
    batch = records(0, 8)
    consumer.fetches.extend([(batch[:3], 8), (batch[3:], 8)])  # two batches of one fetch's records
    out = reader_of(consumer).read("chan0")
    assert out.complete and out.read == 8 and len(out.events) == 8


def test_a_tail_at_the_partition_s_end_fetches_nothing() -> None:
    consumer = TailConsumer(committed=10, high=15)
    reader = reader_of(consumer)
    consumer.fetches.append((records(10, 5), 15))
    assert len(reader.read("chan0").events) == 5 and consumer.assigns == 1
    # nothing said since: the end asked first is where the tail is, so no fetch waits on an empty log
    out = reader.read("chan0")
    assert out.complete and out.read == 0 and len(out.events) == 5
    assert consumer.assigns == 1 and consumer.polls == 0
    consumer.high = 17  # two lines said since: fetched up to that end
    consumer.fetches.append((records(15, 2), 16))  # the fetch's own end is older than the one asked
    consumer.fetches.append(([], 16))
    out = reader.read("chan0")
    assert out.complete and out.read == 2 and len(out.events) == 7 and consumer.assigns == 2
