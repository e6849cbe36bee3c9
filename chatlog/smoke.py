"""A smoke run of the real parts: one chat event through Kafka, one row through Cassandra."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, Producer

from core.cql import connect
from core.errors import ChatlogError
from core.settings import StackSettings
from schemas import chat_event, cql


def run(settings: StackSettings) -> str:
    now = int(time.time() * 1000)
    event = chat_event.ChatEvent(
        message_id=str(uuid.uuid4()),
        kind="PRIVMSG",
        channel="smoke",
        user_login="smoke",
        text="hello",
        sent_at=now,
        received_at=now,
        raw="PRIVMSG #smoke :hello",
    )
    producer = Producer({**settings.kafka_client_config(), "enable.idempotence": True})
    producer.produce(settings.topic_messages, key=event.channel.encode(), value=chat_event.encode(event))
    if producer.flush(30) != 0:
        raise ChatlogError("smoke: Kafka did not acknowledge the record within 30s")
    consumer = Consumer(
        {
            **settings.kafka_client_config(),
            "group.id": f"smoke-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([settings.topic_messages])
    got = None
    deadline = time.monotonic() + 30
    while got is None and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            candidate = chat_event.decode(msg.value() or b"")
            if candidate.message_id == event.message_id:
                got = candidate
    consumer.close()
    if got is None:
        raise ChatlogError("smoke: the record did not come back from Kafka within 30s")
    cluster, session = connect(settings, keyspace=settings.cassandra_keyspace)
    try:
        session.execute(
            "INSERT INTO messages_by_channel (channel, bucket, sent_at, message_id, kind, text, raw) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (
                got.channel,
                cql.bucket_of(got.sent_at),
                got.sent_at,
                got.message_id,
                got.kind,
                got.text,
                got.raw,
            ),
        )
        row = session.execute(
            "SELECT text FROM messages_by_channel "
            "WHERE channel=%s AND bucket=%s AND sent_at=%s AND message_id=%s",
            (got.channel, cql.bucket_of(got.sent_at), got.sent_at, got.message_id),
        ).one()
    finally:
        cluster.shutdown()
    if row is None or row.text != "hello":
        raise ChatlogError("smoke: the row was not readable from Cassandra")
    return f"smoke ok: event {event.message_id} went through Kafka and Cassandra"
