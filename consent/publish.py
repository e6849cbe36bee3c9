"""Writing to the opt-out topic: opt-outs, lifts (tombstones), self-service codes.

Every write is acknowledged by Kafka (``acks=all``, idempotent producer) before the call returns: a
command that says "opted out" has its record in the topic. A record's key is its partition key, so the
records of one user or channel stay in order.
"""

from __future__ import annotations

from typing import Any, Final

from confluent_kafka import KafkaException, Producer

from consent.records import Code, OptOut, check_id, code_key, encode, key_of, new_code
from consent.settings import optout_topic
from core.errors import ChatlogError
from core.kafka_probe import QUIET
from core.settings import KafkaSettings
from core.times import now_ms

FLUSH_S: Final = 15.0
"""How long one write waits for Kafka's acknowledgement before it is an error."""


class OptOutPublisher:
    """Writes to the opt-out topic (``settings.topic_optout``, else the topic given)."""

    def __init__(self, settings: KafkaSettings, topic: str | None = None) -> None:
        self.settings = settings
        self.topic = topic or optout_topic(settings)
        try:
            self._producer = Producer(
                {
                    **settings.kafka_client_config(),
                    **QUIET,
                    **settings.producer_guarantees(),
                    "linger.ms": 5,
                    "message.timeout.ms": int(FLUSH_S * 1000),
                }
            )
        except KafkaException as exc:
            raise ChatlogError(f"Kafka producer settings rejected: {exc}") from None
        self._failures: list[str] = []

    def add(self, kind: str, id: str, *, reason: str | None, by: str, keep_history: bool = False) -> OptOut:
        """Opt ``kind`` (user or channel) ``id`` out; the record written."""
        record = OptOut(
            kind="user" if kind == "user" else "channel",
            id=check_id(kind, id),
            reason=reason,
            by=by,
            at=now_ms(),
            keep_history=keep_history,
        )
        self._write(record.key, encode(record), record.at)
        return record

    def remove(self, kind: str, id: str, *, by: str) -> None:
        """Lift the opt-out of ``kind`` ``id`` (a tombstone; ``by`` is for the caller's audit row)."""
        self._write(key_of(kind, id), None, now_ms())

    def issue_code(self, *, by: str, ttl_s: float) -> Code:
        """A new self-service code valid for ``ttl_s`` seconds, written to the topic."""
        code = Code(code=new_code(), expires_at=now_ms() + int(ttl_s * 1000), by=by)
        self._write(code.key, encode(code), now_ms())
        return code

    def retire_code(self, code: str) -> None:
        """Tombstone ``code`` (used, or no longer wanted)."""
        self._write(code_key(code), None, now_ms())

    def flush(self, timeout_s: float = FLUSH_S) -> None:
        """Wait for every write; ChatlogError (one line) when one failed or was not acknowledged."""
        left = self._producer.flush(timeout_s)
        failures, self._failures = self._failures, []
        if left or failures:
            detail = failures[0] if failures else f"not acknowledged within {timeout_s:.0f}s"
            raise ChatlogError(
                f"writing to the opt-out topic {self.topic} failed: {detail} "
                "(CHATLOG_KAFKA_BOOTSTRAP_SERVERS)"
            )

    def _write(self, key: str, value: bytes | None, at: int) -> None:
        def on_delivery(err: Any, _msg: Any) -> None:
            if err is not None:
                self._failures.append(err.str() if hasattr(err, "str") else str(err))

        try:
            self._producer.produce(self.topic, value, key.encode(), on_delivery=on_delivery, timestamp=at)
        except (KafkaException, BufferError) as exc:
            raise ChatlogError(f"writing to the opt-out topic {self.topic} failed: {exc}") from None
        self.flush()
