"""The coverage ledger in Cassandra, written from ``chatlog.coverage`` (read by :mod:`serve.coverage`).

:class:`LedgerWriter` runs beside the streaming sink (a thread of the driver,
:mod:`core.background_consumer`; the events are a few per channel per day, no work for Spark): it consumes
the coverage topic in its own consumer group, writes each event into ``coverage_by_channel`` and each
worker run's last sign of life into ``coverage_sessions``, and commits only what Cassandra acknowledged.
Undecodable records are counted and skipped (the topic is written by chatlog's own ingesters only).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Final

from confluent_kafka import Consumer, KafkaException

from core.background_consumer import BackgroundConsumer
from core.compacted import follower_options
from core.coverage_spans import SessionKey
from schemas.coverage import ALIVE, DAY_MS, decode_records

if TYPE_CHECKING:
    from core.settings import CassandraSettings, KafkaSettings

log = logging.getLogger(__name__)

_BATCH: Final = 2000
_RETRY_S: Final = 5.0
"""Seconds before a batch that failed (Kafka or Cassandra away, a write rejected) is tried again."""

_INSERT_EVENT = (
    "INSERT INTO {ks}.coverage_by_channel (channel, day, at, replica, worker, session, state, reason) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
_SEEN = (
    "UPDATE {ks}.coverage_sessions USING TIMESTAMP ? SET last_seen = ? "
    "WHERE replica = ? AND worker = ? AND session = ?"
)
"""The write timestamp is the event's time (µs): a batch holding older events of a worker run (its events
come through several partitions of the topic) never moves ``last_seen`` back."""


class LedgerWriter(BackgroundConsumer[Consumer]):
    """Coverage topic -> Cassandra, in a thread; :meth:`step` is one batch (tests call it directly). A
    batch that failed is tried again every ``_RETRY_S``."""

    def __init__(self, kafka: KafkaSettings, cassandra: CassandraSettings, *, group: str = "chatlog-ledger"):
        from core.cql import connect

        super().__init__("coverage-ledger", "coverage ledger consumer", retry_s=_RETRY_S)
        self._topic = kafka.topic_coverage
        self._keyspace = cassandra.cassandra_keyspace
        self._consumer = Consumer(
            {
                **kafka.kafka_client_config(),
                "log_level": 2,
                "group.id": group,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                **follower_options("chatlog-ledger"),
            }
        )
        self._cluster, self._session = connect(cassandra)
        ks = self._keyspace
        self._insert = self._session.prepare(_INSERT_EVENT.format(ks=ks))
        self._seen = self._session.prepare(_SEEN.format(ks=ks))
        self.written = 0
        self.undecodable = 0
        self._consumer.subscribe([self._topic])

    def step(self, timeout: float = 0.5) -> int:
        """Consume up to one batch, write it, commit it; returns the events written."""
        from cassandra.concurrent import execute_concurrent_with_args

        messages = self._consumer.consume(_BATCH, timeout)
        events, bad = decode_records(messages)
        self.undecodable += bad
        rows = [
            (e.channel, e.at // DAY_MS, e.at, e.replica, e.worker, e.session, e.state, e.reason)
            for e in events
            if e.state != ALIVE
        ]
        seen: dict[SessionKey, int] = {}
        for e in events:
            key = (e.replica, e.worker, e.session)
            seen[key] = max(seen.get(key, 0), e.at)
        if rows:
            execute_concurrent_with_args(
                self._session, self._insert, rows, concurrency=32, raise_on_first_error=True
            )
        if seen:
            execute_concurrent_with_args(
                self._session,
                self._seen,
                [(at * 1000, at, r, w, s) for (r, w, s), at in seen.items()],
                concurrency=32,
                raise_on_first_error=True,
            )
        if messages:
            self._consumer.commit(asynchronous=False)
        self.written += len(rows)
        return len(rows)

    def close(self) -> None:
        self.stop()
        self.join(10)
        self._consumer.close()
        self._cluster.shutdown()

    def _open(self) -> Consumer:
        return self._consumer  # subscribed once, kept across failures

    def _poll(self, consumer: Consumer) -> None:
        self.step()

    def _failed(self, exc: Exception) -> None:
        if isinstance(exc, (KafkaException, OSError)):  # Kafka or Cassandra away: wait, retry the batch
            log.warning("coverage ledger: %s; retrying in %.0f s", exc, _RETRY_S)
        else:  # a write rejected by Cassandra: retry, and say so
            log.warning("coverage ledger: writing failed: %s; retrying in %.0f s", exc, _RETRY_S)

    def _close(self, consumer: Consumer) -> None:
        """Nothing when the thread ends: :meth:`close` closes the consumer, which :meth:`step` uses without
        the thread too."""
