"""The fast histogram, the collector's exposition, and the /metrics + /ready endpoint."""

from __future__ import annotations

import urllib.error
import urllib.request
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, generate_latest

from ingest.metrics import FastHistogram, IngestCollector, MetricsServer, Sample, counter, counter_samples


def test_histogram_buckets_are_cumulative_with_sum_and_quantile() -> None:
    h = FastHistogram((0.01, 0.1, 1.0))
    for v in (0.005, 0.01, 0.05, 0.5, 5.0):
        h.observe(v)
    assert h.counts == [2, 1, 1, 1]
    assert h.quantile(0.5) == 0.1 and h.quantile(1.0) == float("inf")
    assert FastHistogram().quantile(0.5) is None
    registry = CollectorRegistry(auto_describe=False)
    samples = [Sample("x_lines", "lines", 7), Sample("x_owned", "owned", 3, "gauge")]
    registry.register(IngestCollector({"worker": "w"}, lambda: samples, lambda: [("x_lat", "lat", h)]))
    text = generate_latest(registry).decode()
    assert 'x_lines_total{worker="w"} 7.0' in text
    assert 'x_owned{worker="w"} 3.0' in text
    assert 'x_lat_bucket{le="0.1",worker="w"} 3.0' in text
    assert 'x_lat_bucket{le="+Inf",worker="w"} 5.0' in text
    assert 'x_lat_count{worker="w"} 5.0' in text


def test_server_answers_metrics_and_readiness_on_a_free_port() -> None:
    ready = {"ok": False}
    registry = CollectorRegistry(auto_describe=False)
    registry.register(IngestCollector({}, lambda: [Sample("y_total_lines", "n", 1)], lambda: []))
    server = MetricsServer(registry, lambda: ready["ok"], "127.0.0.1", 0)
    server.start()
    try:
        base = f"http://127.0.0.1:{server.port}"
        assert server.port > 0
        assert b"y_total_lines" in urllib.request.urlopen(base + "/metrics", timeout=5).read()
        try:
            urllib.request.urlopen(base + "/ready", timeout=5)
            raise AssertionError("not ready must be 503")
        except urllib.error.HTTPError as exc:
            assert exc.code == 503
        ready["ok"] = True
        assert urllib.request.urlopen(base + "/ready", timeout=5).status == 200
    finally:
        server.stop()


def test_the_counter_fields_of_stats_are_its_samples_in_their_order() -> None:
    @dataclass
    class Stats:
        lines: int = counter("x_lines_read", "Lines read.")
        skipped: int = 0
        errors: int = counter("x_errors", "Errors.")

    stats = Stats()
    stats.lines, stats.skipped = 7, 2
    assert counter_samples(stats) == [
        Sample("x_lines_read", "Lines read.", 7),
        Sample("x_errors", "Errors.", 0),
    ]
