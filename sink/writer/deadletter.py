"""Records that are not chat events go to the dead-letter topic, never silently away.

A dead-letter record's value is the original bytes; headers ``reason`` (one line) and ``source``
(``topic/partition/offset`` of the original), the same header names the ingesters use. Delivery is
at least once: a micro-batch that is re-run after a crash sends its dead letters again, with the
same ``source``, so a reader can tell the copies apart.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sink.settings import SinkSettings


class DeadLetterError(RuntimeError):
    """Dead letters could not be delivered to Kafka."""


def headers(reason: str, source: str) -> list[tuple[str, str | bytes | None]]:
    """The headers of a dead-letter record."""
    return [("reason", reason.encode("utf-8", "replace")), ("source", source.encode("utf-8", "replace"))]


class DeadLetters:
    """A Kafka producer of dead letters; one per Python worker (:func:`dead_letters_for`), reused across
    tasks. The producer is created on the first dead letter: most partitions have none."""

    def __init__(self, settings: SinkSettings) -> None:
        self._topic = settings.topic_deadletter
        self._timeout_s = settings.sink_cassandra_retry_s
        self._config = {
            **settings.kafka_client_config(),
            **settings.producer_guarantees(),
            "linger.ms": 20,
            "message.timeout.ms": int(self._timeout_s * 1000),
        }
        self._producer_: Any = None
        self._lock = threading.Lock()
        self._errors: list[str] = []
        self.sent = 0

    @property
    def _producer(self) -> Any:
        if self._producer_ is None:
            from confluent_kafka import Producer

            self._producer_ = Producer(self._config)
        return self._producer_

    def _on_delivery(self, err: Any, _msg: Any) -> None:
        if err is not None:
            with self._lock:
                self._errors.append(str(err))

    def send(self, value: bytes | None, reason: str, source: str) -> None:
        """Queue one dead letter (waits while the producer's queue is full; never drops)."""
        while True:
            try:
                self._producer.produce(
                    self._topic, value, None, headers=headers(reason, source), on_delivery=self._on_delivery
                )
                break
            except BufferError:
                self._producer.poll(0.1)
        self._producer.poll(0)
        self.sent += 1

    def flush(self) -> None:
        """Wait until every queued dead letter is acknowledged; raise if one could not be delivered."""
        if self._producer_ is None:
            return
        left = self._producer.flush(self._timeout_s + 5)
        with self._lock:
            errors, self._errors = self._errors, []
        if left or errors:
            detail = errors[0] if errors else f"{left} still queued after {self._timeout_s:.0f}s"
            raise DeadLetterError(f"dead letters to {self._topic} not delivered: {detail}")


_PROCESS: dict[str, DeadLetters] = {}
_PROCESS_LOCK = threading.Lock()


def dead_letters_for(settings: SinkSettings) -> DeadLetters:
    """This process's dead-letter producer for the cluster and topic of ``settings``."""
    key = f"{settings.kafka_bootstrap_servers}|{settings.topic_deadletter}"
    with _PROCESS_LOCK:
        if key not in _PROCESS:
            _PROCESS[key] = DeadLetters(settings)
        return _PROCESS[key]
