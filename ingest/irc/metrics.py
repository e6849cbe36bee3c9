"""Prometheus metrics of the IRC pool (module-level; several workers run as separate processes, the
``worker`` label tells them apart when one process hosts several pools, e.g. in tests)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import Counter, Gauge

if TYPE_CHECKING:
    from ingest.irc.stats import PoolStats

LINES_READ = Counter(
    "chatlog_irc_lines_read", "IRC lines handed to the ingester (chat, not protocol).", ["worker"]
)
BYTES_READ = Counter("chatlog_irc_bytes_read", "Bytes read from IRC servers.", ["worker"])
CONNECTIONS = Gauge("chatlog_irc_connections", "Open IRC connections by state.", ["worker", "state"])
RECONNECTS = Counter(
    "chatlog_irc_reconnects", "IRC connections lost without our asking, by cause.", ["worker", "reason"]
)
CHANNELS_WANTED = Gauge("chatlog_irc_channels_wanted", "Channels this worker should log.", ["worker"])
CHANNELS_CONFIRMED = Gauge(
    "chatlog_irc_channels_confirmed",
    "Channels whose JOIN the server echoed on a live connection.",
    ["worker"],
)
PENDING_JOINS = Gauge("chatlog_irc_pending_joins", "JOINs sent and not yet echoed.", ["worker"])
JOIN_TIMEOUTS = Counter(
    "chatlog_irc_join_timeouts", "JOINs not echoed in time after every retry (moved on).", ["worker"]
)
JOINS_SENT = Counter("chatlog_irc_joins_sent", "JOIN commands sent (retries included).", ["worker"])
BLOCKED_CHANNELS = Gauge(
    "chatlog_irc_channels_blocked", "Channels in JOIN-failure backoff (refused or never echoed).", ["worker"]
)
OVER_CAPACITY = Gauge(
    "chatlog_irc_channels_over_capacity",
    "Wanted channels not joined because the worker is at CHATLOG_INGEST_MAX_CHANNELS (add workers).",
    ["worker"],
)
MESSAGES_PER_S = Gauge(
    "chatlog_irc_messages_per_second",
    "Message rate of the channels this worker reads (measured per channel, decayed over ~1 min); the "
    "HPA's custom metric (k8s/hpa-messages.yaml).",
    ["worker"],
)
MAX_CONN_MESSAGES_PER_S = Gauge(
    "chatlog_irc_connection_max_messages_per_second",
    "Message rate of this worker's busiest IRC connection.",
    ["worker"],
)
CPU_PER_MESSAGE = Gauge(
    "chatlog_irc_cpu_seconds_per_message",
    "Process CPU seconds per IRC line read (whole process: reading, parsing, producing), last few s.",
    ["worker"],
)
CHANNEL_MOVES = Counter(
    "chatlog_irc_channel_moves",
    "Channels moved between connections for load (make-before-break).",
    ["worker"],
)


class PoolMetrics:
    """Publishes a pool's stats: gauges are set, counters advance by what changed since last time."""

    def __init__(self, worker: str) -> None:
        self.worker = worker
        self._last: dict[str, int] = {}

    def _advance(self, counter: Counter, key: str, value: int) -> None:
        delta = value - self._last.get(key, 0)
        if delta > 0:
            counter.labels(self.worker).inc(delta)
        self._last[key] = value

    def publish(self, stats: PoolStats) -> None:
        w = self.worker
        self._advance(LINES_READ, "lines", stats.lines_read)
        self._advance(BYTES_READ, "bytes", stats.bytes_read)
        self._advance(JOIN_TIMEOUTS, "join_timeouts", stats.join_timeouts)
        self._advance(JOINS_SENT, "joins", stats.joins_sent)
        CONNECTIONS.labels(w, "connecting").set(stats.connections_connecting)
        CONNECTIONS.labels(w, "ready").set(stats.connections_ready)
        CONNECTIONS.labels(w, "draining").set(stats.connections_draining)
        CHANNELS_WANTED.labels(w).set(stats.wanted)
        CHANNELS_CONFIRMED.labels(w).set(stats.confirmed)
        PENDING_JOINS.labels(w).set(stats.pending_joins)
        BLOCKED_CHANNELS.labels(w).set(stats.blocked)
        OVER_CAPACITY.labels(w).set(stats.over_capacity)
        MESSAGES_PER_S.labels(w).set(stats.msgs_per_s)
        MAX_CONN_MESSAGES_PER_S.labels(w).set(stats.max_conn_msgs_per_s)
        CPU_PER_MESSAGE.labels(w).set(stats.cpu_s_per_msg)

    def move(self) -> None:
        CHANNEL_MOVES.labels(self.worker).inc()

    def reconnect(self, reason: str) -> None:
        RECONNECTS.labels(self.worker, reason).inc()
