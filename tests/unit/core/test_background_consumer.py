"""The life of a background consumer (start, the poll loop, stop, join, failures, retries, closing), over
the consumer double of core/testing.py. No Kafka."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import pytest
from confluent_kafka import KafkaError, KafkaException

from core.background_consumer import BackgroundConsumer
from core.testing import FakeConsumer, FakeMessage

TOPIC = "t"


class Reader(BackgroundConsumer[FakeConsumer]):
    """What a subclass keeps, recorded: opening a new double each time (the first ``open_failures`` times
    failing), what a poll takes, how a failure is told, the end. A record ``raise`` makes the poll fail; a
    record ``close`` closes the reader from its own thread (as a callback may)."""

    def __init__(
        self,
        *,
        retry_s: float | None = None,
        open_failures: int = 0,
        make: Callable[[], FakeConsumer] = FakeConsumer,
    ) -> None:
        super().__init__("test-reader", "test consumer", retry_s=retry_s)
        self.open_failures = open_failures
        self.make = make
        self.opened: list[FakeConsumer] = []
        self.values: list[bytes | None] = []
        self.told: list[Exception] = []
        self.threads: set[tuple[str, bool]] = set()
        self.ended = threading.Event()

    def _open(self) -> FakeConsumer:
        if self.open_failures:
            self.open_failures -= 1
            raise KafkaException(KafkaError(KafkaError._TRANSPORT, "broker down"))
        self.opened.append(self.make())
        return self.opened[-1]

    def _poll(self, consumer: FakeConsumer) -> None:
        thread = threading.current_thread()
        self.threads.add((thread.name, thread.daemon))
        for msg in consumer.consume(10, 0.02):
            if msg.value() == b"raise":
                raise RuntimeError("bad record")
            if msg.value() == b"close":
                self.stop()
                self.join(5)
            self.values.append(msg.value())

    def _failed(self, exc: Exception) -> None:
        self.told.append(exc)

    def _ended(self) -> None:
        self.ended.set()


def until(predicate: Callable[[], bool], what: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


def records(*values: bytes) -> list[FakeMessage]:
    return [FakeMessage(TOPIC, v) for v in values]


def test_the_thread_polls_until_stopped_then_closes_its_consumer_and_ends() -> None:
    reader = Reader()
    assert not reader.alive and not reader.stopping
    reader.start()
    reader.start()  # nothing while it runs
    until(lambda: len(reader.opened) == 1, "the consumer opened")
    consumer = reader.opened[0]
    consumer.feed(*records(b"a", b"b"))
    consumer.feed(*records(b"c"))
    until(lambda: reader.values == [b"a", b"b", b"c"], "every record")
    assert reader.alive and reader.threads == {("test-reader", True)}
    assert not consumer.closed and not reader.ended.is_set()

    reader.stop()
    reader.join(5)
    assert not reader.alive and reader.stopping
    assert consumer.closed and reader.ended.is_set()
    assert reader.failure is None and reader.told == [] and len(reader.opened) == 1


def test_a_failure_ends_the_thread_is_kept_and_told_and_a_new_start_opens_again() -> None:
    reader = Reader()
    reader.start()
    until(lambda: len(reader.opened) == 1, "the consumer opened")
    reader.opened[0].feed(*records(b"a", b"raise"))
    until(lambda: not reader.alive, "the thread to end")
    assert isinstance(reader.failure, RuntimeError) and reader.told == [reader.failure]
    assert reader.opened[0].closed and reader.ended.is_set() and not reader.stopping
    assert reader.values == [b"a"]

    reader.ended.clear()
    reader.start()  # as the live hub does for its next subscriber
    until(lambda: len(reader.opened) == 2, "a second consumer")
    reader.opened[1].feed(*records(b"b"))
    until(lambda: reader.values == [b"a", b"b"], "the record of the second run")
    reader.stop()
    reader.join(5)
    assert reader.opened[1].closed and reader.ended.is_set() and len(reader.told) == 1


def test_with_retry_s_a_failure_closes_the_consumer_waits_and_opens_a_new_one() -> None:
    reader = Reader(retry_s=0.01, open_failures=2)
    reader.start()
    until(lambda: len(reader.opened) == 1, "an open after two failed ones")
    assert [type(e) for e in reader.told] == [KafkaException, KafkaException]
    reader.opened[0].feed(*records(b"raise"))
    until(lambda: len(reader.opened) == 2, "the consumer opened again")
    assert reader.opened[0].closed and not reader.opened[1].closed
    assert isinstance(reader.failure, RuntimeError) and len(reader.told) == 3
    assert reader.alive and not reader.ended.is_set()

    reader.opened[1].feed(*records(b"a"))
    until(lambda: reader.values == [b"a"], "the record after the retry")
    reader.stop()
    reader.join(5)
    assert reader.opened[1].closed and reader.ended.is_set() and not reader.alive


def test_a_stop_cuts_the_retry_wait_short_and_nothing_is_opened_again() -> None:
    reader = Reader(retry_s=60)
    reader.start()
    until(lambda: len(reader.opened) == 1, "the consumer opened")
    reader.opened[0].feed(*records(b"raise"))
    until(lambda: len(reader.told) == 1, "the failure told")
    began = time.monotonic()
    reader.stop()
    reader.join(5)
    assert not reader.alive and time.monotonic() - began < 5
    assert len(reader.opened) == 1 and reader.opened[0].closed and reader.ended.is_set()


def test_a_consumer_that_fails_to_close_is_logged_on_the_subclass_logger_and_the_thread_ends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Stuck(FakeConsumer):
        def close(self) -> None:
            raise RuntimeError("Consumer closed")

    reader = Reader(make=Stuck)
    with caplog.at_level(logging.WARNING, logger=__name__):
        reader.start()
        until(lambda: len(reader.opened) == 1, "the consumer opened")
        reader.stop()
        reader.join(5)
    assert not reader.alive and reader.ended.is_set() and reader.failure is None
    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [
        (__name__, logging.WARNING, "closing the test consumer: Consumer closed")
    ]


def test_joining_from_the_thread_itself_or_before_a_start_returns_at_once() -> None:
    reader = Reader()
    reader.join(5)  # no thread yet
    reader.start()
    until(lambda: len(reader.opened) == 1, "the consumer opened")
    reader.opened[0].feed(*records(b"close"))  # stop() and join() on the thread, as a callback may
    until(lambda: not reader.alive, "the thread to end")
    assert reader.failure is None and reader.told == [] and reader.values == [b"close"]
    assert reader.opened[0].closed and reader.ended.is_set()


def test_a_thread_started_after_a_stop_ends_at_once() -> None:
    reader = Reader()
    reader.stop()
    reader.start()
    reader.join(5)
    assert not reader.alive and reader.opened == [] and reader.ended.is_set()
