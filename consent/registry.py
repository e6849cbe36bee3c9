"""The opt-out registry: the whole compacted ``chatlog.optout`` topic, followed in a background thread
(:mod:`core.background_consumer`).

Every process that enforces consent (ingesters, the sink, ``chatlog serve``) holds one
:class:`OptOutRegistry`. It assigns itself every partition of the topic from the beginning (no consumer
group, no commits: it is stateless, like the channel registry's readers), folds the records by key
(latest wins, a tombstone removes) and keeps tailing, so an opt-out or a lift reaches it within about a
second. :meth:`wait_ready` returns once it has read up to the end offsets the topic had when it started.
Reads (:meth:`user_out`, :meth:`users`...) are lock-free: the sets are replaced, never changed.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any, Final, Protocol

from confluent_kafka import Consumer, KafkaError

from consent.records import Code, InvalidRecord, OptOut, Value, decode
from core.background_consumer import BackgroundConsumer
from core.compacted import TopicReader, TopicReadError, follower_options, reader_config
from core.errors import ChatlogError, one_line
from core.kafka_probe import QUIET, describe, probe
from core.settings import KafkaSettings
from core.times import now_ms

log = logging.getLogger(__name__)

POLL_S: Final = 0.2
"""Longest wait of one poll: how soon the thread sees :meth:`OptOutRegistry.close`."""
BATCH: Final = 500
RETRY_S: Final = 2.0
"""Seconds between attempts to reach Kafka (or find the topic) while it is not there."""
PROBE_TIMEOUT_S: Final = 5.0

Callback = Callable[[str, Value | None], None]


class RegistryView(Protocol):
    """What a service asks of the opt-out registry: the ingester's gate (:class:`ingest.consent.OptOutGate`)
    and the sink's follower (:class:`sink.side.optout_follower.OptOutFollower`). :class:`OptOutRegistry` is
    one; tests give a fake."""

    records_read: int
    """Records of the topic read so far (opt-outs, lifts, codes; again after a re-read)."""

    def start(self) -> None: ...
    def wait_ready(self, timeout_s: float) -> None: ...
    def close(self) -> None: ...
    def users(self) -> frozenset[str]: ...
    def channels(self) -> frozenset[str]: ...
    def optouts(self) -> list[OptOut]: ...
    def code(self, code: str) -> Code | None: ...
    def subscribe(self, callback: Callback) -> None: ...


class OptOutRegistry(BackgroundConsumer[TopicReader]):
    """Who opted out, from the topic ``topic`` (see the module doc). A failure (Kafka away, the topic
    missing) is kept in ``error`` and the topic read again, from its beginning, every ``RETRY_S``."""

    def __init__(self, settings: KafkaSettings, topic: str) -> None:
        super().__init__(f"optout-{topic}", "opt-out registry consumer", retry_s=RETRY_S)
        self.settings = settings
        self.topic = topic
        self._values: dict[str, Value] = {}
        self._users: frozenset[str] = frozenset()
        self._channels: frozenset[str] = frozenset()
        self._user_ids: set[str] = set()
        self._channel_ids: set[str] = set()
        self._dirty = False
        self._callbacks: list[Callback] = []
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self.error: str | None = None
        """Why the topic cannot be read now (Kafka down, no topic), None while it can."""
        self.records_read = 0

    # --- life ---------------------------------------------------------------------------------------

    def wait_ready(self, timeout_s: float) -> None:
        """Return once the topic was read to the end offsets it had at start; ChatlogError (one line,
        naming the setting to check) when that does not happen within ``timeout_s``."""
        self.start()
        if self._ready.wait(timeout_s):
            return
        reason = self.error or (
            f"the opt-out topic {self.topic} was not read to its end within {timeout_s:.0f}s "
            "(CHATLOG_KAFKA_BOOTSTRAP_SERVERS)"
        )
        raise ChatlogError(f"opt-out registry: {reason}")

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def close(self) -> None:
        self.stop()
        self.join(30)

    def __enter__(self) -> OptOutRegistry:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- reads --------------------------------------------------------------------------------------

    def user_out(self, user_id: str | None) -> bool:
        return user_id is not None and user_id in self._users

    def channel_out(self, channel_id: str | None) -> bool:
        return channel_id is not None and channel_id in self._channels

    def users(self) -> frozenset[str]:
        return self._users

    def channels(self) -> frozenset[str]:
        return self._channels

    def optout(self, kind: str, id: str) -> OptOut | None:
        value = self._values.get(f"{kind}:{id}")
        return value if isinstance(value, OptOut) else None

    def optouts(self) -> list[OptOut]:
        """Every current opt-out, oldest first."""
        with self._lock:
            found = [v for v in self._values.values() if isinstance(v, OptOut)]
        return sorted(found, key=lambda o: (o.at, o.kind, o.id))

    def code(self, code: str) -> Code | None:
        """The code's record; None when absent, retired or expired."""
        value = self._values.get(f"code:{code}")
        if not isinstance(value, Code) or value.expires_at <= now_ms():
            return None
        return value

    def subscribe(self, callback: Callback) -> None:
        """Call ``callback(key, value or None)`` from the reader thread for every record read from now on.
        An exception it raises is logged, never stops the reader."""
        with self._lock:
            self._callbacks = [*self._callbacks, callback]

    # --- the reader thread ---------------------------------------------------------------------------

    def apply(self, key: str, value: Value | None, *, publish: bool = True) -> None:
        """Fold one record in (what the reader does for each; public for tests and replays). ``publish``:
        make the new sets visible now (else at the next :meth:`publish`; the catch-up does it per batch,
        so reading a topic of n opt-outs costs O(n), not O(n^2))."""
        with self._lock:
            old = self._values.pop(key, None)
            if isinstance(old, OptOut) or isinstance(value, OptOut):
                self._dirty = True
            if isinstance(old, OptOut):
                (self._user_ids if old.kind == "user" else self._channel_ids).discard(old.id)
            if value is not None:
                self._values[key] = value
                if isinstance(value, OptOut):
                    (self._user_ids if value.kind == "user" else self._channel_ids).add(value.id)
            callbacks = self._callbacks
        if publish:
            self.publish()
        for callback in callbacks:
            try:
                callback(key, value)
            except Exception:
                log.exception("opt-out registry: a subscriber failed on %s", key)

    def publish(self) -> None:
        """Make the folded sets visible to readers (replaced, never changed in place)."""
        with self._lock:
            if self._dirty:
                self._users = frozenset(self._user_ids)
                self._channels = frozenset(self._channel_ids)
                self._dirty = False

    def _open(self) -> TopicReader:
        reader = self._connect()
        self.error = None
        if reader.caught_up:
            self._ready.set()
        return reader

    def _failed(self, exc: Exception) -> None:
        if isinstance(exc, ChatlogError):
            if str(exc) != self.error:  # once per new reason, not every retry
                log.warning("opt-out registry: %s; retrying every %.0fs", exc, RETRY_S)
            self.error = str(exc)
        else:  # the thread keeps trying; the reason is kept for wait_ready
            self.error = one_line(exc, typed=True)
            log.exception("opt-out registry failed; retrying in %.0fs", RETRY_S)

    def _connect(self) -> TopicReader:
        metadata = probe(self.settings, PROBE_TIMEOUT_S)
        found = metadata.topics.get(self.topic)
        if found is None or found.error is not None or not found.partitions:
            raise ChatlogError(
                f"the opt-out topic {self.topic} does not exist (CHATLOG_TOPIC_OPTOUT; `chatlog init` "
                "creates it)"
            )
        group = f"chatlog-optout-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        config = reader_config(self.settings, group, **QUIET, error_cb=self._on_error)
        consumer = Consumer({**config, **follower_options("chatlog-optout")})
        reader = TopicReader(consumer, self.topic, follow=True)
        try:
            reader.assign(found.partitions, deadline=time.monotonic() + PROBE_TIMEOUT_S)
        except TopicReadError as exc:
            consumer.close()
            errors = [exc.error] if exc.error is not None else []
            raise ChatlogError(describe(self.settings, errors)) from None
        return reader

    def _on_error(self, err: KafkaError) -> None:
        if err.code() in (KafkaError._ALL_BROKERS_DOWN, KafkaError._AUTHENTICATION, KafkaError._SSL):
            self.error = describe(self.settings, [err])

    def _poll(self, reader: TopicReader) -> None:
        records, errors = reader.read(POLL_S, BATCH)
        if any(err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART for err in errors):
            raise ChatlogError(f"the opt-out topic {self.topic} is gone (CHATLOG_TOPIC_OPTOUT)")
        if records:
            self.error = None
            for record in records:
                self._record(record, publish=self._ready.is_set())
            self.publish()
        if reader.caught_up and not self._ready.is_set():
            self._ready.set()

    def _record(self, record: Any, *, publish: bool) -> None:
        raw_key = record.key()
        if raw_key is None:
            return
        key = raw_key.decode("utf-8", "replace")
        try:
            value = decode(key, record.value())
        except InvalidRecord as exc:
            log.warning(
                "opt-out registry: skipped a record at %s/%s: %s", record.partition(), record.offset(), exc
            )
            return
        self.records_read += 1
        self.apply(key, value, publish=publish)
