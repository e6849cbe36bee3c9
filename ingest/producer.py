"""Chat lines into ``chatlog.messages``: parse, encode, produce (the ingester's hot path).

Per line: :func:`core.irc_parse.parse_line` -> :func:`schemas.chat_event.encode` -> ``produce`` with the
channel as key. Counters are plain integers (no per-line Prometheus calls, no per-line logging); the
metrics collector reads them when scraped.

Nothing is dropped:

* a full local queue (``BufferError``) is waited out by polling, which also pushes back on the IRC
  reader (its socket buffers fill);
* a failed delivery is re-produced with the original key and value, up to ``ingest_delivery_attempts``
  times, then written to the dead-letter topic with the reason, and logged;
* a malformed line goes to the dead-letter topic (value = the raw line, headers ``reason`` and
  ``source`` = ``irc:<worker id>``), is counted, and is logged once per reason with a sample
  (again at most every ``ingest_malformed_log_interval_s``).

Dropped on purpose, and counted: the events of opted-out users and channels (the ``gate``,
:class:`ingest.consent.OptOutGate`), before they are encoded.

Delivery callbacks run inside :meth:`IngestProducer.poll` / ``flush`` on the worker's event-loop
thread; re-produces are queued there and sent from the next :meth:`poll`, never from inside a callback.
"""

from __future__ import annotations

import logging
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, Protocol

from confluent_kafka import KafkaError, Producer

from core.irc_parse import MalformedLine, parse_line
from ingest.metrics import FastHistogram, counter
from ingest.registry import PARTITIONER
from ingest.settings import IngestSettings
from schemas.chat_event import ChatEvent, encode

log = logging.getLogger(__name__)

ParseFn = Callable[..., ChatEvent | None]


class Gate(Protocol):
    """Consent on the hot path (:class:`ingest.consent.OptOutGate`)."""

    def drop(self, event: ChatEvent) -> bool:
        """Whether the event must not reach Kafka (an opted-out user or channel)."""
        ...

    def not_chat(self, line: str) -> None:
        """A line that is no chat event (a ROOMSTATE teaches a channel's room id)."""
        ...


_STATUS_MAX_BYTES: Final = 16 * 1024 * 1024
_DEAD_LETTER_MAX_BYTES: Final = 256 * 1024
"""A malformed line is dead-lettered up to this size (the topic's default limit is 1 MiB per record)."""


_TWITCH_ID = re.compile(r"[0-9]{1,20}")


def with_client_id_tags(parse: ParseFn) -> ParseFn:
    """``parse`` that takes a line's Twitch ids from client-only tags when it has none: ``+user-id`` as
    ``user_id``, ``+room-id`` as ``channel_id``, ``+badges`` as the ``badges`` tag.

    For test and simulation servers only (``ingest_client_id_tags``): a plain IRC server (InspIRCd with
    ``ircv3_ctctags``) relays the client tags a sender sets, so a test client can speak as a Twitch user
    of a Twitch room through a real IRC server. Any client can set them: never on a real network."""

    def parse_with_ids(line: str, **kwargs: Any) -> ChatEvent | None:
        event = parse(line, **kwargs)
        if event is None:
            return None
        tags = event.tags
        if event.user_id is None:
            user_id = tags.get("+user-id")
            if user_id is not None and _TWITCH_ID.fullmatch(user_id):
                event.user_id = user_id
        if event.channel_id is None:
            room = tags.get("+room-id")
            if room is not None and _TWITCH_ID.fullmatch(room):
                event.channel_id = room
        badges = tags.get("+badges")
        if badges is not None and "badges" not in tags:
            tags["badges"] = badges
        return event

    return parse_with_ids


def producer_config(settings: IngestSettings, worker_id: str) -> dict[str, Any]:
    """librdkafka settings of the ingester's producer: the settings' write guarantees (idempotent, acks=all
    by default), compressed, big batches."""
    return {
        **settings.kafka_client_config(),
        "logger": logging.getLogger("librdkafka.producer"),
        "client.id": f"chatlog-ingest-{worker_id}",
        **settings.producer_guarantees(),
        "compression.type": settings.ingest_compression,
        "linger.ms": settings.ingest_linger_ms,
        "batch.size": settings.ingest_batch_bytes,
        "batch.num.messages": 100_000,
        "queue.buffering.max.messages": settings.ingest_queue_max_messages,
        "queue.buffering.max.kbytes": settings.ingest_queue_max_kbytes,
        "delivery.timeout.ms": settings.ingest_delivery_timeout_ms,
        "message.max.bytes": _STATUS_MAX_BYTES,  # heartbeats list every confirmed channel
        "partitioner": PARTITIONER,
    }


@dataclass
class ProducerCounts:
    """What the producer did since it started; most counts are exported as ``chatlog_ingest_*`` counters."""

    lines: int = counter("chatlog_ingest_lines_read", "IRC lines handed to the producer.")
    events: int = counter("chatlog_ingest_events_produced", "Chat events produced (queued).")
    not_chat: int = counter("chatlog_ingest_not_chat_lines", "Lines that are not chat events.")
    malformed: int = counter("chatlog_ingest_malformed_lines", "Malformed lines (dead-lettered).")
    delivered: int = counter("chatlog_ingest_events_delivered", "Records acknowledged by Kafka.")
    delivery_errors: int = counter(
        "chatlog_ingest_delivery_errors", "Failed deliveries (retried or dead-lettered)."
    )
    retries: int = counter(
        "chatlog_ingest_delivery_retries", "Records produced again after a failed delivery."
    )
    dead_lettered: int = counter(
        "chatlog_ingest_dead_lettered", "Records acknowledged by the dead-letter topic."
    )
    dead_letter_errors: int = 0
    """Dead-letter records not delivered either (each one logged as lost)."""
    queue_full_waits: int = counter(
        "chatlog_ingest_queue_full_waits", "Waits for room in the producer queue."
    )
    status_errors: int = 0
    """Heartbeats (or tombstones) not delivered to the status topic (the next one replaces it)."""
    coverage_errors: int = counter("chatlog_ingest_coverage_errors", "Coverage events not delivered.")


class IngestProducer:
    """Turns raw IRC lines into chat events on Kafka; owns the process's one librdkafka producer."""

    def __init__(
        self,
        settings: IngestSettings,
        worker_id: str,
        *,
        producer: Any = None,
        parse: ParseFn = parse_line,
        clock: Callable[[], float] = time.monotonic,
        gate: Gate | None = None,
    ) -> None:
        self._settings = settings
        self._worker_id = worker_id
        self._topic = settings.topic_messages
        self._deadletter_topic = settings.topic_deadletter
        self._status_topic = settings.topic_status
        self._coverage_topic = settings.topic_coverage
        self._source = f"irc:{worker_id}".encode()
        self._parse = parse
        self._clock = clock
        self.gate = gate
        self._attempts = settings.ingest_delivery_attempts
        self._log_interval = settings.ingest_malformed_log_interval_s
        self._malformed_logged: dict[str, tuple[float, int]] = {}
        self._retry: deque[tuple[str, bytes | None, bytes | None, int]] = deque()
        self.counts = ProducerCounts()
        self.latency = FastHistogram()
        self.fatal: str | None = None
        if producer is None:
            conf = producer_config(settings, worker_id)
            conf["on_delivery"] = self._on_delivery
            conf["error_cb"] = self._on_error
            producer = Producer(conf)
        self._producer = producer

    # -- the hot path ------------------------------------------------------------------------------
    def on_lines(self, lines: list[str], received_at: int) -> None:
        """The pool's callback: every line is parsed and, if it is a chat event, produced."""
        parse = self._parse
        produce = self._producer.produce
        topic = self._topic
        ingester = self._worker_id
        gate = self.gate
        events = not_chat = 0
        for line in lines:
            try:
                event = parse(line, received_at=received_at, ingester=ingester)
            except MalformedLine as exc:
                self._malformed(line, str(exc))
                continue
            except Exception as exc:  # a parser bug must not lose the line or stop the connection
                self._malformed(line, f"parser failed: {type(exc).__name__}: {exc}")
                continue
            if event is None:
                not_chat += 1
                if gate is not None:
                    gate.not_chat(line)
                continue
            if gate is not None and gate.drop(event):
                continue
            value = encode(event)
            try:
                produce(topic, value, event.channel)
            except BufferError:
                self._produce_waiting(topic, value, event.channel)
            events += 1
        counts = self.counts
        counts.lines += len(lines)
        counts.events += events
        counts.not_chat += not_chat
        self._producer.poll(0)

    def _produce_waiting(
        self,
        topic: str,
        value: bytes | None,
        key: str | bytes | None,
        headers: list[tuple[str, bytes]] | None = None,
        on_delivery: Callable[[KafkaError | None, Any], None] | None = None,
    ) -> None:
        """Produce, serving delivery reports while the local queue is full (never drops)."""
        while True:
            try:
                if on_delivery is None:
                    self._producer.produce(topic, value, key, headers=headers)
                else:
                    self._producer.produce(topic, value, key, headers=headers, on_delivery=on_delivery)
                return
            except BufferError:
                self.counts.queue_full_waits += 1
                self._producer.poll(0.05)

    # -- malformed lines -------------------------------------------------------------------------
    def _malformed(self, line: str, reason: str) -> None:
        self.counts.malformed += 1
        value = line.encode("utf-8", "surrogatepass")
        if len(value) > _DEAD_LETTER_MAX_BYTES:  # keep the dead letter deliverable under Kafka's limits
            reason = f"{reason} (dead letter cut to its first {_DEAD_LETTER_MAX_BYTES} of {len(value)} bytes)"
            value = value[:_DEAD_LETTER_MAX_BYTES]
        self.dead_letter(value, reason)
        kind = reason.split(" '", 1)[0]
        now = self._clock()
        last, suppressed = self._malformed_logged.get(kind, (None, 0))
        if last is None or now - last >= self._log_interval:
            more = f" ({suppressed} more like it since the last report)" if suppressed else ""
            log.warning("malformed line: %s%s; sample: %r", reason, more, line[:300])
            self._malformed_logged[kind] = (now, 0)
        else:
            self._malformed_logged[kind] = (last, suppressed + 1)

    def dead_letter(self, value: bytes | None, reason: str) -> None:
        """Send a record to the dead-letter topic with its reason and source."""
        headers = [("reason", reason.encode("utf-8", "replace")), ("source", self._source)]
        self._produce_waiting(self._deadletter_topic, value, None, headers, self._on_dead_letter_delivery)

    # -- delivery reports ---------------------------------------------------------------------------
    def _on_delivery(self, err: KafkaError | None, msg: Any) -> None:
        if err is None:
            self.counts.delivered += 1
            self.latency.observe(msg.latency())
            return
        self._failed(err, msg, 1)

    def _on_retry_delivery(self, attempt: int, err: KafkaError | None, msg: Any) -> None:
        if err is None:
            self.counts.delivered += 1
            return
        self._failed(err, msg, attempt)

    def _failed(self, err: KafkaError, msg: Any, attempt: int) -> None:
        self.counts.delivery_errors += 1
        retriable = err.retriable() or err.code() in (KafkaError._MSG_TIMED_OUT, KafkaError._TIMED_OUT)
        if retriable and attempt < self._attempts:
            self._retry.append((msg.topic(), msg.value(), msg.key(), attempt + 1))
            return
        reason = f"produce to {msg.topic()} failed after {attempt} attempt(s): {err.str()}"
        log.error("%s (key %r): dead-lettered", reason, msg.key())
        self.dead_letter(msg.value(), reason)

    def _on_dead_letter_delivery(self, err: KafkaError | None, msg: Any) -> None:
        if err is None:
            self.counts.dead_lettered += 1
        else:
            self.counts.dead_letter_errors += 1
            log.error("dead-letter record lost: %s (reason %r)", err, dict(msg.headers() or ()).get("reason"))

    def _on_error(self, err: KafkaError) -> None:
        if err.fatal():
            self.fatal = err.str()
            log.critical("Kafka producer fatal error: %s", err)
        else:
            log.warning("Kafka producer: %s", err)

    # -- housekeeping --------------------------------------------------------------------------------
    def poll(self, timeout: float = 0.0) -> None:
        """Serve delivery reports and send queued retries (call often from the worker's loop)."""
        self._producer.poll(timeout)
        while self._retry:
            topic, value, key, attempt = self._retry.popleft()
            self.counts.retries += 1
            self._produce_waiting(topic, value, key, None, partial(self._on_retry_delivery, attempt))

    def flush(self, timeout: float) -> int:
        """Wait until everything (retries included) is acknowledged; returns what is still queued."""
        deadline = self._clock() + timeout
        while True:
            self.poll()
            left: int = self._producer.flush(max(0.0, min(1.0, deadline - self._clock())))
            if (left == 0 and not self._retry) or self._clock() >= deadline:
                return left + len(self._retry)

    def produce_status(self, key: str, value: bytes | None) -> None:
        """A heartbeat (or tombstone) for the status topic; a failure is counted, the next one replaces it."""
        self._produce_waiting(self._status_topic, value, key.encode(), None, self._on_status_delivery)

    def _on_status_delivery(self, err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            self.counts.status_errors += 1
            log.warning("heartbeat not delivered: %s", err)

    def produce_coverage(self, key: str, value: bytes) -> None:
        """A coverage event (hand-off confirmation, ledger); a failure is counted and logged."""
        self._produce_waiting(self._coverage_topic, value, key.encode(), None, self._on_coverage_delivery)

    def _on_coverage_delivery(self, err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            self.counts.coverage_errors += 1
            log.warning("coverage event not delivered: %s", err)

    def queued(self) -> int:
        return len(self._producer)
