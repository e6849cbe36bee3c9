"""Per-batch reports from Spark's progress and the write step; Prometheus metrics."""

from __future__ import annotations

from collections import Counter

from sink.job.progress import BatchReport, BatchTracker, Metrics, kafka_lag
from sink.writer.stats import WriteStats

PROGRESS = {
    "batchId": 7,
    "numInputRows": 1200,
    "batchDuration": 1500,
    "durationMs": {"addBatch": 1200, "triggerExecution": 1500},
    "stateOperators": [
        {"operatorName": "dedupeWithinWatermark", "numRowsDroppedByWatermark": 0,
         "customMetrics": {"numDroppedDuplicateRows": 150}}
    ],
    "sources": [
        {
            "startOffset": {"t": {"0": 0, "1": 0}},
            "endOffset": {"t": {"0": 600, "1": 600}},
            "latestOffset": {"t": {"0": 700, "1": 650}},
        }
    ],
    "observedMetrics": {"records": {"read": 1200}},
}  # fmt: skip


def _stats() -> WriteStats:
    return WriteStats(
        events=1040, rows=Counter({"chat_by_channel": 1040, "chat_by_user": 900}), deadletters=10
    )


def test_report_joins_progress_and_write_stats() -> None:
    report = BatchReport.from_progress(PROGRESS, _stats())
    assert (report.batch_id, report.events_in, report.invalid, report.duplicates) == (7, 1200, 10, 150)
    assert report.kafka_lag == 150 and report.duration_s == 1.5
    assert "1200 in (10 invalid), 150 duplicates dropped, 1040 events -> 1940 rows" in report.line()


def test_lag_accepts_offsets_as_json_text_and_unknown_latest() -> None:
    assert kafka_lag({"sources": [{"endOffset": '{"t": {"0": 5}}', "latestOffset": '{"t": {"0": 9}}'}]}) == 4
    assert kafka_lag({"sources": [{"endOffset": {"t": {"0": 5}}, "latestOffset": None}]}) is None


def test_tracker_reports_each_executed_batch_once_and_skips_idle_progress() -> None:
    tracker = BatchTracker(Metrics(0))
    tracker.written(7, _stats())
    idle = {"batchId": 8, "numInputRows": 0, "durationMs": {"triggerExecution": 1}}
    assert [r.batch_id for r in tracker.consume([PROGRESS, idle])] == [7]
    assert tracker.consume([PROGRESS]) == []
    assert tracker.totals.events_in == 1200 and tracker.totals.written.events == 1040


def test_metrics_count_what_the_batches_did() -> None:
    metrics = Metrics(0)
    tracker = BatchTracker(metrics)
    tracker.written(7, _stats())
    tracker.consume([PROGRESS])
    value = metrics.registry.get_sample_value
    assert value("chatlog_sink_events_in_total") == 1200
    assert value("chatlog_sink_duplicates_dropped_total") == 150
    assert value("chatlog_sink_rows_written_total", {"table": "chat_by_user"}) == 900
    assert value("chatlog_sink_deadletters_total") == 10
    assert value("chatlog_sink_kafka_lag_records") == 150
    assert value("chatlog_sink_batch_duration_seconds_count") == 1
