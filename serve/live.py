"""Live events: one Kafka consumer of ``chatlog.messages`` per process, fanned out to subscribers.

The route ``GET /api/live/{channel}`` (:mod:`serve.api.live`) subscribes; this module is the Kafka side:

* :class:`LiveHub` starts on the first subscriber (never before: a ``chatlog serve`` nobody follows live
  reads nothing from Kafka) and stops when the app stops. Starting checks that Kafka answers and the
  topic exists, in one line (:class:`LiveUnavailable`, answered as a 503) when not.
* The consumer reads in a thread of its own (:mod:`core.background_consumer`). It has no consumer group:
  it assigns itself every partition of the topic at its end (the high watermark, read before the first
  subscriber is answered, so an event produced after that is delivered), commits nothing, and takes
  partitions added later from their beginning. Its ``group.id`` is unique to the process (librdkafka wants
  one) and never joined.
* Only the channels someone follows are decoded (the record key is the channel). Each event is
  deduplicated by ``message_id`` over a bounded window of recent ids (:class:`RecentIds`): the replica
  groups each log every event, seconds apart, and a subscriber sees it once. Its JSON is made once, in the
  thread, whatever the number of subscribers.
* :class:`Fanout` runs on the event loop: each subscriber has a bounded queue; one that falls behind by a
  whole queue is dropped (its queue is emptied and ends with the reason), never waited for, so one slow
  client cannot hold the others.
* Kafka going away while the hub runs: existing subscribers stay (they see events again when it is
  back); a new subscriber is a 503 until the consumer reaches a broker again.
* ``chatlog serve`` on several worker processes (:mod:`serve.api.workers`): one hub per worker, each with
  every partition (no group to share them out), so a subscriber sees everything whichever worker it reached.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from consent.rule import named_login
from core import kafka_offsets
from core.background_consumer import BackgroundConsumer
from core.errors import ChatlogError, one_line
from core.kafka_probe import QUIET, describe, probe
from schemas.chat_event import ChatEvent, InvalidEvent, decode
from serve.formats import encode_json, full_message, page_fields
from serve.settings import LiveSettings

log = logging.getLogger(__name__)

BATCH: Final = 500
"""Records taken from the consumer at once."""
POLL_S: Final = 0.1
"""Longest wait of one poll(): how soon the thread sees a stop. A record that arrives ends the wait at once
(poll() for the first, then consume(0) for what else is there: consume() with a timeout would wait for a
whole batch)."""
FETCH_WAIT_MS: Final = 50
"""librdkafka ``fetch.wait.max.ms``: how long a broker holds a fetch on a quiet topic (default 500 ms,
which would be added to the latency of a lone message)."""
RECHECK_S: Final = 2.0
"""While Kafka is down: seconds between metadata requests that tell it is back."""
PARTITIONS_EVERY_S: Final = 30.0
"""Seconds between looks for partitions added to the topic."""
RETRY_AFTER_S: Final = 2.0
"""After a start that failed, subscribers get the same 503 for this long before Kafka is asked again (a
page of subscribers does not wait out one probe timeout each)."""

KAFKA_DOWN: Final = frozenset({KafkaError._ALL_BROKERS_DOWN, KafkaError._AUTHENTICATION, KafkaError._SSL})


class LiveUnavailable(ChatlogError):
    """Live events cannot be had now (Kafka down, the topic missing, too many subscribers); one line."""


# --- the events -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LiveEvent:
    """One event as the subscribers get it: its id, its channel, the users a ``?user=`` filter matches,
    and its JSON (one element of the ``?json`` format's ``messages``, whose ``id`` is the message id)."""

    message_id: str
    channel: str
    users: frozenset[str]
    data: str


def live_message(event: ChatEvent) -> dict[str, Any]:
    """The ``?json`` format's message of ``event``, its ``id`` the event's ``message_id`` (the Twitch
    ``id`` tag when there is one, as in ``?json``; else IRCv3 ``msgid``, else the line's hash), with the
    web page's ``action`` and ``deletedText`` (:func:`serve.formats.page_fields`)."""
    message = full_message(event)
    message["id"] = event.message_id
    message.update(page_fields(event))  # the web page's fields: this route is chatlog's own
    return message


def event_users(event: ChatEvent) -> frozenset[str]:
    """The login whose lines ``event`` is among, as a user's stored logs have it: the user the event
    concerns (:func:`consent.rule.whose`: its sender; for a ban, a timeout or a deleted message sent by
    the server, the user it targets); none for a cleared chat or a NOTICE."""
    login = named_login(event)
    return frozenset((login,)) if login else frozenset()


def to_live(event: ChatEvent) -> LiveEvent:
    data = encode_json(live_message(event)).decode()
    return LiveEvent(event.message_id, event.channel, event_users(event), data)


class RecentIds:
    """The last ``size`` ids seen: :meth:`first` is True once per id while it stays in the window."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError("size must be >= 1")
        self.size = size
        self._order: deque[str] = deque()
        self._ids: set[str] = set()

    def first(self, message_id: str) -> bool:
        if message_id in self._ids:
            return False
        self._ids.add(message_id)
        self._order.append(message_id)
        if len(self._order) > self.size:
            self._ids.discard(self._order.popleft())
        return True

    def __len__(self) -> int:
        return len(self._order)


# --- the fan-out, on the event loop -------------------------------------------------------------------


@dataclass(eq=False)
class Subscriber:
    """One follower of a channel (and maybe of one user in it). Its queue holds events, then ``None``
    once it is ended (dropped, or the hub stopped), with :attr:`ended` saying why."""

    channel: str
    user: str | None
    queue: asyncio.Queue[LiveEvent | None]
    ended: str | None = None
    dropped: bool = False
    delivered: int = 0

    def wants(self, event: LiveEvent) -> bool:
        return self.user is None or self.user in event.users


@dataclass
class Fanout:
    """The subscribers by channel. Every method runs on the event loop; the consumer's thread reads only
    :attr:`channels`, a frozenset replaced (never changed) as subscribers come and go."""

    queue_size: int
    max_subscribers: int
    channels: frozenset[str] = frozenset()
    dropped: int = 0
    _by_channel: dict[str, set[Subscriber]] = field(default_factory=dict)

    def __len__(self) -> int:
        return sum(len(subs) for subs in self._by_channel.values())

    def add(self, channel: str, user: str | None = None) -> Subscriber:
        if len(self) >= self.max_subscribers:
            raise LiveUnavailable(
                f"too many live subscribers ({self.max_subscribers}, CHATLOG_SERVE_LIVE_MAX_SUBSCRIBERS)"
            )
        sub = Subscriber(channel, user, asyncio.Queue(self.queue_size))
        self._by_channel.setdefault(channel, set()).add(sub)
        self.channels = frozenset(self._by_channel)
        return sub

    def remove(self, sub: Subscriber) -> None:
        subs = self._by_channel.get(sub.channel)
        if subs is None or sub not in subs:
            return
        subs.discard(sub)
        if not subs:
            del self._by_channel[sub.channel]
            self.channels = frozenset(self._by_channel)

    def publish(self, events: Iterable[LiveEvent]) -> None:
        """Hands each event to its channel's subscribers; one whose queue is full is dropped."""
        for event in events:
            for sub in tuple(self._by_channel.get(event.channel, ())):
                if not sub.wants(event):
                    continue
                try:
                    sub.queue.put_nowait(event)
                except asyncio.QueueFull:
                    self.dropped += 1
                    sub.dropped = True
                    self.end(sub, f"dropped: fell {self.queue_size} events behind (CHATLOG_SERVE_LIVE_QUEUE)")
                else:
                    sub.delivered += 1

    def end_all(self, reason: str) -> None:
        for subs in tuple(self._by_channel.values()):
            for sub in tuple(subs):
                self.end(sub, reason)

    def end(self, sub: Subscriber, reason: str) -> None:
        """Ends ``sub``: what it has not read is dropped, ``None`` comes next. Once only."""
        if sub.ended is not None:
            return
        self.remove(sub)
        sub.ended = reason
        while not sub.queue.empty():  # what it has not read is lost either way; the end goes in first
            sub.queue.get_nowait()
        sub.queue.put_nowait(None)


# --- the consumer, in its thread -----------------------------------------------------------------------


class ConsumerLike(Protocol):
    """What the hub asks of ``confluent_kafka.Consumer``."""

    def assign(self, partitions: list[TopicPartition]) -> None: ...
    def incremental_assign(self, partitions: list[TopicPartition]) -> None: ...
    def poll(self, timeout: float = -1) -> Any: ...
    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]: ...
    def offsets_for_times(
        self, partitions: list[TopicPartition], timeout: float = -1
    ) -> list[TopicPartition]: ...
    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any: ...
    def close(self) -> None: ...


ConsumerFactory = Callable[[dict[str, Any]], ConsumerLike]


def kafka_consumer(conf: dict[str, Any]) -> ConsumerLike:
    consumer: ConsumerLike = Consumer(conf)
    return consumer


Prober = Callable[[LiveSettings, float], Any]


def _partitions(metadata: Any, topic: str) -> list[int]:
    """The topic's partitions in ``metadata``; LiveUnavailable when it does not exist."""
    found = metadata.topics.get(topic)
    if found is None or found.error is not None or not found.partitions:
        raise LiveUnavailable(f"the topic {topic} does not exist (CHATLOG_TOPIC_MESSAGES)")
    return sorted(found.partitions)


def consumer_config(settings: LiveSettings, error_cb: Callable[[KafkaError], None]) -> dict[str, Any]:
    """The consumer's librdkafka config: no group joined, no commit, quiet logs, short fetch waits."""
    return {
        **settings.kafka_client_config(),
        **QUIET,
        "group.id": f"chatlog-serve-live-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": False,
        "fetch.wait.max.ms": FETCH_WAIT_MS,
        "error_cb": error_cb,
    }


class LiveHub(BackgroundConsumer[ConsumerLike]):
    """The process's live side: the consumer thread and the fan-out (see the module's docstring). A
    failure ends the thread and its subscribers; the next subscriber starts it again."""

    def __init__(
        self,
        settings: LiveSettings,
        *,
        consumer_factory: ConsumerFactory = kafka_consumer,
        prober: Prober = probe,
    ) -> None:
        super().__init__("live-consumer", "live consumer")
        self.settings = settings
        self.fanout = Fanout(settings.serve_live_queue, settings.serve_live_max_subscribers)
        self._consumer_factory = consumer_factory
        self._prober = prober
        self._start_lock = asyncio.Lock()
        self._consumer: ConsumerLike | None = None
        """Made, and assigned ``_assigned``, by :meth:`_start`; the thread's from then on."""
        self._assigned: set[int] = set()
        self._recent = RecentIds(settings.serve_live_dedup_window)
        """The message ids the thread saw last (new at each start of the thread)."""
        self._next_look = 0.0
        """When the thread next looks for partitions added to the topic (time.monotonic())."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self.down: str | None = None
        """Why Kafka cannot be read now (set by the consumer's thread), None while it can."""
        self.failed: str | None = None
        self._last_failure: tuple[float, str] | None = None
        self.events_published = 0
        self.duplicates = 0
        self.hidden: Callable[[ChatEvent], bool] | None = None
        """Which events nobody is shown (those of opted-out users and channels: serve/consent.py)."""

    @property
    def running(self) -> bool:
        return self.alive

    async def subscribe(self, channel: str, user: str | None = None) -> Subscriber:
        """A subscriber of ``channel`` (and ``user``): it gets every event of it published from now on.
        Starts the consumer first if it is not running; :class:`LiveUnavailable` when Kafka is not there."""
        async with self._start_lock:
            if self.stopping:
                raise LiveUnavailable("the server is stopping")
            if not self.running:
                await self._start()
            elif self.down is not None:
                raise LiveUnavailable(self.down)
            return self.fanout.add(channel, user)

    def unsubscribe(self, sub: Subscriber) -> None:
        self.fanout.remove(sub)

    async def close(self) -> None:
        """Stops the consumer (it leaves nothing behind: no group, no offsets) and ends every subscriber."""
        self.stop()
        if self.alive:
            await asyncio.to_thread(self.join, 30)
        self.fanout.end_all("the server is stopping")

    async def _start(self) -> None:
        failure = self._last_failure
        if failure is not None and time.monotonic() - failure[0] < RETRY_AFTER_S:
            raise LiveUnavailable(failure[1])
        self._loop = asyncio.get_running_loop()
        self.down = self.failed = None
        try:
            consumer, assigned = await asyncio.to_thread(self._connect)
        except LiveUnavailable as exc:
            self._last_failure = (time.monotonic(), str(exc))
            raise
        self._last_failure = None
        self._consumer, self._assigned = consumer, assigned
        self.start()

    def _connect(self) -> tuple[ConsumerLike, set[int]]:
        settings, topic = self.settings, self.settings.topic_messages
        timeout = settings.serve_live_connect_timeout_s
        try:
            metadata = self._prober(settings, timeout)
        except ChatlogError as exc:  # Kafka not reachable, or settings it rejects: one line
            raise LiveUnavailable(str(exc)) from None
        partitions = _partitions(metadata, topic)
        try:
            consumer = self._consumer_factory(consumer_config(settings, self._on_error))
        except (KafkaException, ValueError) as exc:
            raise LiveUnavailable(f"Kafka consumer settings rejected: {exc}") from None
        try:
            ends = [
                TopicPartition(topic, p, end)
                for p, end in kafka_offsets.ends(consumer, topic, partitions, timeout).items()
            ]
            consumer.assign(ends)
        except KafkaException as exc:
            consumer.close()
            reason = describe(
                settings, [exc.args[0]] if exc.args and isinstance(exc.args[0], KafkaError) else []
            )
            raise LiveUnavailable(reason) from None
        return consumer, set(partitions)

    def _on_error(self, err: KafkaError) -> None:
        """librdkafka's ``error_cb``, on the consumer's thread (inside poll())."""
        if err.code() in KAFKA_DOWN:
            self.down = describe(self.settings, [err])

    def _open(self) -> ConsumerLike:
        consumer = self._consumer
        assert consumer is not None  # made and assigned by _start()
        self._recent = RecentIds(self.settings.serve_live_dedup_window)
        self._next_look = time.monotonic() + PARTITIONS_EVERY_S
        return consumer

    def _poll(self, consumer: ConsumerLike) -> None:
        first = consumer.poll(POLL_S)
        records = [first, *consumer.consume(BATCH - 1, 0)] if first is not None else []
        if records and self.down is not None:
            self.down = None
        batch = self.select(records, self._recent)
        if batch:
            self.events_published += len(batch)
            self._call_soon(self.fanout.publish, batch)
        now = time.monotonic()
        if self.down is not None or now >= self._next_look:
            self._next_look = now + (RECHECK_S if self.down is not None else PARTITIONS_EVERY_S)
            self._look(consumer, self.settings.topic_messages, self._assigned)

    def _failed(self, exc: Exception) -> None:
        self.failed = f"the live consumer failed: {one_line(exc, typed=True)}"
        log.warning("%s", self.failed)

    def _ended(self) -> None:
        if not self.stopping:  # the thread must say why it ended, and end its subscribers
            self._call_soon(self.fanout.end_all, self.failed or "the live consumer stopped")

    def select(self, records: Iterable[Any], recent: RecentIds) -> list[LiveEvent]:
        """The records that someone follows, decoded, each message id once."""
        wanted = self.fanout.channels
        out: list[LiveEvent] = []
        for record in records:
            if record.error() is not None:
                continue
            key = record.key()
            if not wanted or (key is not None and key.decode(errors="replace") not in wanted):
                continue
            value = record.value()
            if value is None:
                continue
            try:
                event = decode(value)
            except InvalidEvent:
                continue  # the sink sends it to the dead letters; nothing to show
            if event.channel not in wanted:
                continue
            if self.hidden is not None and self.hidden(event):
                continue
            if not recent.first(event.message_id):
                self.duplicates += 1
                continue
            out.append(to_live(event))
        return out

    def _look(self, consumer: ConsumerLike, topic: str, assigned: set[int]) -> None:
        """Metadata: tells that Kafka is back; assigns partitions added to the topic (from their start)."""
        try:
            metadata = consumer.list_topics(topic, timeout=1.0)
        except KafkaException:
            return
        self.down = None
        found = metadata.topics.get(topic)
        if found is None or found.error is not None:
            return
        added = sorted(set(found.partitions) - assigned)
        if added:
            consumer.incremental_assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in added])
            assigned.update(added)

    def _call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(fn, *args)

    def stats(self) -> Mapping[str, Any]:
        return {
            "running": self.running,
            "subscribers": len(self.fanout),
            "channels": len(self.fanout.channels),
            "published": self.events_published,
            "duplicates": self.duplicates,
            "dropped": self.fanout.dropped,
            "down": self.down,
        }
