"""A smoke run of the real parts: one chat event through Kafka, one block through Cassandra."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, Producer

from core.cql import open_session, quiet_driver_logs
from core.errors import ChatlogError
from core.irc_parse import parse_line
from core.kafka_probe import QUIET, probe
from core.settings import StackSettings
from core.times import now_ms
from schemas import chat_event


def run(settings: StackSettings) -> str:
    now = now_ms()
    message_id = str(uuid.uuid4())
    # a line as Twitch sends one without a room-id (as the local IRC server's are): its row's key is
    # `login:smoke`, and the stored line leaves out the id and tmi-sent-ts values the key holds
    raw = f"@id={message_id};tmi-sent-ts={now} :smoke!smoke@smoke.tmi.twitch.tv PRIVMSG #smoke :hello"
    event = parse_line(raw, received_at=now, ingester="smoke")
    if event is None or event.message_id != message_id or event.sent_at != now or event.text != "hello":
        raise ChatlogError("smoke: the IRC parser did not read the smoke line back")
    probe(settings)  # Kafka down: one line naming the settings, not librdkafka's lines for 30 s
    producer = Producer({**settings.kafka_client_config(), **QUIET, **settings.producer_guarantees()})
    producer.produce(settings.topic_messages, key=event.channel.encode(), value=chat_event.encode(event))
    if producer.flush(30) != 0:
        raise ChatlogError("smoke: Kafka did not acknowledge the record within 30s")
    consumer = Consumer(
        {
            **settings.kafka_client_config(),
            **QUIET,
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
    from store.keys import event_channel_key, message_id_bytes, uuid_text
    from store.scan import channel_copies
    from store.schema import require_layout
    from store.stored_line import restore
    from store.write import TaskWrite, WriteOptions, worker_session_of

    quiet_driver_logs()  # a Cassandra that is down is one line (open_session), not the driver's tracebacks
    cluster, session = open_session(settings, keyspace=settings.cassandra_keyspace)
    try:
        require_layout(session, settings.cassandra_keyspace)
        task = TaskWrite(worker_session_of(session), WriteOptions(keyspace=settings.cassandra_keyspace))
        task.add(got)
        task.finish()
        copies = channel_copies(
            session, settings.cassandra_keyspace, [event_channel_key(got)], got.sent_at, got.sent_at + 1
        )
        mid = message_id_bytes(got.message_id)
        found = [line for _key, line, _at in copies if line[1] == mid]
    finally:
        cluster.shutdown()
    if not found or restore(found[0][2], uuid_text(found[0][1]), found[0][0]) != raw:
        raise ChatlogError("smoke: the line was not readable from Cassandra")
    return f"smoke ok: event {event.message_id} went through Kafka and Cassandra"
