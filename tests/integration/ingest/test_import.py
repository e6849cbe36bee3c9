"""``chatlog import`` against the real Kafka: exact contents of the messages and dead-letter topics."""

from __future__ import annotations

import base64
import calendar
import gzip
import io
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from confluent_kafka import Consumer, Message, TopicPartition
from typer.testing import CliRunner

from chatlog.cli import import_ as import_cli
from core.irc_parse import line_hash, parse_line
from core.settings import StackSettings
from ingest.importer import MAX_IMPORT_LINE_BYTES, import_file, timed_line_id
from lab.bench.parse import corpus
from schemas.chat_event import decode

pytestmark = pytest.mark.integration

PRIVMSG_1 = (
    "@display-name=Ronni;id=11111111-4977-403a-8a94-33c6bac34fb8;room-id=1337;tmi-sent-ts=1507246572675;"
    "user-id=1337 :ronni!ronni@ronni.tmi.twitch.tv PRIVMSG #ronni :first"
)
PRIVMSG_2 = (
    "@display-name=Ronni;id=22222222-4977-403a-8a94-33c6bac34fb8;room-id=1337;tmi-sent-ts=1507246572999;"
    "user-id=1337 :ronni!ronni@ronni.tmi.twitch.tv PRIVMSG #ronni :\x01ACTION second\x01"
)
TIMEOUT = (
    "@ban-duration=60;room-id=1337;target-user-id=9;tmi-sent-ts=1507246573000 "
    ":tmi.twitch.tv CLEARCHAT #ronni :bad"
)
OTHER = "@time=2026-11-21T17:09:50.345Z;msgid=399~1~2 :capA7!capA7@127.0.0.1 PRIVMSG #capchan7 :日本 😀"
FILE = (
    b"\xef\xbb\xbf"  # a byte order mark: not part of line 1
    + PRIVMSG_1.encode()
    + b"\r\nPING :tmi.twitch.tv\n"
    + b"not irc\n"
    + PRIVMSG_2.encode()
    + b"\n\n"
    + TIMEOUT.encode()
    + b"\n:n!u@h PRIVMSG someone :hi\n"
    + b"PRIVMSG #x :\xc3\x28\n"
    + OTHER.encode()
    + b"\n@tmi-sent-ts=soon :n!u@h PRIVMSG #"
    + b"x" * 201
    + b" :y\n"
)


def read_all(settings: StackSettings, topic: str, expected: int, timeout_s: float = 60.0) -> list[Message]:
    """Every record of ``topic``, asserting that the topic holds exactly ``expected``."""
    consumer = Consumer(
        settings.kafka_client_config()
        | {"group.id": f"test-read-{topic}", "enable.auto.commit": False, "auto.offset.reset": "earliest"}
    )
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        tps = [TopicPartition(topic, p, 0) for p in partitions]
        total = sum(consumer.get_watermark_offsets(tp, timeout=10)[1] for tp in tps)
        assert total == expected, f"{topic} holds {total} records, expected {expected}"
        consumer.assign(tps)
        out: list[Message] = []
        deadline = time.monotonic() + timeout_s
        while len(out) < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                out.append(msg)
        assert len(out) == expected
        return out
    finally:
        consumer.close()


def header(msg: Message, name: str) -> str:
    value = dict(msg.headers() or [])[name]
    assert isinstance(value, bytes)
    return value.decode()


def test_import_produces_events_and_dead_letters(
    fresh_topics: StackSettings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "export.log"
    path.write_bytes(FILE)
    for key in ("kafka_bootstrap_servers", "topic_messages", "topic_deadletter"):
        monkeypatch.setenv(f"CHATLOG_{key.upper()}", str(getattr(fresh_topics, key)))
    app = typer.Typer()
    app.callback()(lambda: None)  # a group, as on the main app: `import` is a sub-command
    import_cli.register(app)

    result = CliRunner().invoke(app, ["import", str(path)])

    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert result.stderr.splitlines()[-1] == (
        f"import {path}: read 10, events 4, skipped 6 (1 not chat, 4 problems, 1 blank), "
        "produced 4, dead-lettered 4, failed 0"
    )

    records = read_all(fresh_topics, fresh_topics.topic_messages, 4)
    events = [(msg.partition(), msg.key(), decode(msg.value() or b"")) for msg in records]
    assert sorted(e.message_id for _, _, e in events) == sorted(
        [
            "11111111-4977-403a-8a94-33c6bac34fb8",
            "22222222-4977-403a-8a94-33c6bac34fb8",
            line_hash(TIMEOUT),
            "399~1~2",
        ]
    )
    for _, msg_key, event in events:
        assert msg_key == event.channel.encode()
        assert event.ingester == "import"
        expected = parse_line(event.raw, received_at=event.sent_at, ingester="import")
        assert event == expected
    ronni = [e for _, msg_key, e in events if msg_key == b"ronni"]
    assert [e.raw for e in ronni] == [PRIVMSG_1, PRIVMSG_2, TIMEOUT]  # one partition per key: file order
    assert len({part for part, msg_key, _ in events if msg_key == b"ronni"}) == 1
    assert ronni[1].is_action and ronni[1].text == "second"

    dead = read_all(fresh_topics, fresh_topics.topic_deadletter, 4)
    got = sorted((header(msg, "source"), msg.value(), header(msg, "reason")) for msg in dead)
    assert got == [
        (
            f"import:{path}:10",
            b"@tmi-sent-ts=soon :n!u@h PRIVMSG #" + b"x" * 201 + b" :y",
            f"channel name longer than 200 characters (201): '{'x' * 40}...'",
        ),
        (f"import:{path}:3", b"not irc", "not an IRC line (expected '@tags', ':prefix' or a command first)"),
        (f"import:{path}:7", b":n!u@h PRIVMSG someone :hi", "PRIVMSG target 'someone' is not a #channel"),
        (f"import:{path}:8", b"PRIVMSG #x :\xc3\x28", "not UTF-8 (byte 0xc3 at column 13)"),
    ]


def test_a_full_producer_queue_loses_nothing(fresh_topics: StackSettings, tmp_path: Path) -> None:
    lines = corpus(3000)
    path = tmp_path / "corpus.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    expected = sum(1 for line in lines if parse_line(line, received_at=0) is not None)
    reports: list[str] = []

    stats = import_file(
        str(path),
        dry_run=False,
        settings=fresh_topics,
        out=io.BytesIO(),  # unused by a real run
        report=reports.append,
        producer_config={"queue.buffering.max.messages": 50, "linger.ms": 5},  # forces BufferError often
    )

    assert reports == []
    assert (stats.read, stats.events, stats.produced, stats.failed) == (3000, expected, expected, 0)
    assert stats.not_chat == 3000 - expected
    assert stats.queue_full_waits > 0  # the BufferError path was taken
    records = read_all(fresh_topics, fresh_topics.topic_messages, expected)
    raws = sorted(decode(msg.value() or b"").raw for msg in records)
    assert raws == sorted(line for line in lines if parse_line(line, received_at=0) is not None)


def _cli(settings: StackSettings, monkeypatch: pytest.MonkeyPatch) -> typer.Typer:
    for key in ("kafka_bootstrap_servers", "topic_messages", "topic_deadletter"):
        monkeypatch.setenv(f"CHATLOG_{key.upper()}", str(getattr(settings, key)))
    app = typer.Typer()
    app.callback()(lambda: None)  # a group, as on the main app: `import` is a sub-command
    import_cli.register(app)
    return app


@pytest.fixture
def small_messages_topic(fresh_topics: StackSettings) -> Iterator[StackSettings]:
    """``fresh_topics`` with a messages topic that takes records of at most 2 KiB (created so)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    name = f"{fresh_topics.topic_messages}.small"
    admin = AdminClient(fresh_topics.kafka_client_config())
    new = NewTopic(name, num_partitions=1, replication_factor=1, config={"max.message.bytes": "2048"})
    admin.create_topics([new])[name].result(timeout=30)
    deadline = time.monotonic() + 30
    while not (topic := admin.list_topics(name, timeout=10).topics.get(name)) or topic.error is not None:
        assert time.monotonic() < deadline, f"topic {name} not visible"
        time.sleep(0.1)
    yield fresh_topics.model_copy(update={"topic_messages": name})
    admin.delete_topics([name], operation_timeout=30)[name].result(timeout=60)


def test_undeliverable_records_are_counted_and_exit_3(
    small_messages_topic: StackSettings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # every event is within the contract's bounds, so the topic takes less than one of them
    big = ":n!u@h PRIVMSG #big :" + base64.b64encode(os.urandom(9000)).decode()  # zstd cannot shrink it
    path = tmp_path / "big.log"
    path.write_text(f"{big}\n", encoding="utf-8")

    result = CliRunner().invoke(_cli(small_messages_topic, monkeypatch), ["import", str(path)])

    assert result.exit_code == import_cli.EXIT_UNDELIVERED, result.output
    assert "delivery failed" in result.stderr
    assert result.stderr.splitlines()[-1].endswith("produced 0, dead-lettered 0, failed 1")


def test_a_file_of_only_bad_lines_is_dead_lettered_and_exits_1(
    fresh_topics: StackSettings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    huge = b":n!u@h PRIVMSG #big :" + b"x" * 1_200_000  # read piece by piece, never whole
    path = tmp_path / "bad.log"
    path.write_bytes(b"\xef\xbb\xbfnot irc\n" + huge + b"\n\n:n!u@h PRIVMSG nobody :hi\n")

    result = CliRunner().invoke(_cli(fresh_topics, monkeypatch), ["import", str(path)])

    assert result.exit_code == import_cli.EXIT_NOTHING_READ, result.output
    assert result.stderr.splitlines()[-1] == (
        f"chatlog: error: nothing imported from {path}: every line with content was a problem "
        "(3; 3 dead-lettered; the first are listed above)"
    )
    dead = read_all(fresh_topics, fresh_topics.topic_deadletter, 3)
    got = sorted((header(msg, "source"), len(msg.value() or b""), header(msg, "reason")) for msg in dead)
    limit = MAX_IMPORT_LINE_BYTES
    assert got == [
        (f"import:{path}:1", 7, "not an IRC line (expected '@tags', ':prefix' or a command first)"),
        (f"import:{path}:2", limit, f"line longer than {limit} bytes (the dead letter holds the first)"),
        (f"import:{path}:4", 25, "PRIVMSG target 'nobody' is not a #channel"),
    ]


def _import_id(line: str, at: int) -> str:
    """The id the import gives ``line`` when a line without a time of its own gets ``at``: the line's
    own (an id tag, else its hash when it has a time), else the hash of it and ``at``."""
    now = int(time.time() * 1000)  # what the import judges a line's own time against, as it does
    event = parse_line(line, received_at=now)
    assert event is not None
    if event.sent_at != now or event.tags.get("id") or event.tags.get("msgid"):
        return event.message_id
    return timed_line_id(line, at)


def _justlog_tree(root: Path) -> tuple[list[str], list[str]]:
    """A justlog tree of corpus lines (plain and .gz days, lines without tags, a user file, a corrupt
    .gz); returns the chat lines of its channel files, each with an id no other line has, and the ids
    the import gives them (a line without a time of its own: its day + its line number - 1 ms)."""
    lines, ids = [], set()
    for line in corpus(2400):
        event = parse_line(line, received_at=0)
        if event is not None and event.message_id not in ids:  # identical NOTICEs share an id: keep one
            ids.add(event.message_id)
            lines.append(line)
    plain = [f":user{i}!u@h PRIVMSG #plainchan :no tags here {i}" for i in range(300)]
    days = [lines[:600], lines[600:1200], lines[1200:], plain]

    def write(path: Path, day: list[str], *, gz: bool) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = "".join(f"{line}\n" for line in day).encode()
        path.write_bytes(gzip.compress(data) if gz else data)

    import_ids: list[str] = []
    for n, day in enumerate(days, start=1):
        gz = n % 2 == 1
        write(root / "1337" / "2024" / "3" / str(n) / ("channel.txt.gz" if gz else "channel.txt"), day, gz=gz)
        day_ms = calendar.timegm((2024, 3, n, 0, 0, 0)) * 1000
        import_ids += [_import_id(line, day_ms + i) for i, line in enumerate(day)]
    write(root / "1337" / "2024" / "3" / "4242.txt.gz", lines[:100], gz=True)  # a user file: not read
    corrupt = root / "1337" / "2024" / "4" / "1" / "channel.txt.gz"
    corrupt.parent.mkdir(parents=True)
    corrupt.write_bytes(gzip.compress(b"PING :x\n")[:-12])  # cut short
    return [*lines, *plain], import_ids


def test_a_justlog_tree_imported_twice_holds_each_message_id_once_per_import(
    fresh_topics: StackSettings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected, import_ids = _justlog_tree(tmp_path / "logs")
    expected_ids = set(import_ids)
    assert len(expected_ids) == len(expected)
    app = _cli(fresh_topics, monkeypatch)

    summaries = []
    for _ in range(2):
        result = CliRunner().invoke(app, ["import", str(tmp_path / "logs")])
        assert result.exit_code == 0, result.output
        summaries.append(result.stderr.splitlines()[-1])

    assert "not read: 1 user file" in result.stderr
    chat = len(expected)
    assert summaries[0] == summaries[1]
    assert summaries[0].startswith(f"import {tmp_path / 'logs'}: files 5 (1 unreadable or corrupt), ")
    assert summaries[0].endswith(f"produced {chat}, dead-lettered 0, failed 0")
    records = read_all(fresh_topics, fresh_topics.topic_messages, 2 * chat)  # the topic holds both imports
    ids = [decode(msg.value() or b"").message_id for msg in records]
    assert set(ids) == expected_ids  # the sink, keyed by message id, stores each line once
    assert sorted(ids) == sorted([*expected_ids, *expected_ids])


def test_a_justlog_tree_imported_twice_is_stored_once_and_read_back_line_for_line(
    fresh_topics: StackSettings,
    fresh_keyspace: StackSettings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Migration end to end: a justlog tree imported twice into Kafka, both copies written by the sink's
    executor into the id-keyed blocks: each line is stored once in each copy (the channel's, and its user's
    when it has one), and ``chatlog logs --format raw`` gives each channel's lines back exactly as justlog
    held them."""
    from chatlog.cli import logs as logs_cli
    from sink.settings import SinkSettings
    from sink.writer.partition import write_partition
    from store.keys import filed_under
    from store.write import close_sessions
    from tests.integration.sink.records import message_ids, uuids

    expected, import_ids = _justlog_tree(tmp_path / "logs")
    app = _cli(fresh_topics, monkeypatch)
    for _ in range(2):
        assert CliRunner().invoke(app, ["import", str(tmp_path / "logs")]).exit_code == 0
    records = read_all(fresh_topics, fresh_topics.topic_messages, 2 * len(expected))

    settings = SinkSettings(  # type: ignore[call-arg]  # the rest from the environment's defaults
        topic_messages=fresh_topics.topic_messages,
        topic_deadletter=fresh_topics.topic_deadletter,
        cassandra_keyspace=fresh_keyspace.cassandra_keyspace,
    )
    try:
        stats = write_partition([(m.value(), m.partition(), m.offset()) for m in records], settings)
    finally:
        close_sessions()
    assert (stats.events, stats.deadletters) == (2 * len(expected), 0)
    # twice imported, once stored: each line once in the channel's copy, and in its user's when it has one
    events = [decode(m.value() or b"") for m in records]
    users = {e.message_id for e in events if filed_under(e) is not None}
    assert sorted(message_ids(settings, "channel")) == sorted(uuids(import_ids))
    assert sorted(message_ids(settings, "user")) == sorted(uuids(users))

    by_channel: dict[str, list[str]] = {}
    for line in expected:
        event = parse_line(line, received_at=0)
        assert event is not None
        by_channel.setdefault(event.channel, []).append(line)
    logs_app = typer.Typer()
    logs_cli.register(logs_app)
    monkeypatch.setenv("CHATLOG_CASSANDRA_KEYSPACE", settings.cassandra_keyspace)
    for channel in ("plainchan", max(by_channel, key=lambda c: len(by_channel[c]))):
        result = CliRunner().invoke(logs_app, [channel, "--format", "raw"])
        assert result.exit_code == 0, result.output
        assert sorted(result.stdout.splitlines()) == sorted(by_channel[channel])
