"""Prometheus metrics of the monitor, on their own registry and port (``CHATLOG_MONITOR_METRICS_PORT``)."""

from __future__ import annotations

from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

from chatlog.monitor.gaps import GapTally
from chatlog.monitor.heartbeats import HeartbeatReport
from core.errors import ChatlogError

_PREFIX: Final = "chatlog_monitor"


class MonitorMetrics:
    """Gauges per replica from the heartbeats, plus the monitor's own health (records folded, readiness)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry

        def per_replica(name: str, documentation: str) -> Gauge:
            return Gauge(name, documentation, ["replica"], registry=r)

        self.uncovered = per_replica(
            f"{_PREFIX}_uncovered_channels", "Registered channels no live ingester confirms."
        )
        self.live_workers = per_replica(
            f"{_PREFIX}_live_workers", "Ingesters with a fresh running heartbeat."
        )
        self.longest = per_replica(
            f"{_PREFIX}_longest_uncovered_seconds",
            "How long the longest-uncovered channel has been uncovered (0: all covered).",
        )
        self.registered = Gauge(f"{_PREFIX}_registered_channels", "Channels in the registry.", registry=r)
        self.ready = Gauge(
            f"{_PREFIX}_ready", "1 once the tables are recovered and the warm-up is over.", registry=r
        )
        self.records = Counter(
            f"{_PREFIX}_records", "Records folded into the tables.", ["topic", "outcome"], registry=r
        )
        self.evaluation_seconds = Gauge(
            f"{_PREFIX}_evaluation_seconds",
            "Duration of the last evaluation of the heartbeats (table snapshot included).",
            registry=r,
        )
        self.gap_channels = per_replica(
            f"{_PREFIX}_channels_with_gap_last_hour",
            "Channels uncovered at some evaluation of the last hour (replica=all: by every group at once).",
        )
        self.uncovered_seconds = per_replica(
            f"{_PREFIX}_uncovered_channel_seconds",
            "Channel-seconds without a logger since the monitor started (replica=all: no group at all).",
        )
        self.gaps = GapTally()
        self._replicas: set[str] = set()

    def export(self, report: HeartbeatReport) -> None:
        """Set the per-replica gauges; replicas no longer reported are removed."""
        now = report.now_ms
        seen = set()
        for rep in report.replicas:
            label = str(rep.replica)
            seen.add(label)
            self.uncovered.labels(label).set(len(rep.uncovered))
            self.live_workers.labels(label).set(rep.live_workers)
            self.longest.labels(label).set(rep.longest_uncovered_s(now))
        for label in self._replicas - seen:
            for gauge in (self.uncovered, self.live_workers, self.longest):
                gauge.remove(label)
        self._replicas = seen
        self.registered.set(report.registered)
        self.gaps.add(report)
        for label in self.gaps.labels():
            self.gap_channels.labels(label).set(self.gaps.recent(label))
            self.uncovered_seconds.labels(label).set(self.gaps.channel_seconds[label])

    def serve(self, host: str, port: int) -> None:
        try:
            start_http_server(port, addr=host, registry=self.registry)
        except OSError as exc:
            raise ChatlogError(
                f"port {host}:{port} (CHATLOG_MONITOR_METRICS_PORT) is not available: {exc.strerror}"
            ) from None
