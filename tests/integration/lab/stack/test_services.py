"""The real local stack answers: Kafka round trip, CQL write/read, IRCv3 tags from InspIRCd."""

from __future__ import annotations

import socket
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer

from core.settings import StackSettings
from lab.stack import manager

pytestmark = pytest.mark.integration


def test_status_reports_every_service_up_with_a_pid(stack: StackSettings) -> None:
    states = {s.name: s for s in manager.status(stack)}
    assert set(states) == {"kafka", "cassandra", "inspircd"}
    for state in states.values():
        assert state.state == "up", state
        assert state.pid is not None and state.rss_mib is not None and state.rss_mib > 1


def test_up_again_is_idempotent(stack: StackSettings) -> None:
    before = {s.name: s.pid for s in manager.status(stack)}
    messages: list[str] = []
    manager.up(stack, report=messages.append)
    after = {s.name: s.pid for s in manager.status(stack)}
    assert before == after
    assert sum("already running" in m for m in messages) == 3


def test_kafka_produce_consume_round_trip(fresh_topics: StackSettings) -> None:
    topic = fresh_topics.topic_messages
    key, value = b"somechannel", uuid.uuid4().bytes
    producer = Producer({**fresh_topics.kafka_client_config(), "enable.idempotence": True, "acks": "all"})
    producer.produce(topic, key=key, value=value)
    assert producer.flush(15) == 0
    consumer = Consumer(
        {
            **fresh_topics.kafka_client_config(),
            "group.id": f"rt-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            "group.protocol": "consumer",
        }
    )
    consumer.subscribe([topic])
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                assert (msg.key(), msg.value()) == (key, value)
                return
        pytest.fail("the produced record never came back")
    finally:
        consumer.close()


def test_topics_have_the_specified_partitions_and_policies(stack: StackSettings) -> None:
    from confluent_kafka.admin import ConfigResource

    from core.kafka_admin import admin_client
    from schemas.topics import topic_specs

    admin = admin_client(stack)
    meta = admin.list_topics(timeout=10)
    for spec in topic_specs(stack):
        assert len(meta.topics[spec.name].partitions) == spec.partitions, spec.name
        res = ConfigResource(ConfigResource.Type.TOPIC, spec.name)
        configs = admin.describe_configs([res])[res].result(timeout=10)
        assert configs["cleanup.policy"].value == spec.config["cleanup.policy"], spec.name


def test_cql_write_and_read(fresh_keyspace: StackSettings) -> None:
    """A line written through the one write path is stored once in each copy (the same line written again
    rewrites its block), without the values its key holds, and read back as it came."""
    from msgspec.structs import replace

    from chatlog.cli.log_reader import read_events
    from core.cql import connect
    from core.irc_parse import parse_line
    from store.keys import channel_key, event_channel_key, message_uuid, uuid_text
    from store.scan import channel_copies, stored_ids
    from store.stored_line import restore
    from store.write import Caches, TaskWrite, WriteOptions, worker_session_of

    sent_at, message_id = 1_793_491_200_123, "0f6f4b4e-5a4c-4c1e-9d3b-6a1f2e3d4c5b"
    raw = f"@id={message_id};tmi-sent-ts={sent_at} :u!u@u.tmi.twitch.tv PRIVMSG #c :hello"
    event = parse_line(raw, received_at=sent_at + 5)
    assert event is not None and (event.sent_at, event.message_id) == (sent_at, message_id)
    key, row_id = event_channel_key(event), message_uuid(message_id)
    assert key == channel_key(None, "c") == "login:c" and row_id == uuid.UUID(message_id)
    keyspace = fresh_keyspace.cassandra_keyspace
    cluster, session = connect(fresh_keyspace, keyspace=keyspace)
    try:
        writer = worker_session_of(session)
        # the same line again (another received time: another replica's copy) rewrites its block
        for received in (sent_at + 5, sent_at + 9):
            task = TaskWrite(writer, WriteOptions(keyspace=keyspace), Caches())
            task.add(replace(event, received_at=received))
            task.finish()
        copies = list(channel_copies(session, keyspace, [key], sent_at, sent_at + 1))
        by_copy = {copy: stored_ids(session, keyspace, copy) for copy in ("channel", "user")}
    finally:
        cluster.shutdown()
    assert by_copy == {"channel": [message_id], "user": [message_id]}
    assert [(k, line[0], line[1]) for k, line, _written in copies] == [(key, sent_at, row_id.bytes)]
    stored = copies[0][1][2]
    assert len(stored) < len(raw)
    assert restore(stored, uuid_text(copies[0][1][1]), sent_at) == raw
    assert [e.raw for e in read_events(fresh_keyspace, "c")] == [raw]


def _irc(port: int, nick: str) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(
        f"CAP REQ :message-tags server-time\r\nNICK {nick}\r\nUSER {nick} 0 * :t\r\nCAP END\r\n".encode()
    )
    return sock


def _read_until(sock: socket.socket, predicate: object, timeout: float = 10) -> list[str]:
    buf, lines = b"", []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        buf += sock.recv(65536)
        *complete, buf = buf.split(b"\r\n")
        for raw in complete:
            line = raw.decode()
            lines.append(line)
            if line.startswith("PING"):
                sock.sendall(("PONG" + line[4:] + "\r\n").encode())
            if callable(predicate) and predicate(line):
                return lines
    raise AssertionError(f"timed out; saw {lines[-5:]}")


def test_irc_server_tags_privmsg_with_msgid_and_time(stack: StackSettings) -> None:
    suffix = uuid.uuid4().hex[:6]
    channel = f"#tags{suffix}"
    reader, writer = _irc(stack.irc_port, f"r{suffix}"), _irc(stack.irc_port, f"w{suffix}")
    try:
        for sock in (reader, writer):
            _read_until(sock, lambda ln: " 001 " in ln)
            sock.sendall(f"JOIN {channel}\r\n".encode())
            _read_until(sock, lambda ln: " 366 " in ln)
        writer.sendall(f"PRIVMSG {channel} :hello tags\r\n".encode())
        lines = _read_until(reader, lambda ln: "PRIVMSG" in ln and "hello tags" in ln)
        line = lines[-1]
        assert line.startswith("@")
        tags = dict(t.split("=", 1) for t in line[1:].split(" ", 1)[0].split(";"))
        assert tags.get("msgid")
        assert tags.get("time", "").endswith("Z")
    finally:
        reader.close()
        writer.close()
