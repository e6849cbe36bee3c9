"""Records written into Kafka as fast as it takes them: what a benchmark's loader does with every record,
never dropping one."""

from __future__ import annotations

from typing import Any


def produce(
    producer: Any, topic: str, value: bytes | None, key: str | bytes | None, *, wait_s: float = 0.05
) -> None:
    """One record queued on ``producer`` (librdkafka's): while its local queue is full, deliveries are
    served for ``wait_s`` and the record is tried again."""
    while True:
        try:
            producer.produce(topic, value, key)
            return
        except BufferError:
            producer.poll(wait_s)
