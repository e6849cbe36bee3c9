"""What the sink's integration tests put in and read back: events produced into the message topic (with
duplicates and records that do not parse), rows counted in Cassandra, and the dead letters."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from core.testing import chat_events
from schemas.chat_event import ChatEvent, encode
from sink.settings import SinkSettings
from store.keys import message_uuid


@dataclass
class Produced:
    """What a test put into the message topic."""

    events: dict[str, ChatEvent] = field(default_factory=dict)  # distinct valid events by id
    records: int = 0
    duplicates: int = 0
    bad: dict[str, bytes] = field(default_factory=dict)  # source (topic/partition/offset) -> value

    @property
    def with_user(self) -> int:
        """Events with a user row: a sender, or the user a timeout targets."""
        return sum(1 for e in self.events.values() if e.user_login or e.tags.get("target-user-id"))


def make_events(n: int, *, channels: int = 7, now_ms: int | None = None, tag: str = "") -> list[ChatEvent]:
    """Real Twitch lines parsed (:func:`core.testing.chat_events`); ``tag`` prefixes the message ids."""
    return chat_events(n, channels=channels, now_ms=now_ms, id_prefix=tag)


BAD_VALUES = [b"not json at all", b'{"kind": "PRIVMSG"}', json.dumps({"message_id": 5}).encode(), b"[]"]


def produce(
    settings: SinkSettings,
    events: list[ChatEvent],
    *,
    duplicate_every: int = 4,
    bad_every: int = 250,
    timestamp_ms: int | None = None,
    into: Produced | None = None,
) -> Produced:
    """Produce ``events``; every ``duplicate_every``-th again (another replica's copy), and a malformed
    record every ``bad_every`` events. Records where each bad record landed."""
    produced = into or Produced()
    producer = Producer({**settings.kafka_client_config(), "linger.ms": 10, "enable.idempotence": True})
    bad_positions: list[Any] = []

    def on_bad(err: Any, msg: Any) -> None:
        assert err is None, err
        bad_positions.append(msg)

    stamp = timestamp_ms if timestamp_ms is not None else 0  # 0: the producer's clock
    for i, event in enumerate(events):
        value = encode(event)
        producer.produce(settings.topic_messages, value, event.channel.encode(), timestamp=stamp)
        produced.events[event.message_id] = event
        produced.records += 1
        if i % duplicate_every == 1:
            producer.produce(settings.topic_messages, value, event.channel.encode(), timestamp=stamp)
            produced.records += 1
            produced.duplicates += 1
        if i % bad_every == 7:
            bad = BAD_VALUES[(i // bad_every) % len(BAD_VALUES)]
            producer.produce(settings.topic_messages, bad, b"junk", on_delivery=on_bad, timestamp=stamp)
            produced.records += 1
        producer.poll(0)
    assert producer.flush(30) == 0
    for msg in bad_positions:
        produced.bad[f"{msg.topic()}/{msg.partition()}/{msg.offset()}"] = msg.value()
    return produced


def count(settings: SinkSettings, copy: str = "channel", keyspace: str | None = None) -> int:
    """How many lines one copy (``"channel"`` or ``"user"``) of the keyspace holds, once per block."""
    return len(message_ids(settings, copy, keyspace))


def message_ids(settings: SinkSettings, copy: str = "channel", keyspace: str | None = None) -> list[str]:
    """The message ids of every line of one copy, once per block that holds it (as the uuids
    :func:`uuids` gives for event ids)."""
    from core.cql import connect
    from store.scan import stored_ids

    cluster, session = connect(settings)
    try:
        return stored_ids(session, keyspace or settings.cassandra_keyspace, copy)
    finally:
        cluster.shutdown()


def uuids(message_ids: Iterable[str]) -> list[str]:
    """The ``message_id uuid`` column of each event id (:func:`store.keys.message_uuid`), as text."""
    return [str(message_uuid(m)) for m in message_ids]


def dead_letters(settings: SinkSettings, timeout: float = 20) -> list[tuple[bytes | None, dict[str, str]]]:
    """Every record of the dead-letter topic: (value, headers)."""
    consumer = Consumer(
        {**settings.kafka_client_config(), "group.id": f"dl-{uuid.uuid4().hex}", "enable.auto.commit": False}
    )
    meta = consumer.list_topics(settings.topic_deadletter, timeout=10).topics[settings.topic_deadletter]
    parts = []
    for p in meta.partitions:
        low, high = consumer.get_watermark_offsets(TopicPartition(settings.topic_deadletter, p), timeout=10)
        if high > low:
            parts.append((TopicPartition(settings.topic_deadletter, p, low), high))
    consumer.assign([tp for tp, _ in parts])
    want = sum(high - tp.offset for tp, high in parts)
    out: list[tuple[bytes | None, dict[str, str]]] = []
    deadline = time.monotonic() + timeout
    while len(out) < want and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            headers: Any = msg.headers() or []
            out.append((msg.value(), {k: bytes(v).decode() for k, v in headers}))
    consumer.close()
    return out
