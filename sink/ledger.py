"""The coverage ledger in Cassandra: written from ``chatlog.coverage``, read as spans and gaps.

:class:`LedgerWriter` runs beside the streaming sink (a thread of the driver; the events are a few per
channel per day, no work for Spark): it consumes the coverage topic in its own consumer group, writes
each event into ``coverage_by_channel`` and each worker run's last sign of life into
``coverage_sessions``, and commits only what Cassandra acknowledged. Undecodable records are counted
and skipped (the topic is written by chatlog's own ingesters only).

:func:`read_coverage` returns a channel's spans and gaps over a time range (sink/coverage_spans.py).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from confluent_kafka import Consumer, KafkaException

from schemas.coverage import ALIVE, CoverageEvent, decode_records
from sink.coverage_spans import Gap, SessionKey, Span, gaps, spans

if TYPE_CHECKING:
    from chatlog.settings import CassandraSettings, KafkaSettings

log = logging.getLogger(__name__)

DAY_MS: Final = 86_400_000
LOOKBACK_MS: Final = 7 * 3600 * 1000
"""How far before a range the reader looks for the joins of spans still open: the ingesters announce
what they cover every 6 hours (CHATLOG_INGEST_COVERAGE_REFRESH_S), plus an hour."""
SILENT_AFTER_MS: Final = 10_000
"""A worker run with no sign of life for this long is gone (ingesters send one every 2 s by default)."""
_BATCH: Final = 2000

_INSERT_EVENT = (
    "INSERT INTO {ks}.coverage_by_channel (channel, day, at, replica, worker, session, state, reason) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
_SEEN = "UPDATE {ks}.coverage_sessions SET last_seen = ? WHERE replica = ? AND worker = ? AND session = ?"


class LedgerWriter:
    """Coverage topic -> Cassandra, in a thread; :meth:`step` is one batch (tests call it directly)."""

    def __init__(self, kafka: KafkaSettings, cassandra: CassandraSettings, *, group: str = "chatlog-ledger"):
        from chatlog.cql import connect

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
                [(at, r, w, s) for (r, w, s), at in seen.items()],
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


@dataclass(frozen=True)
class Coverage:
    """A channel's coverage over ``[since_ms, until_ms)``."""

    channel: str
    since_ms: int
    until_ms: int
    spans: list[Span]
    gaps: list[Gap]


def read_coverage(
    session: Any, keyspace: str, channel: str, since_ms: int, until_ms: int, *, now_ms: int | None = None
) -> Coverage:
    """Spans and gaps of ``channel`` in ``[since_ms, until_ms)`` from the ledger (a connected session)."""
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    until = min(until_ms, now)
    first_day = (since_ms - LOOKBACK_MS) // DAY_MS
    events: list[CoverageEvent] = []
    query = session.prepare(
        f"SELECT at, replica, worker, session, state, reason FROM {keyspace}.coverage_by_channel "
        "WHERE channel = ? AND day = ? AND at >= ? AND at < ?"
    )
    for day in range(first_day, until // DAY_MS + 1):
        for row in session.execute(query, (channel, day, since_ms - LOOKBACK_MS, until)):
            at = _ms(row.at)
            events.append(
                CoverageEvent(
                    replica=row.replica,
                    worker=row.worker,
                    session=row.session,
                    state=row.state,
                    at=at,
                    channel=channel,
                    reason=row.reason or "",
                )
            )
    last_seen: dict[SessionKey, int] = {}
    seen_query = session.prepare(
        f"SELECT last_seen FROM {keyspace}.coverage_sessions WHERE replica = ? AND worker = ? AND session = ?"
    )
    for key in {(e.replica, e.worker, e.session) for e in events}:
        row = session.execute(seen_query, key).one()
        if row is not None and row.last_seen is not None:
            last_seen[key] = _ms(row.last_seen)
    found = [
        s
        for s in spans(events, last_seen, now_ms=now, silent_after_ms=SILENT_AFTER_MS)
        if s.end > since_ms and s.start < until
    ]
    return Coverage(channel, since_ms, until, found, gaps(found, since_ms=since_ms, until_ms=until))


def _ms(value: Any) -> int:
    """Epoch ms of a driver timestamp (a naive UTC datetime)."""
    from datetime import UTC

    return int(value.replace(tzinfo=UTC).timestamp() * 1000)


def channel_gaps(settings: CassandraSettings, channel: str, since_ms: int, until_ms: int) -> list[Gap]:
    """The gaps of ``channel`` in the range, for marking them in a text log; none when the keyspace has
    no ledger (made before it existed) or the range is longer than a year (too many days to read)."""
    from cassandra import InvalidRequest

    from chatlog.cql import connect

    if until_ms - since_ms > 366 * DAY_MS:
        log.warning("gaps are marked for ranges up to a year; give --since to see them")
        return []
    cluster, session = connect(settings)
    try:
        return read_coverage(session, settings.cassandra_keyspace, channel, since_ms, until_ms).gaps
    except InvalidRequest:
        return []
    finally:
        cluster.shutdown()
