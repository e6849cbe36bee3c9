"""The faust app of ``chatlog monitor``: two agents fold the control topics into tables; a timer reports.

* ``fold-channels`` reads ``chatlog.channels`` into the table ``channels`` (login -> bucket, added_at;
  a tombstone deletes the key). The bucket is the partition the record came from.
* ``fold-heartbeats`` reads ``chatlog.status`` into the table ``heartbeats`` (``r<R>/<worker>`` -> the
  heartbeat JSON as received; a tombstone deletes the key).
* A timer runs :func:`chatlog.monitor.heartbeats.evaluate` on the tables every ``monitor_interval_s``,
  exports the Prometheus gauges and keeps the report that ``GET /coverage`` returns.

Tables live in memory; faust keeps each one in a compacted changelog topic
(``<app id>-<table>-changelog``, created by faust with the partition count of its source topic) and
restores it from there on start, then resumes the source topics from the committed offsets.
Run one monitor per app id: the tables are partitioned like their sources, so a second instance
in the same group would see only part of them.

faust is untyped; everything faust is kept in this module, behind :class:`Monitor`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any, Final

import faust
import msgspec

from chatlog.monitor import preflight
from chatlog.monitor.heartbeats import Channel, HeartbeatReport, SinceKey, evaluate, report_json
from chatlog.monitor.metrics import MonitorMetrics
from chatlog.monitor.settings import MonitorSettings
from core.times import now_ms
from ingest.registry import decode_record
from ingest.status import Heartbeat, decode_heartbeat

log = logging.getLogger(__name__)

_BAD_LOG_INTERVAL_S: Final = 60.0


class _Entry(msgspec.Struct, array_like=True):
    """A ``channels`` table value: ``[bucket, added_at]``."""

    bucket: int
    added_at: int


_encode_entry = msgspec.json.Encoder().encode
_decode_entry = msgspec.json.Decoder(_Entry).decode


class Monitor:
    """Builds the faust app for ``settings`` and holds the state between evaluations."""

    def __init__(
        self,
        settings: MonitorSettings,
        partitions: preflight.SourcePartitions,
        *,
        metrics: MonitorMetrics | None = None,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.settings = settings
        self.metrics = metrics or MonitorMetrics()
        self._clock = clock
        self._since: dict[SinceKey, int] = {}
        self._report: HeartbeatReport | None = None
        self._processed: dict[tuple[str, int], int] = {}
        self._targets: dict[tuple[str, int], int] | None = None
        self._catch_up_deadline = 0.0
        self._ready = False
        self._bad_logged_at = 0.0
        self.folded = {"channels": 0, "heartbeats": 0}
        self.app: Any = faust.App(
            settings.monitor_app_id,
            broker=preflight.broker_url(settings),
            broker_credentials=preflight.broker_credentials(settings),
            store="memory://",
            autodiscover=False,
            datadir=str(settings.monitor_data_dir),
            topic_allow_declare=True,  # the changelogs exist already (preflight); declaring them is a no-op
            topic_disable_leader=True,  # no timer runs on_leader: no `__assignor-__leader` topic
            topic_replication_factor=settings.topic_replication_factor,
            table_standby_replicas=0,
            consumer_auto_offset_reset="earliest",
            broker_session_timeout=10.0,
            broker_heartbeat_interval=3.0,
            producer_compression_type="zstd",
            producer_max_request_size=preflight.MAX_RECORD_BYTES,
            web_enabled=True,
            web_port=settings.monitor_web_port,
            web_bind=settings.monitor_web_bind,
            web_host=settings.monitor_web_bind if settings.monitor_web_bind != "0.0.0.0" else "localhost",
        )
        channels_topic = self._raw_topic(settings.topic_channels)
        status_topic = self._raw_topic(settings.topic_status)
        self.channels = self.app.Table(
            preflight.TABLE_CHANNELS, partitions=partitions.channels, key_type=str, value_type=bytes
        )
        self.heartbeats = self.app.Table(
            preflight.TABLE_HEARTBEATS,
            partitions=partitions.status,
            key_type=str,
            value_type=bytes,
            extra_topic_configs=preflight.changelog_configs()[preflight.TABLE_HEARTBEATS],
        )
        self.app.agent(channels_topic, name="fold-channels")(self._fold_channels)
        self.app.agent(status_topic, name="fold-heartbeats")(self._fold_heartbeats)
        self.app.timer(settings.monitor_interval_s, name="heartbeats")(self._tick)

        async def report_view(view: Any, request: Any) -> Any:
            return await self._report_view(request)

        self.app.page("/coverage")(report_view)

    def _raw_topic(self, name: str) -> Any:
        """A source topic as raw bytes (decoded by chatlog's own msgspec code), tombstones delivered."""
        return self.app.topic(
            name,
            key_type=bytes,
            value_type=bytes,
            key_serializer="raw",
            value_serializer="raw",
            allow_empty=True,
        )

    # -- folding the topics into the tables ---------------------------------------------------------
    async def _fold_channels(self, stream: Any) -> None:
        async for event in stream.events():
            message = event.message
            try:
                self._fold_channel(event.key, event.value, message.partition)
            except Exception as exc:  # an agent that raises stops consuming: count, log, go on
                self._bad("channels", f"{type(exc).__name__}: {exc}")
            self._processed[(message.topic, message.partition)] = message.offset

    def _fold_channel(self, key: bytes | None, value: bytes | None, partition: int) -> None:
        if not key:
            self._bad("channels", "record without a key")
            return
        login = key.decode("utf-8", "replace")
        if value is None:
            if login in self.channels:
                del self.channels[login]
        else:
            record = decode_record(login, value)
            self.channels[login] = _encode_entry(_Entry(partition, record.added_at))
        self.folded["channels"] += 1
        self.metrics.records.labels("channels", "folded").inc()

    async def _fold_heartbeats(self, stream: Any) -> None:
        async for event in stream.events():
            message = event.message
            try:
                self._fold_heartbeat(event.key, event.value)
            except Exception as exc:
                self._bad("heartbeats", f"{type(exc).__name__}: {exc}")
            self._processed[(message.topic, message.partition)] = message.offset

    def _fold_heartbeat(self, key: bytes | None, value: bytes | None) -> None:
        if not key:
            self._bad("heartbeats", "record without a key")
            return
        worker = key.decode("utf-8", "replace")
        if value is not None and decode_heartbeat(value) is None:
            # the latest state of this worker is unknown: forget the previous heartbeat rather than trust it
            self._bad("heartbeats", f"heartbeat of {worker!r} is not valid JSON of the heartbeat format")
            value = None
        if value is None:
            if worker in self.heartbeats:
                del self.heartbeats[worker]
        else:
            self.heartbeats[worker] = value
        self.folded["heartbeats"] += 1
        self.metrics.records.labels("heartbeats", "folded").inc()

    def _bad(self, topic: str, reason: str) -> None:
        self.metrics.records.labels(topic, "bad").inc()
        now = time.monotonic()
        if now - self._bad_logged_at >= _BAD_LOG_INTERVAL_S:
            self._bad_logged_at = now
            log.warning("skipped a bad record on %s: %s (logged at most once a minute)", topic, reason)

    # -- evaluation ---------------------------------------------------------------------------------
    def lag(self) -> int | None:
        """Offsets still to fold before the first report (None: the tables are not recovered yet)."""
        if self._targets is None:
            return None
        done = self._processed
        return sum(max(0, end - done.get(tp, -1) - 1) for tp, end in self._targets.items())

    async def _check_ready(self) -> bool:
        """Tables recovered, and the agents caught up with the source topics as they were at that moment."""
        if self._ready:
            return True
        if self._targets is None:
            if not self.app.tables.recovery.completed.is_set():
                return False
            self._targets = await asyncio.to_thread(preflight.catch_up_targets, self.settings)
            self._catch_up_deadline = time.monotonic() + self.settings.monitor_catch_up_s
            log.info("tables recovered; catching up with %d source partition(s)", len(self._targets))
        lag = self.lag()
        if lag == 0:
            self._ready = True
            log.info("caught up (%s records folded): reporting", self.folded)
        elif time.monotonic() > self._catch_up_deadline:
            self._ready = True
            log.warning(
                "still %s offsets behind after %.0fs; reporting anyway", lag, self.settings.monitor_catch_up_s
            )
        return self._ready

    async def _tick(self) -> None:
        if not await self._check_ready():
            self.metrics.ready.set(0)
            return
        started = time.perf_counter()
        channel_rows = list(self.channels.items())
        heartbeat_values = list(self.heartbeats.values())
        try:
            report = await asyncio.to_thread(self.evaluate, channel_rows, heartbeat_values)
        except Exception:
            log.exception("evaluating the heartbeats failed")
            return
        self.metrics.evaluation_seconds.set(time.perf_counter() - started)
        self.metrics.export(report)
        self.metrics.ready.set(1)
        if (self._report is None or self._report.ok) != report.ok:
            uncovered = {r.replica: len(r.uncovered) for r in report.replicas if r.uncovered}
            log.info("heartbeats %s: uncovered per replica %s", "ok" if report.ok else "LOST", uncovered)
        self._report = report

    def evaluate(
        self, channel_rows: list[tuple[str, bytes]], heartbeat_values: list[bytes]
    ) -> HeartbeatReport:
        """Decode the table contents and run the pure evaluation (called in a thread)."""
        channels = {}
        for login, raw in channel_rows:
            try:
                entry = _decode_entry(raw)
            except msgspec.DecodeError:
                continue
            channels[login] = Channel(login, entry.bucket, entry.added_at)
        beats: list[Heartbeat] = [hb for v in heartbeat_values if (hb := decode_heartbeat(v)) is not None]
        report = evaluate(
            channels,
            beats,
            now_ms=self._clock(),
            stale_s=self.settings.monitor_stale_s,
            forget_s=self.settings.monitor_forget_s,
            replicas=range(self.settings.monitor_replicas),
            previous_since=self._since,
        )
        self._since = report.since
        return report

    # -- web ----------------------------------------------------------------------------------------
    async def _report_view(self, request: Any) -> Any:
        web = self.app.web
        limit = self.settings.monitor_report_limit
        text = request.query.get("limit")
        if text is not None:
            if not text.isdigit():
                return web.json({"error": "limit must be a non-negative integer"}, status=400)
            limit = int(text)
        report = self._report
        if report is None:
            return web.json({"ready": False, "lag": self.lag(), "folded": self.folded}, status=503)
        body = report_json(report, limit=limit, ready=True)
        body["folded"] = self.folded
        body["age_s"] = round(max(0, self._clock() - report.now_ms) / 1000, 3)
        return web.json(body)
