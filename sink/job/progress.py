"""Per-batch progress of the sink: one log line and Prometheus metrics per micro-batch.

Spark's progress (``StreamingQueryProgress`` as JSON) gives the records read, the duplicates the
dedup operator dropped, the batch duration and the Kafka offsets (lag = latest - end, summed over
partitions); the write step gives what it wrote (:class:`sink.writer.stats.WriteStats`).
Both meet here by batch id.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass, field
from typing import Any

from sink.writer.stats import WriteStats

log = logging.getLogger("sink.job.progress")


def _offsets(value: Any) -> dict[str, dict[str, int]]:
    if value is None:
        return {}
    data = json.loads(value) if isinstance(value, str) else value
    return (
        {t: {p: int(o) for p, o in parts.items()} for t, parts in data.items()}
        if isinstance(data, dict)
        else {}
    )


def kafka_lag(progress: dict[str, Any]) -> int | None:
    """Records in Kafka not yet read after this batch (sum over partitions), when Spark knows it."""
    total = None
    for source in progress.get("sources", []):
        latest, end = _offsets(source.get("latestOffset")), _offsets(source.get("endOffset"))
        if not latest:
            continue
        total = total or 0
        for topic, parts in latest.items():
            for part, offset in parts.items():
                total += max(0, offset - end.get(topic, {}).get(part, 0))
    return total


def end_offsets(progress: dict[str, Any]) -> dict[str, dict[int, int]]:
    """Topic -> partition -> the offset up to which an executed batch read (its sources' ``endOffset``)."""
    out: dict[str, dict[int, int]] = {}
    for source in progress.get("sources", []):
        for topic, parts in _offsets(source.get("endOffset")).items():
            out.setdefault(topic, {}).update({int(p): o for p, o in parts.items()})
    return out


@dataclass
class BatchReport:
    """One micro-batch: what came in, what was dropped, what was written, how long, how far behind."""

    batch_id: int
    events_in: int
    invalid: int
    duplicates: int
    late_dropped: int
    written: WriteStats
    duration_s: float
    kafka_lag: int | None
    started: str | None = None
    """When the batch started (Spark's progress ``timestamp``, ISO 8601 UTC)."""

    @classmethod
    def from_progress(cls, progress: dict[str, Any], written: WriteStats | None) -> BatchReport:
        ops = progress.get("stateOperators") or []
        return cls(
            batch_id=int(progress["batchId"]),
            events_in=int(progress.get("numInputRows", 0)),
            invalid=written.deadletters if written else 0,
            duplicates=sum(
                int((op.get("customMetrics") or {}).get("numDroppedDuplicateRows", 0)) for op in ops
            )
            + (written.duplicates if written else 0),
            late_dropped=sum(int(op.get("numRowsDroppedByWatermark", 0)) for op in ops),
            written=written or WriteStats(),
            duration_s=int(progress.get("batchDuration", 0)) / 1000,
            kafka_lag=kafka_lag(progress),
            started=progress.get("timestamp") or None,
        )

    def line(self) -> str:
        w = self.written
        lag = "?" if self.kafka_lag is None else str(self.kafka_lag)
        optouts = f"{w.optout_dropped} of opted-out users/channels dropped, " if w.optout_dropped else ""
        return (
            f"batch {self.batch_id}: {self.events_in} in ({self.invalid} invalid), "
            f"{self.duplicates} duplicates dropped, {optouts}"
            f"{w.events} events -> {w.rows_total} rows, {w.deadletters} dead letters, "
            f"{self.duration_s:.2f}s, lag {lag}" + (f", started {self.started}" if self.started else "")
        )


class Metrics:
    """Prometheus metrics of the sink, served on ``port`` (0: kept but not served)."""

    def __init__(self, port: int) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

        self.registry = CollectorRegistry()
        r = self.registry
        self.events_in = Counter("chatlog_sink_events_in", "Kafka records read.", registry=r)
        self.duplicates = Counter("chatlog_sink_duplicates_dropped", "Duplicates dropped.", registry=r)
        self.late = Counter(
            "chatlog_sink_late_dropped", "Rows Spark dropped as late (expected 0).", registry=r
        )
        self.events_written = Counter("chatlog_sink_events_written", "Events written.", registry=r)
        self.rows = Counter("chatlog_sink_rows_written", "Cassandra rows written.", ["table"], registry=r)
        self.deadletters = Counter(
            "chatlog_sink_deadletters", "Records sent to the dead-letter topic.", registry=r
        )
        self.retries = Counter("chatlog_sink_write_retries", "Cassandra writes retried.", registry=r)
        self.optout_dropped = Counter(
            "chatlog_sink_optout_dropped", "Events of opted-out users or channels not written.", registry=r
        )
        self.batches = Counter("chatlog_sink_batches", "Micro-batches completed.", registry=r)
        self.duration = Histogram(
            "chatlog_sink_batch_duration_seconds",
            "Micro-batch duration.",
            buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120),
            registry=r,
        )
        self.lag = Gauge("chatlog_sink_kafka_lag_records", "Records in Kafka not yet read.", registry=r)
        self.last_batch = Gauge("chatlog_sink_last_batch_id", "Id of the last completed batch.", registry=r)
        self._server: Any = None
        if port:
            self._server, _thread = start_http_server(port, addr="0.0.0.0", registry=r)

    def observe(self, report: BatchReport) -> None:
        self.events_in.inc(report.events_in)
        self.duplicates.inc(report.duplicates)
        self.late.inc(report.late_dropped)
        self.events_written.inc(report.written.events)
        for table, count in report.written.rows.items():
            self.rows.labels(table).inc(count)
        self.deadletters.inc(report.written.deadletters)
        self.retries.inc(report.written.retries)
        self.optout_dropped.inc(report.written.optout_dropped)
        self.batches.inc()
        self.duration.observe(report.duration_s)
        if report.kafka_lag is not None:
            self.lag.set(report.kafka_lag)
        self.last_batch.set(report.batch_id)

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


@dataclass
class Totals:
    batches: int = 0
    events_in: int = 0
    invalid: int = 0
    duplicates: int = 0
    late_dropped: int = 0
    written: WriteStats = field(default_factory=WriteStats)
    reports: list[BatchReport] = field(default_factory=list)

    def add(self, report: BatchReport) -> None:
        self.reports.append(report)
        self.batches += 1
        self.events_in += report.events_in
        self.invalid += report.invalid
        self.duplicates += report.duplicates
        self.late_dropped += report.late_dropped
        self.written.add(report.written)


class BatchTracker:
    """Joins the write step's stats with Spark's progress, by batch id; logs and exports each batch."""

    def __init__(self, metrics: Metrics | None) -> None:
        self.metrics = metrics
        self.totals = Totals()
        self._written: dict[int, WriteStats] = {}
        self._reported: set[int] = set()
        self._lock = threading.Lock()

    def written(self, batch_id: int, stats: WriteStats) -> None:
        """Called by the write step (foreachBatch) when batch ``batch_id`` is written."""
        with self._lock:
            self._written[batch_id] = stats

    def consume(self, progresses: list[dict[str, Any]]) -> list[BatchReport]:
        """Report every executed batch in ``progresses`` not reported yet."""
        new = []
        for progress in progresses:
            batch_id = int(progress.get("batchId", -1))
            if "addBatch" not in (progress.get("durationMs") or {}) or batch_id in self._reported:
                continue
            with self._lock:
                stats = self._written.pop(batch_id, None)
            report = BatchReport.from_progress(progress, stats)
            self._reported.add(batch_id)
            self.totals.add(report)
            if report.late_dropped:
                log.warning("batch %d: Spark dropped %d late rows", batch_id, report.late_dropped)
            if report.events_in or report.written.rows_total:
                log.info("%s", report.line())
            if self.metrics is not None:
                self.metrics.observe(report)
            new.append(report)
        return new
