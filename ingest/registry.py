"""The channel registry: the compacted ``chatlog.channels`` topic (key = login, tombstone = removed).

Names are normalised (an optional leading ``#`` stripped, lower case) and checked before anything is
written; one bad name rejects the whole request with a one-line error naming it, so nothing is half
done. Which names are valid depends on the server dialect (``CHATLOG_IRC_FLAVOR``):

* ``twitch``: Twitch logins, 1-25 characters of ``a-z 0-9 _``.
* ``ircv3`` (a general IRC server): 1-50 characters of ``a-z 0-9 _ - .``, not starting with ``-`` or
  ``.``. That is a conservative subset of RFC 2812 channel names (no ``#`` inside, no ``,`` ``:``
  spaces or control characters), short enough for common ``CHANNELLEN`` limits, and safe as a Kafka
  key, a Cassandra partition key and a file name.

The partition of a channel record is its bucket. Records are written with librdkafka's
``murmur2_random`` partitioner (the Java client's default), so any Kafka client puts a login into the
same bucket, and an add and its later tombstone always land in the same partition.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final, Literal

import msgspec
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from core.errors import ChatlogError
from core.settings import KafkaSettings

Flavor = Literal["twitch", "ircv3"]

_NAME_RULES: Final[dict[str, tuple[re.Pattern[str], str]]] = {
    "twitch": (re.compile(r"[a-z0-9_]{1,25}"), "1-25 characters of a-z 0-9 _"),
    "ircv3": (
        re.compile(r"[a-z0-9_][a-z0-9_.\-]{0,49}"),
        "1-50 characters of a-z 0-9 _ - . (not starting with - or .)",
    ),
}
PARTITIONER: Final = "murmur2_random"
# One-shot clients report failures as one-line errors; librdkafka's own retry chatter is muted.
QUIET: Final[dict[str, Any]] = {"log_level": 2}
_NEW_TOPIC_PATIENCE_S: Final = 5.0
_NO_LEADER_YET: Final = frozenset(
    {
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError._UNKNOWN_PARTITION,
    }
)


class InvalidChannelName(ChatlogError):
    """A channel name that breaks the naming rule of the configured flavor."""


class ChannelRecord(msgspec.Struct, frozen=True):
    """The value of a channel record."""

    login: str
    added_at: int = 0


_encode = msgspec.json.Encoder().encode
_decode_record = msgspec.json.Decoder(ChannelRecord).decode


def normalize(name: str, flavor: Flavor = "ircv3") -> str:
    """The login of ``name`` (``#Foo`` -> ``foo``); :class:`InvalidChannelName` if it breaks the rule."""
    login = name.strip()
    if login.startswith("#"):
        login = login[1:]
    login = login.lower()
    pattern, rule = _NAME_RULES[flavor]
    if not pattern.fullmatch(login):
        raise InvalidChannelName(f"invalid channel name {name!r} ({flavor} channels: {rule})")
    return login


def normalize_all(names: Iterable[str], flavor: Flavor = "ircv3") -> list[str]:
    """Every name normalised, duplicates dropped, order kept; the first bad name raises (with a count)."""
    out: dict[str, None] = {}
    first_error: InvalidChannelName | None = None
    bad = 0
    for name in names:
        try:
            out[normalize(name, flavor)] = None
        except InvalidChannelName as exc:
            bad += 1
            first_error = first_error or exc
    if first_error is not None:
        more = f" and {bad - 1} more bad name(s)" if bad > 1 else ""
        raise InvalidChannelName(f"{first_error}{more}; nothing was changed")
    return list(out)


def names_from_text(text: str) -> list[str]:
    """Channel names from a file: separated by whitespace or commas; blank lines are ignored."""
    return text.replace(",", " ").split()


def encode_record(login: str, added_at: int) -> bytes:
    return _encode(ChannelRecord(login=login, added_at=added_at))


def decode_record(key: str, value: bytes) -> ChannelRecord:
    """A record's value; a value that is not our JSON still registers its key (added_at 0)."""
    try:
        return _decode_record(value)
    except msgspec.DecodeError:
        return ChannelRecord(login=key)


def fold(records: Iterable[tuple[bytes | None, bytes | None]]) -> dict[bytes, bytes]:
    """Compaction semantics over records in log order: the last value per key wins, a tombstone removes."""
    latest: dict[bytes, bytes] = {}
    for key, value in records:
        if key is None:
            continue
        if value is None:
            latest.pop(key, None)
        else:
            latest[key] = value
    return latest


def read_records(
    settings: KafkaSettings, topic: str, *, timeout: float = 30.0, since_ms: int | None = None
) -> Iterator[tuple[bytes | None, bytes | None]]:
    """Every (key, value) of ``topic`` up to the end offsets seen at the start (log order per partition).

    ``since_ms`` starts each partition at the first record with that timestamp or later instead of at
    its beginning. Uses a plain assigned consumer: no group membership and no commits.
    """
    consumer = Consumer(
        {
            **settings.kafka_client_config(),
            **QUIET,
            "group.id": f"chatlog-reader-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
        }
    )
    try:
        deadline = time.monotonic() + timeout
        meta = _topic_metadata(consumer, topic, settings.kafka_bootstrap_servers, timeout)
        ends: dict[int, int] = {}
        assignment = []
        for partition in meta.partitions:
            low, high = _watermarks(consumer, TopicPartition(topic, partition), deadline)
            if since_ms is not None and high > low:
                [found] = consumer.offsets_for_times([TopicPartition(topic, partition, since_ms)], timeout)
                low = found.offset if found.offset >= 0 else high  # -1: nothing that recent
            if high > low:
                ends[partition] = high
                assignment.append(TopicPartition(topic, partition, low))
        if not assignment:
            return
        consumer.assign(assignment)
        while ends:
            if time.monotonic() > deadline:
                raise ChatlogError(f"reading topic {topic} timed out after {timeout:.0f}s")
            for msg in consumer.consume(10_000, 0.5):
                partition = msg.partition()
                end = ends.get(partition) if partition is not None else None
                if partition is None or end is None:
                    continue
                err = msg.error()
                if err is None:
                    yield msg.key(), msg.value()
                    if (msg.offset() or 0) + 1 >= end:
                        del ends[partition]
                elif err.code() == KafkaError._PARTITION_EOF:
                    if (msg.offset() or 0) >= end:  # the end can be a gap left by compaction
                        del ends[partition]
                else:
                    raise ChatlogError(f"reading topic {topic}: {err}")
    finally:
        consumer.close()


def _topic_metadata(consumer: Consumer, topic: str, servers: str, timeout: float) -> Any:
    """The topic's metadata; a topic created a moment ago gets a few seconds to show up."""
    patience = time.monotonic() + min(timeout, _NEW_TOPIC_PATIENCE_S)
    while True:
        try:
            meta = consumer.list_topics(topic, timeout=min(timeout, 15.0)).topics.get(topic)
        except KafkaException as exc:
            raise ChatlogError(f"cannot reach Kafka at {servers}: {exc}") from None
        if meta is not None and meta.error is None and meta.partitions:
            return meta
        if time.monotonic() > patience:
            raise ChatlogError(f"Kafka topic {topic} does not exist (run `chatlog stack up`?)")
        time.sleep(0.2)


def _watermarks(consumer: Consumer, tp: TopicPartition, deadline: float) -> tuple[int, int]:
    """(low, high) offsets; retried while the partition has no leader yet (a topic just created)."""
    while True:
        try:
            low, high = consumer.get_watermark_offsets(tp, timeout=max(1.0, deadline - time.monotonic()))
            return int(low), int(high)
        except KafkaException as exc:
            if not exc.args[0].retriable() and exc.args[0].code() not in _NO_LEADER_YET:
                raise ChatlogError(f"reading topic {tp.topic}: {exc.args[0].str()}") from None
            if time.monotonic() > deadline:
                raise ChatlogError(f"reading topic {tp.topic} timed out: {exc.args[0].str()}") from None
            time.sleep(0.2)


@dataclass(frozen=True)
class Change:
    """What an add or remove did."""

    changed: list[str]
    unchanged: list[str]


class Registry:
    """Reads and writes the channel registry of one Kafka cluster."""

    def __init__(self, settings: KafkaSettings, *, flavor: Flavor = "ircv3", timeout: float = 60.0) -> None:
        self.settings = settings
        self.flavor: Flavor = flavor
        self.timeout = timeout

    def channels(self) -> dict[str, ChannelRecord]:
        """Every registered channel (login -> record), read to the end of the topic."""
        latest = fold(read_records(self.settings, self.settings.topic_channels, timeout=self.timeout))
        out = {}
        for key, value in latest.items():
            login = key.decode("utf-8", "replace")
            out[login] = decode_record(login, value)
        return out

    def add(self, names: Iterable[str]) -> Change:
        """Register channels; already registered ones are left alone (no new record)."""
        logins = normalize_all(names, self.flavor)
        existing = self.channels()
        new = [login for login in logins if login not in existing]
        now = int(time.time() * 1000)
        self._write((login, encode_record(login, now)) for login in new)
        return Change(changed=new, unchanged=[login for login in logins if login in existing])

    def remove(self, names: Iterable[str]) -> Change:
        """Unregister channels with tombstones; names that are not registered are reported, not written."""
        logins = normalize_all(names, self.flavor)
        existing = self.channels()
        gone = [login for login in logins if login in existing]
        self._write((login, None) for login in gone)
        return Change(changed=gone, unchanged=[login for login in logins if login not in existing])

    def _write(self, records: Iterable[tuple[str, bytes | None]]) -> None:
        """Produce a batch and flush once; any failed delivery is an error (nothing is dropped silently)."""
        failures: list[str] = []

        def on_delivery(err: object, msg: object) -> None:
            if err is not None:
                failures.append(str(err))

        producer = Producer(
            {
                **self.settings.kafka_client_config(),
                **QUIET,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 20,
                "compression.type": "lz4",
                "partitioner": PARTITIONER,
                "queue.buffering.max.messages": 200_000,
            }
        )
        topic = self.settings.topic_channels
        count = 0
        for login, value in records:
            while True:
                try:
                    producer.produce(topic, value, login, on_delivery=on_delivery)
                    break
                except BufferError:
                    producer.poll(0.1)
            count += 1
        if count == 0:
            return
        left = producer.flush(self.timeout)
        if left or failures:
            detail = failures[0] if failures else f"{left} record(s) not acknowledged in {self.timeout:.0f}s"
            raise ChatlogError(f"writing to {topic} failed for {len(failures) + left} record(s): {detail}")
