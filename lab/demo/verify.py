"""What actually arrived: tokens in the messages topic and rows in Cassandra for a set of channels."""

from __future__ import annotations

import logging
import time
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from confluent_kafka import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    KafkaException,
    TopicPartition,
)

from core.compacted import TopicReader, reader_config
from core.cql import connect, pin_to_node
from core.irc_parse import MalformedLine, parse_line
from core.logins import login_of
from core.settings import CassandraSettings, KafkaSettings
from lab.demo.report import CopyTimes
from schemas import chat_event
from schemas.topics import sink_written_group
from store.keys import channel_key
from store.stored_line import VERBATIM


def token_of(text: str | None) -> str | None:
    """The simulator's token: the first word of the message text."""
    if not text:
        return None
    return text.split(" ", 1)[0]


def stored_key(channel: str) -> str:
    """The ``channel_key`` of a simulator channel's rows: its lines (InspIRCd's) carry no ``room-id``,
    so the key is ``login:<channel>`` (:func:`store.keys.channel_key`)."""
    return channel_key(None, login_of(channel))


def text_of_stored(line: str | None) -> str | None:
    """The message text of a stored line (:mod:`store.stored_line`): the text is never stripped (only the
    values of the ``id`` and ``tmi-sent-ts`` tags are), so it is parsed from the stored line as it is (a
    line stored verbatim loses its marker first); ``None`` for a line that is not chat."""
    if not line:
        return None
    if line[:1] == VERBATIM:
        line = line[1:]
    try:
        event = parse_line(line, received_at=0)
    except MalformedLine:
        return None
    return event.text if event is not None else None


class TopicSize:
    """How many records a topic holds (sum of end offsets), asked cheaply and often.

    While Kafka is unreachable (a restart in the chaos suite) it answers the last size it saw.
    """

    def __init__(self, settings: KafkaSettings, topic: str) -> None:
        self.topic = topic
        self.last = 0
        self._consumer = Consumer(
            {**settings.kafka_client_config(), "group.id": f"size-{uuid.uuid4().hex}", "log_level": 0}
        )

    def __call__(self) -> int:
        try:
            meta = self._consumer.list_topics(self.topic, timeout=2).topics[self.topic]
            self.last = sum(
                self._consumer.get_watermark_offsets(TopicPartition(self.topic, p), timeout=2)[1]
                for p in meta.partitions
            )
        except KafkaException:
            pass
        return self.last

    def close(self) -> None:
        self._consumer.close()


def sink_wrote_all(settings: KafkaSettings, topic: str, keyspace: str) -> bool:
    """True when the sink writing ``topic`` into ``keyspace`` has committed, in its written-offsets group,
    every partition's end: it has read and written all the topic holds. Unlike its counters, this survives
    a restart of the sink (they start again from 0, its checkpoint and this group do not)."""
    consumer = Consumer(
        {
            **settings.kafka_client_config(),
            "group.id": sink_written_group(keyspace),
            "enable.auto.commit": False,
            "log_level": 0,
        }
    )
    try:
        meta = consumer.list_topics(topic, timeout=5).topics[topic]
        parts = consumer.committed([TopicPartition(topic, p) for p in meta.partitions], timeout=5)
        return all(tp.offset >= consumer.get_watermark_offsets(tp, timeout=5)[1] for tp in parts)
    except KafkaException:
        return False
    finally:
        consumer.close()


@dataclass
class TopicScan:
    """What the messages topic holds: simulator tokens (with their copies), every message id's copies
    with their times, and which timestamp type the records carry (Kafka's CreateTime or LogAppendTime)."""

    tokens: Counter[str] = field(default_factory=Counter)
    copies: CopyTimes = field(default_factory=CopyTimes)
    timestamp_types: Counter[str] = field(default_factory=Counter)
    undecodable: int = 0


_TIMESTAMP_TYPES = {TIMESTAMP_CREATE_TIME: "CreateTime", TIMESTAMP_LOG_APPEND_TIME: "LogAppendTime"}


def scan_topic(settings: KafkaSettings, prefix: str, timeout: float = 120.0) -> TopicScan:
    """Reads the whole messages topic once: how many times each simulator token (starting with ``prefix``)
    is in it, and the times of every copy of every message id (:class:`CopyTimes`)."""
    consumer = Consumer(
        reader_config(settings, f"verify-{uuid.uuid4().hex}", **{"auto.offset.reset": "earliest"})
    )
    reader = TopicReader(consumer, settings.topic_messages, follow=False)
    scan = TopicScan()
    try:
        meta = consumer.list_topics(settings.topic_messages, timeout=30).topics[settings.topic_messages]
        reader.assign(meta.partitions, deadline=time.monotonic() + 30)
        deadline = time.monotonic() + timeout
        floors: dict[int, int] = {}
        while not reader.caught_up and time.monotonic() < deadline:
            for msg in reader.read(1.0, 10_000).records:  # errors: what was not read is reported as such
                partition = msg.partition() or 0
                try:
                    event = chat_event.decode(msg.value() or b"")
                except chat_event.InvalidEvent:
                    scan.undecodable += 1
                    continue
                ts_type, ts = msg.timestamp()
                scan.timestamp_types[_TIMESTAMP_TYPES.get(ts_type, "none")] += 1
                ts = ts if ts_type in _TIMESTAMP_TYPES else -1
                floor = floors[partition] = max(floors.get(partition, ts), ts)  # records come in offset order
                scan.copies.add(event.message_id, ts, event.received_at, floor)
                tok = token_of(event.text)
                if tok and tok.startswith(prefix):
                    scan.tokens[tok] += 1
    finally:
        reader.close()
    return scan


def stored_tokens(
    settings: CassandraSettings,
    channels: Iterable[str],
    since_ms: int,
    until_ms: int,
    written_at: dict[str, int] | None = None,
    *,
    only_node: str | None = None,
) -> Counter[str]:
    """How many stored copies per simulator token the channel blocks of ``channels`` (logins; keyed
    :func:`stored_key`) hold in the window (:func:`store.scan.channel_copies`: a line in two blocks counts
    twice); the token is the first word of the line's text.

    With ``written_at``, also fills in each token's Cassandra write time (epoch ms, the sink's clock: the
    write time of the first block that holds it). With ``only_node`` (an address), what that node alone
    holds: read at ONE with it as the only coordinator.
    """
    from store.scan import channel_copies

    logging.getLogger("cassandra.protocol").setLevel(logging.ERROR)  # server warnings per query
    cluster, session = connect(settings, timeout=60)
    try:
        profile = None if only_node is None else pin_to_node(cluster, only_node, "ONE", 60)
        keys = [stored_key(c) for c in channels]
        counts: Counter[str] = Counter()
        copies = channel_copies(
            session, settings.cassandra_keyspace, keys, since_ms, until_ms, profile=profile
        )
        for _key, line, written in copies:
            split = line[4]
            tok = token_of(split[2] if split is not None else text_of_stored(line[2]))
            if tok:
                counts[tok] += 1
                if written_at is not None:
                    written_at[tok] = min(written_at.get(tok, written), written)
        return counts
    finally:
        cluster.shutdown()
