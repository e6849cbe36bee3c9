"""Test doubles shared by the tests of every package: a clock, and the librdkafka producer, consumer and
message that the project's Kafka code drives. Pure and in-process (no Kafka, no sockets, no sleeping
clock); each double records what it was asked to do so a test can assert on it. :func:`eventually`
waits, on an event loop, for what another task or thread does.

Doubles of one service's own protocols live next to it (``ingest/irc/testing.py`` is an IRC server).
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, KafkaError, TopicPartition

from core import times
from schemas.chat_event import ChatEvent

DeliveryCallback = Callable[[KafkaError | None, Any], None]
"""librdkafka's ``on_delivery(err, msg)``."""
RebalanceCallback = Callable[[Any, list[TopicPartition]], None]
"""librdkafka's ``on_assign`` / ``on_revoke`` / ``on_lost(consumer, partitions)``."""


class FakeClock:
    """A clock that moves only when told: ``clock()`` reads it, ``clock.sleep(s)`` advances it and records
    the sleep. Pass ``clock`` where code takes ``Callable[[], float]`` and ``clock.sleep`` for a sleep."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


class FakeMessage:
    """A ``confluent_kafka.Message``: the accessors the project calls, over fixed values."""

    def __init__(
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        headers: list[tuple[str, bytes]] | None = None,
        *,
        partition: int = 0,
        offset: int = -1,
        error: KafkaError | None = None,
        latency: float = 0.003,
    ) -> None:
        self._topic = topic
        self._value = value
        self._key = key
        self._headers = headers
        self._partition = partition
        self._offset = offset
        self._error = error
        self._latency = latency

    @classmethod
    def end_of_partition(cls, topic: str, partition: int) -> FakeMessage:
        """What a consumer with ``enable.partition.eof`` returns once it has read a partition to its end."""
        return cls(topic, partition=partition, error=KafkaError(KafkaError._PARTITION_EOF))

    def topic(self) -> str:
        return self._topic

    def value(self) -> bytes | None:
        return self._value

    def key(self) -> bytes | None:
        return self._key

    def headers(self) -> list[tuple[str, bytes]] | None:
        return self._headers

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def error(self) -> KafkaError | None:
        return self._error

    def latency(self) -> float:
        return self._latency

    def __repr__(self) -> str:
        return f"FakeMessage({self._topic!r}, key={self._key!r}, partition={self._partition})"


def _deliver_all(_msg: FakeMessage, _n: int) -> KafkaError | None:
    return None


@dataclass
class FakeProducer:
    """A ``confluent_kafka.Producer``: queues produce() calls (``BufferError`` past ``capacity``, as
    librdkafka's full local queue); poll() and flush() deliver them, calling back with ``outcome(msg, n)``
    (None = acknowledged; ``n`` = records produced so far). ``default_cb`` stands for the ``on_delivery``
    of the producer's configuration."""

    capacity: int = 1_000_000
    outcome: Callable[[FakeMessage, int], KafkaError | None] = _deliver_all
    default_cb: DeliveryCallback | None = None
    queue: list[tuple[FakeMessage, DeliveryCallback | None]] = field(default_factory=list)
    produced: list[FakeMessage] = field(default_factory=list)
    delivered: list[FakeMessage] = field(default_factory=list)
    polls: int = 0

    def produce(
        self, topic: str, value: bytes | None = None, key: str | bytes | None = None,
        headers: list[tuple[str, bytes]] | None = None, on_delivery: DeliveryCallback | None = None,
    ) -> None:  # fmt: skip
        if len(self.queue) >= self.capacity:
            raise BufferError("Local: Queue full")
        msg = FakeMessage(topic, value, key.encode() if isinstance(key, str) else key, headers)
        self.produced.append(msg)
        self.queue.append((msg, on_delivery))

    def poll(self, timeout: float = 0.0) -> int:
        self.polls += 1
        batch, self.queue = self.queue, []
        for msg, cb in batch:
            err = self.outcome(msg, len(self.produced))
            if err is None:
                self.delivered.append(msg)
            callback = cb or self.default_cb
            if callback is None:
                raise AssertionError("FakeProducer: no on_delivery callback (set default_cb)")
            callback(err, msg)
        return len(batch)

    def flush(self, timeout: float = 0.0) -> int:
        self.poll()
        return len(self.queue)

    def __len__(self) -> int:
        return len(self.queue)

    def sent_to(self, topic: str) -> list[FakeMessage]:
        """The records produced to ``topic``, in order."""
        return [m for m in self.produced if m.topic() == topic]


class FakeConsumer:
    """A subscribing ``confluent_kafka.Consumer``: the test scripts what the group does, in order —
    :meth:`assign`, :meth:`revoke` and :meth:`lose` queue a rebalance whose callback runs inside the next
    consume() (on the consuming thread, as librdkafka does), :meth:`feed` queues records that consume()
    returns. close() revokes what is still assigned (leaving the group). Thread-safe: a test feeds it
    while a member's thread consumes; an empty consume() waits up to its timeout for a step."""

    def __init__(self, conf: dict[str, Any] | None = None, *, member_id: str = "member-1") -> None:
        self.conf = dict(conf or {})
        self.topics: list[str] = []
        self.assignment: set[tuple[str, int]] = set()
        self.polls = 0
        self.metadata_asked = 0
        self.closed = False
        self._member_id = member_id
        self._callbacks: dict[str, RebalanceCallback] = {}
        self._steps: deque[tuple[str, list[TopicPartition] | list[FakeMessage]]] = deque()
        self._changed = threading.Condition()
        self.watermarks: dict[int, tuple[int, int]] = {}
        """Partition -> (low, high) offsets, as the test sets them; (0, 0) (nothing yet) for any other."""

    # -- what the test scripts -----------------------------------------------------------------------
    def assign(self, topic: str, partitions: Iterable[int]) -> None:
        self._step("on_assign", [TopicPartition(topic, p) for p in partitions])

    def revoke(self, topic: str, partitions: Iterable[int]) -> None:
        self._step("on_revoke", [TopicPartition(topic, p) for p in partitions])

    def lose(self, topic: str, partitions: Iterable[int]) -> None:
        self._step("on_lost", [TopicPartition(topic, p) for p in partitions])

    def feed(self, *messages: FakeMessage) -> None:
        self._step("messages", list(messages))

    def pending(self) -> int:
        """Scripted steps not consumed yet."""
        with self._changed:
            return len(self._steps)

    def _step(self, kind: str, items: list[TopicPartition] | list[FakeMessage]) -> None:
        with self._changed:
            self._steps.append((kind, items))
            self._changed.notify_all()

    # -- the Consumer API ------------------------------------------------------------------------------
    def subscribe(
        self,
        topics: list[str],
        *,
        on_assign: RebalanceCallback | None = None,
        on_revoke: RebalanceCallback | None = None,
        on_lost: RebalanceCallback | None = None,
    ) -> None:
        self.topics = list(topics)
        named = {"on_assign": on_assign, "on_revoke": on_revoke, "on_lost": on_lost}
        self._callbacks = {name: cb for name, cb in named.items() if cb is not None}

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[FakeMessage]:
        """Runs the queued rebalances up to the next batch of records and returns that batch (whole)."""
        self.polls += 1
        with self._changed:
            if not self._steps and timeout != 0:
                self._changed.wait(None if timeout < 0 else timeout)
        while True:
            with self._changed:
                if not self._steps:
                    return []
                kind, items = self._steps.popleft()
            if kind == "messages":
                return [m for m in items if isinstance(m, FakeMessage)]
            self._rebalance(kind, [p for p in items if isinstance(p, TopicPartition)])

    def _rebalance(self, kind: str, partitions: list[TopicPartition]) -> None:
        callback = self._callbacks.get(kind)
        if callback is not None:
            callback(self, partitions)
        # confluent-kafka (un)assigns by itself when the callback did not
        keys = {(p.topic, p.partition) for p in partitions}
        if kind == "on_assign":
            self.assignment |= keys
        else:
            self.assignment -= keys

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        self.assignment |= {(p.topic, p.partition) for p in partitions}

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None:
        self.assignment -= {(p.topic, p.partition) for p in partitions}

    def offsets_for_times(
        self, partitions: list[TopicPartition], timeout: float | None = None
    ) -> list[TopicPartition]:
        """Kafka's ListOffsets as :attr:`watermarks` answer it: a partition asked at ``OFFSET_END`` (-1) gets
        its high offset, at ``OFFSET_BEGINNING`` (-2) its low one; no other time is known here."""
        out = []
        for p in partitions:
            low, high = self.watermarks.get(p.partition, (0, 0))
            assert p.offset in (OFFSET_END, OFFSET_BEGINNING), f"no offset for time {p.offset} here"
            out.append(TopicPartition(p.topic, p.partition, high if p.offset == OFFSET_END else low))
        return out

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        """A metadata request: counted in :attr:`metadata_asked`; its answer names no topic."""
        self.metadata_asked += 1
        return SimpleNamespace(topics={})

    def memberid(self) -> str:
        return self._member_id

    def close(self) -> None:
        if self.assignment:
            self._rebalance("on_revoke", [TopicPartition(t, p) for t, p in sorted(self.assignment)])
        self.closed = True


async def eventually(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    """Return once ``predicate()`` holds, checking every 10 ms; AssertionError naming ``what`` after
    ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        await asyncio.sleep(0.01)


def _tag_value(value: str) -> str:
    return (
        value.replace("\\", "\\\\")
        .replace(";", "\\:")
        .replace(" ", "\\s")
        .replace("\r", "\\r")
        .replace("\n", "\\n")
    )


def twitch_line(
    kind: str,
    channel: str,
    *,
    sent_at: int,
    login: str | None = None,
    text: str | None = None,
    user_id: str | None = None,
    room_id: str | None = None,
    message_id: str | None = None,
    display_name: str | None = None,
    extra: dict[str, str] | None = None,
) -> str:
    """A raw line as Twitch sends it (tags in Twitch's order, values escaped): ``PRIVMSG`` from ``login``,
    ``CLEARCHAT`` of ``text`` (a login; None: the whole chat), ``CLEARMSG`` of a message by ``login``.
    What the readers derive every field from: tests build events with :func:`core.irc_parse.parse_line`
    of these lines, so a stored event and its line agree."""
    tags: dict[str, str] = {}
    if kind == "PRIVMSG":
        tags["display-name"] = display_name if display_name is not None else (login or "")
    tags.update(extra or {})
    if message_id is not None:
        tags["id" if kind != "CLEARMSG" else "target-msg-id"] = message_id
    if kind == "CLEARMSG" and login is not None:
        tags["login"] = login
    if room_id is not None:
        tags["room-id"] = room_id
    if user_id is not None:
        tags["user-id" if kind == "PRIVMSG" else "target-user-id"] = user_id
    tags["tmi-sent-ts"] = str(sent_at)
    section = "@" + ";".join(f"{k}={_tag_value(v)}" for k, v in tags.items())
    prefix = f":{login}!{login}@{login}.tmi.twitch.tv" if kind == "PRIVMSG" else ":tmi.twitch.tv"
    trailing = f" :{text}" if text is not None else ""
    return f"{section} {prefix} {kind} #{channel}{trailing}"


def chat_events(
    n: int, *, channels: int = 7, now_ms: int | None = None, ids: bool = True, id_prefix: str = ""
) -> list[ChatEvent]:
    """``n`` chat events 37 ms apart ending at ``now_ms``, over ``channels`` channels (``chan0``...) and 23
    users (``user0``...; user ``userK`` has id ``1000+K``, channel ``chanK`` room id ``500+K``): mostly
    PRIVMSG, a timeout of ``user5`` (CLEARCHAT) every 97 events, a deleted message (CLEARMSG) every 89.
    Each is :func:`core.irc_parse.parse_line` of its :func:`twitch_line`, received 5 ms after it was sent.
    ``ids=False``: lines without Twitch ids (as a plain IRC server sends them); ``id_prefix``: put before
    each message's uuid ``id`` (the ids of two batches differ; an id that is no uuid is kept all the same)."""
    from core.irc_parse import parse_line

    now = now_ms if now_ms is not None else times.now_ms()
    out = []
    for i in range(n):
        sent_at = now - (n - i) * 37
        channel = i % channels
        user = i % 23
        room_id = str(500 + channel) if ids else None
        if i % 97 == 5:
            line = twitch_line(
                "CLEARCHAT",
                f"chan{channel}",
                sent_at=sent_at,
                text="user5",
                extra={"ban-duration": "600"},
                room_id=room_id,
                user_id="1005" if ids else None,
            )
        elif i % 89 == 7:
            line = twitch_line(
                "CLEARMSG",
                f"chan{channel}",
                sent_at=sent_at,
                login=f"user{user}",
                text=f"message {i - 1}",
                message_id=str(uuid.UUID(int=i)),
                room_id=room_id,
            )
        else:
            line = twitch_line(
                "PRIVMSG",
                f"chan{channel}",
                sent_at=sent_at,
                login=f"user{user}",
                text=f"message {i}",
                message_id=f"{id_prefix}{uuid.uuid4()}" if ids else None,
                display_name=f"User{user}",
                room_id=room_id,
                user_id=str(1000 + user) if ids else None,
            )
        event = parse_line(line, received_at=sent_at + 5, ingester="r1")
        assert event is not None
        out.append(event)
    return out


def twitch_event(
    kind: str, channel: str, *, sent_at: int, received_after_ms: int = 3, ingester: str = "r1", **line: Any
) -> ChatEvent:
    """The event an ingester makes of :func:`twitch_line` (``line``: its keyword arguments) sent at
    ``sent_at`` and received ``received_after_ms`` later."""
    from core.irc_parse import parse_line

    raw = twitch_line(kind, channel, sent_at=sent_at, **line)
    event = parse_line(raw, received_at=sent_at + received_after_ms, ingester=ingester)
    assert event is not None, raw
    return event
