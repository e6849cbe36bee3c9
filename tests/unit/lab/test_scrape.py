"""Reading /metrics: the sink's and an ingester's real expositions parsed, and a live endpoint scraped."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from ingest.metrics import FastHistogram, IngestCollector, MetricsServer, Sample
from lab.demo import progress
from lab.scrape import parse, scrape
from sink.job.progress import Metrics


@pytest.fixture
def sink_text() -> str:
    metrics = Metrics(0)  # the sink's own registry, not served
    metrics.events_written.inc(5)
    metrics.rows.labels("chat_by_channel").inc(3)
    metrics.rows.labels("chat_by_user").inc(4)
    metrics.duration.observe(0.3)
    metrics.lag.set(12)
    return generate_latest(metrics.registry).decode()


def ingest_registry(delivered: float) -> CollectorRegistry:
    """An ingester's collector (its own exposition code: counters, gauges, a hand-made histogram)."""
    hist = FastHistogram()
    hist.observe(0.002)
    registry = CollectorRegistry()
    registry.register(
        IngestCollector(
            {"worker": "w1", "replica": "0"},
            lambda: [
                Sample("chatlog_ingest_events_delivered", "Records acknowledged by Kafka.", delivered),
                Sample("chatlog_ingest_buckets_owned", "Buckets owned.", 3, "gauge"),
            ],
            lambda: [("chatlog_ingest_produce_latency_seconds", "produce -> delivery", hist)],
        )
    )
    return registry


def test_a_counter_is_read_by_its_exposed_name(sink_text: str) -> None:
    metrics = parse(sink_text)
    assert metrics.value("chatlog_sink_events_written_total") == 5.0
    assert metrics.value("chatlog_sink_events_written") is None  # the family name is not a sample
    assert metrics.value("chatlog_sink_kafka_lag_records") == 12.0
    assert metrics.value("chatlog_no_such_metric") is None


def test_labelled_samples_are_summed_unless_labels_pick_one(sink_text: str) -> None:
    metrics = parse(sink_text)
    assert metrics.value("chatlog_sink_rows_written_total") == 7.0
    assert metrics.value("chatlog_sink_rows_written_total", table="chat_by_user") == 4.0
    assert metrics.value("chatlog_sink_rows_written_total", table="nowhere") is None


def test_totals_leave_out_buckets_and_creation_times(sink_text: str) -> None:
    totals = parse(sink_text).totals()
    assert totals["chatlog_sink_rows_written_total"] == 7.0
    assert totals["chatlog_sink_batch_duration_seconds_count"] == 1.0
    assert totals["chatlog_sink_batch_duration_seconds_sum"] == pytest.approx(0.3)
    assert not [name for name in totals if name.endswith(("_bucket", "_created"))]
    assert progress.pick(totals, progress.ROWS) == 5.0  # how the demo reads the sink


def test_an_ingesters_exposition_parses() -> None:
    metrics = parse(generate_latest(ingest_registry(41)).decode())
    assert metrics.value("chatlog_ingest_events_delivered_total") == 41.0
    assert metrics.value("chatlog_ingest_buckets_owned", worker="w1") == 3.0
    assert metrics.value("chatlog_ingest_produce_latency_seconds_count") == 1.0


@pytest.fixture
def ingest_endpoint() -> Iterator[int]:
    server = MetricsServer(ingest_registry(7), lambda: True, "127.0.0.1", 0)
    server.start()
    try:
        yield server.port
    finally:
        server.stop()


def test_scrape_reads_a_live_endpoint(ingest_endpoint: int) -> None:
    metrics = scrape(ingest_endpoint)
    assert metrics is not None
    assert metrics.value("chatlog_ingest_events_delivered_total", replica="0") == 7.0


def test_scrape_is_none_where_nothing_answers() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        port = sock.getsockname()[1]
        assert scrape(port, timeout=2) is None
