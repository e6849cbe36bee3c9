"""The coverage ledger in Cassandra, written from ``chatlog.coverage`` (read by :mod:`serve.coverage`).

:class:`LedgerWriter` runs beside the streaming sink (a thread of the driver; the events are a few per
channel per day, no work for Spark): it consumes the coverage topic in its own consumer group, writes
each event into ``coverage_by_channel`` and each worker run's last sign of life into
``coverage_sessions``, and commits only what Cassandra acknowledged. Undecodable records are counted
and skipped (the topic is written by chatlog's own ingesters only).
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Final

from confluent_kafka import Consumer, KafkaException

from core.coverage_spans import SessionKey
from schemas.coverage import ALIVE, DAY_MS, decode_records

if TYPE_CHECKING:
    from core.settings import CassandraSettings, KafkaSettings

log = logging.getLogger(__name__)

_BATCH: Final = 2000

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


class LedgerWriter:
    """Coverage topic -> Cassandra, in a thread; :meth:`step` is one batch (tests call it directly)."""

    def __init__(self, kafka: KafkaSettings, cassandra: CassandraSettings, *, group: str = "chatlog-ledger"):
        from core.cql import connect

        self._topic = kafka.topic_coverage
        self._keyspace = cassandra.cassandra_keyspace
        self._consumer = Consumer(
            {
                **kafka.kafka_client_config(),
                "log_level": 2,
                "group.id": group,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        self._cluster, self._session = connect(cassandra)
        ks = self._keyspace
        self._insert = self._session.prepare(_INSERT_EVENT.format(ks=ks))
        self._seen = self._session.prepare(_SEEN.format(ks=ks))
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.written = 0
        self.undecodable = 0
        self.failure: BaseException | None = None
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

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="coverage-ledger", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.step()
            except (KafkaException, OSError) as exc:  # Kafka or Cassandra away: wait, retry the batch
                log.warning("coverage ledger: %s; retrying in 5 s", exc)
                self._stop.wait(5)
            except Exception as exc:  # a write rejected by Cassandra: retry, and say so
                log.warning("coverage ledger: writing failed: %s; retrying in 5 s", exc)
                self.failure = exc
                self._stop.wait(5)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        self._consumer.close()
        self._cluster.shutdown()
