"""One ingester process: consumer-group membership -> wanted channels -> IRC pool -> Kafka.

Threads: the membership consumer polls in its own thread and hands snapshots to the asyncio loop
(``call_soon_threadsafe``); everything else (the IRC pool, parsing and producing, heartbeats) runs on
the loop. The metrics endpoint has its own small HTTP thread.

Coverage: every change of the confirmed set goes to ``chatlog.coverage`` as per-channel events
(ingest/coverage.py), and the confirmations of the other workers of the replica group, read from
there, release the channels of revoked buckets (hand-off by confirmation, ingest/membership.py).

Consent: the wanted channels go to the pool minus the opted-out ones, and the producer drops opted-out
users' events (ingest/consent.py); an opt-out or a lift read by the registry's thread is applied on the
loop at once (a part or a rejoin within about a second of the record, on every replica).

Wiring: :class:`Worker` takes its collaborators as arguments (tests drive it with doubles);
:func:`build_worker` makes the real ones.

Shutdown on SIGTERM/SIGINT: leave the group first (the buckets move to the other members at once),
keep logging each channel until its new owner confirms it (at most ``ingest_shutdown_drain_s``), then
part the rest, flush the producer, send a ``stopped`` heartbeat and a tombstone, and exit 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import time
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from typing import Any, Protocol

from prometheus_client import REGISTRY, CollectorRegistry

from core.errors import ChatlogError
from core.irc_parse import parse_line
from core.kafka_probe import PROBE_TIMEOUT_S, probe
from core.times import now_ms
from ingest import status
from ingest.consent import OptOutGate
from ingest.coverage import ConfirmationWatch, CoverageTracker
from ingest.irc.pool import IrcPool
from ingest.irc.stats import PoolStats
from ingest.membership import GroupAssignments, Membership, Snapshot, consumer_config, loader_config
from ingest.metrics import FastHistogram, IngestCollector, MetricsServer, Sample, counter_samples
from ingest.producer import IngestProducer, with_client_id_tags
from ingest.registry import QUIET
from ingest.settings import IngestSettings
from schemas.coverage import CoverageEvent
from schemas.coverage import encode as encode_coverage

log = logging.getLogger(__name__)

_PRODUCER_POLL_S = 1.0
"""Delivery reports are served by every batch of lines too; this is for quiet times, and for the queue's
fill, which pauses IRC reads at 80 % (a second of reading is far below the 20 % left)."""
_READY_CACHE_S = 2.0
_COVERAGE_S = 0.25


class Pool(Protocol):
    """What the worker asks of the IRC pool (ingest/irc/pool.py)."""

    membership_version: int
    membership_moved: asyncio.Event

    @property
    def wanted(self) -> AbstractSet[str]: ...
    @property
    def confirmed(self) -> AbstractSet[str]: ...
    def set_wanted(self, channels: AbstractSet[str]) -> None: ...
    async def run(self) -> None: ...
    async def close(self, *, part: bool = True) -> None: ...
    def pause_reading(self) -> None: ...
    def resume_reading(self) -> None: ...
    def stats(self) -> PoolStats: ...
    @property
    def over_capacity(self) -> AbstractSet[str]: ...


class Watch(Protocol):
    """What the worker asks of the confirmation watch (ingest/coverage.py)."""

    @property
    def failure(self) -> BaseException | None: ...
    def start(self, timeout: float = ...) -> None: ...
    def close(self, timeout: float = ...) -> None: ...


class MetricsEndpoint(Protocol):
    """The running /metrics and /ready endpoint (ingest/metrics.py)."""

    port: int

    def stop(self) -> None: ...


ServeMetrics = Callable[[CollectorRegistry, Callable[[], bool]], MetricsEndpoint]
"""Starts serving ``registry`` on /metrics and the readiness callback on /ready."""


class Worker:
    """Runs membership, the IRC pool, the producer, heartbeats and metrics of one ingester together.

    Every collaborator comes in as an argument (:func:`build_worker` makes the real ones): the producer,
    the pool whose lines go to that producer, the group membership, the watch that feeds confirmations
    to the membership, the coverage tracker (its replica, worker id and session, the start time in ms,
    are this worker's), ``nothing_assigned(member_id)`` (readiness without buckets) and
    ``serve_metrics``.
    """

    metrics_port: int | None = None
    """Where /metrics and /ready listen, once started (sent in the heartbeats)."""

    def __init__(
        self,
        settings: IngestSettings,
        *,
        producer: IngestProducer,
        pool: Pool,
        membership: Membership,
        watch: Watch,
        coverage: CoverageTracker,
        nothing_assigned: Callable[[str], bool],
        serve_metrics: ServeMetrics,
        consent: OptOutGate | None = None,
    ) -> None:
        self.settings = settings
        self.worker_id = coverage.worker
        self.replica = coverage.replica
        self.started_at = coverage.session
        self.host = socket.gethostname()
        self.producer = producer
        self.pool = pool
        self.membership = membership
        self.coverage = coverage
        self.watch = watch
        self._nothing_assigned = nothing_assigned
        self._serve_metrics = serve_metrics
        self.consent = consent
        if consent is not None:
            consent.notify = self._consent_notify
            consent.channels_changed = self._consent_channels_changed
        self.snapshot = Snapshot(version=0, owned=(), loading=(), overlap=(), wanted=frozenset())
        self._loop: asyncio.AbstractEventLoop | None = None
        self._leaving = False
        self._rate_base: tuple[float, dict[str, int]] = (time.monotonic(), {})
        self._ready_cache: tuple[float, bool] = (0.0, False)

    # -- membership -> pool ------------------------------------------------------------------------
    def _published(self, snap: Snapshot) -> None:
        """Called on the membership thread: hand the snapshot to the loop."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop is closing
                loop.call_soon_threadsafe(self._apply, snap)

    def _apply(self, snap: Snapshot) -> None:
        if self._leaving or snap.version < self.snapshot.version:
            return
        changed = snap.wanted != self.snapshot.wanted
        self.snapshot = snap
        if changed:
            self.pool.set_wanted(self._allowed(snap.wanted))

    def _allowed(self, wanted: AbstractSet[str]) -> AbstractSet[str]:
        """The wanted channels minus those that opted out (ingest/consent.py)."""
        return wanted if self.consent is None else self.consent.allowed(wanted)

    # -- opt-outs -> pool ----------------------------------------------------------------------------
    def _consent_notify(self) -> None:
        """Called on the registry's thread when an opt-out or a lift arrived: refresh on the loop."""
        loop = self._loop
        if loop is not None and not loop.is_closed() and self.consent is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closing
                loop.call_soon_threadsafe(self.consent.refresh)

    def _consent_channels_changed(self) -> None:
        """The opted-out channels changed, or a channel's room id was learned: part (or rejoin) at once.
        Deferred to the loop's next turn: it is called from inside the pool's line delivery, and once
        from the thread that starts the gate."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop is closing
                loop.call_soon_threadsafe(self._reapply_wanted)

    def _reapply_wanted(self) -> None:
        if self._leaving:  # the hand-off loop sets the allowed channels every 0.2 s
            return
        allowed = self._allowed(self.snapshot.wanted)
        parted = self.pool.wanted - allowed
        self.pool.set_wanted(allowed)
        if parted and self.consent is not None:
            out = self.consent.opted_out_channels(parted)
            if out:
                log.info("parting %d opted-out channel(s): %s", len(out), ", ".join(out[:10]))

    # -- the process -------------------------------------------------------------------------------
    async def run(self, stop: asyncio.Event | None = None) -> int:
        """Run until ``stop`` is set (by default: SIGTERM or SIGINT; exit code 0) or a fatal failure
        (exit code 1)."""
        self._loop = loop = asyncio.get_running_loop()
        if stop is None:
            stop = asyncio.Event()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, stop.set)
        metrics = self._start_metrics()
        if self.consent is not None:  # every opt-out known before the first JOIN and the first line
            try:
                await loop.run_in_executor(None, self.consent.start, self.settings.optout_ready_timeout_s)
            except BaseException:
                metrics.stop()
                raise
        await loop.run_in_executor(None, self.watch.start)  # at the topic's end before any revocation
        self.membership.start(self._published)
        log.info(
            "ingester %s (replica %d, group %s) started; metrics on port %d",
            self.worker_id, self.replica, self.settings.group_id, metrics.port,
        )  # fmt: skip
        pool_task = asyncio.create_task(self.pool.run(), name="irc-pool")
        helpers = [
            asyncio.create_task(self._heartbeats(), name="heartbeats"),
            asyncio.create_task(self._poll_producer(), name="producer-poll"),
            asyncio.create_task(self._publish_coverage(), name="coverage"),
        ]
        stop_task = asyncio.create_task(stop.wait(), name="stop")
        watch_task = asyncio.create_task(self._watch(), name="watch")
        watched: set[asyncio.Task[Any]] = {pool_task, stop_task, watch_task, *helpers}
        done, _ = await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
        stop_task.cancel()
        watch_task.cancel()
        code = 0
        if stop_task not in done:
            code = 1
            for failed in done & {pool_task, *helpers}:
                log.error("%s stopped: %r", failed.get_name(), failed.exception() or "without an error")
        else:
            log.info(
                "signal received: leaving the group; each channel is kept until its new owner confirms it "
                "(at most %.1fs)",
                self.settings.ingest_shutdown_drain_s,
            )
        try:
            await self._shutdown(graceful=code == 0, pool_task=pool_task, helpers=helpers)
        finally:
            metrics.stop()
        return code

    async def _shutdown(
        self, *, graceful: bool, pool_task: asyncio.Task[None], helpers: list[asyncio.Task[None]]
    ) -> None:
        self._leaving = True  # the wanted set stays as it is while we drain
        await asyncio.get_running_loop().run_in_executor(None, self.membership.close)
        if graceful and not pool_task.done():
            await self._hand_off_everything(self.settings.ingest_shutdown_drain_s)
        for task in helpers:
            task.cancel()
        await asyncio.gather(*helpers, return_exceptions=True)
        try:
            await asyncio.wait_for(self.pool.close(part=graceful), timeout=30)
        except (TimeoutError, OSError) as exc:
            log.warning("closing the IRC pool: %s", exc)
        if not pool_task.done():
            pool_task.cancel()
        await asyncio.gather(pool_task, return_exceptions=True)
        self._coverage_events(self.coverage.stop_all(now_ms(), "stopped"))
        self.watch.close()
        if self.consent is not None:
            await asyncio.get_running_loop().run_in_executor(None, self.consent.close)
        left = self.producer.flush(60)
        if left:
            log.error("%d record(s) were not acknowledged by Kafka at exit", left)
        self._send_heartbeat(status.STOPPED)
        self.producer.produce_status(status.status_key(self.replica, self.worker_id), None)
        self.producer.flush(10)
        counts = self.producer.counts
        log.info("stopped: %d lines, %d events, %d malformed", counts.lines, counts.events, counts.malformed)

    async def _hand_off_everything(self, limit_s: float) -> None:
        """After leaving the group: part each channel once its new owner confirms it, until none is
        left, none left is joined here (not logged here: nothing to keep), or ``limit_s`` passes (the rest
        is parted unconfirmed: a gap risk, logged)."""
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            snap = self.membership.snapshot()
            self.pool.set_wanted(self._allowed(snap.wanted))
            if not snap.wanted:
                log.info("every channel was handed off to a confirmed new owner")
                return
            if not snap.wanted & self.pool.confirmed:  # waiting keeps nothing logged (no IRC connection)
                log.info(
                    "shutdown: none of the %d channel(s) left is joined here: nothing to keep logging",
                    len(snap.wanted),
                )
                return
            await asyncio.sleep(0.2)
        left = self.membership.snapshot().wanted
        log.warning(
            "shutdown: %d channel(s) not confirmed by a new owner within %.0fs; parting them (gap risk)",
            len(left), limit_s,
        )  # fmt: skip

    # -- coverage events ---------------------------------------------------------------------------
    async def _publish_coverage(self) -> None:
        """The coverage events of each change of what is confirmed, within :data:`_COVERAGE_S` of the echo
        that changed it (the echoes of that time together), and every covered channel announced again
        each ``ingest_coverage_refresh_s``. Between them nothing wakes it: an idle ingester's loop sleeps."""
        refresh_s = self.settings.ingest_coverage_refresh_s
        refreshed = time.monotonic()
        moved = self.pool.membership_moved
        moved.set()  # the first look comes at once
        seen = -1
        while True:
            left = refreshed + refresh_s - time.monotonic()
            if left > 0:  # asyncio.timeout, not wait_for: 3.11's wait_for can swallow a cancellation
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(left):
                        await moved.wait()
            await asyncio.sleep(_COVERAGE_S)
            moved.clear()
            now = now_ms()
            if self.pool.membership_version != seen:  # confirmed can only differ after an echo
                seen = self.pool.membership_version
                handed_off = self.membership.take_handed_off()
                self._coverage_events(
                    self.coverage.update(self.pool.confirmed, self.pool.wanted, now, handed_off=handed_off)
                )
            if time.monotonic() - refreshed >= refresh_s:
                refreshed = time.monotonic()
                self._coverage_events(self.coverage.refresh(now))

    def _coverage_events(self, events: Iterable[CoverageEvent]) -> None:
        for ev in events:
            self.producer.produce_coverage(ev.key, encode_coverage(ev))

    async def _watch(self) -> None:
        """Ends (-> exit 1) when the membership thread dies or the producer hits a fatal error."""
        while True:
            await asyncio.sleep(0.5)
            if not self.membership.alive:
                log.error("the membership consumer stopped: %s", self.membership.failure)
                return
            if self.watch.failure is not None:
                log.error("the coverage watch stopped: %s", self.watch.failure)
                return
            if self.producer.fatal:
                log.error("the Kafka producer failed: %s", self.producer.fatal)
                return

    async def _poll_producer(self) -> None:
        """Serve delivery reports; pause the IRC sockets while the producer queue is nearly full."""
        high = self.settings.ingest_queue_max_messages * 0.8
        low = self.settings.ingest_queue_max_messages * 0.5
        paused = False
        while True:
            self.producer.poll()
            queued = self.producer.queued()
            if not paused and queued > high:
                paused = True
                self.pool.pause_reading()
                log.warning("producer queue at %d records: pausing IRC reads", queued)
            elif paused and queued < low:
                paused = False
                self.pool.resume_reading()
                log.info("producer queue at %d records: resuming IRC reads", queued)
            await asyncio.sleep(_PRODUCER_POLL_S)

    # -- heartbeats ------------------------------------------------------------------------------
    async def _heartbeats(self) -> None:
        while True:
            self._send_heartbeat(status.RUNNING)
            self._coverage_events([self.coverage.alive(now_ms())])
            await asyncio.sleep(self.settings.ingest_heartbeat_s)

    def counts(self) -> dict[str, int]:
        c = self.producer.counts
        m = self.membership.stats
        p = self.pool.stats()
        return {
            "lines": c.lines,
            "events": c.events,
            "not_chat": c.not_chat,
            "malformed": c.malformed,
            "delivered": c.delivered,
            "delivery_errors": c.delivery_errors,
            "retries": c.retries,
            "dead_lettered": c.dead_lettered,
            "queue_full_waits": c.queue_full_waits,
            "rebalances": m.rebalances,
            "buckets_lost": m.lost,
            "irc_connections": p.connections,
            "irc_reconnects": p.reconnects,
            "irc_joins_sent": p.joins_sent,
            "irc_join_timeouts": p.join_timeouts,
            "irc_pending_joins": p.pending_joins,
            "irc_over_capacity": p.over_capacity,
            "irc_channel_moves": p.moves,
        }

    def _rates(self, counts: dict[str, int]) -> dict[str, float]:
        now = time.monotonic()
        then, base = self._rate_base
        self._rate_base = (now, counts)
        elapsed = max(now - then, 1e-3)
        out = {
            k: round((counts[k] - base.get(k, 0)) / elapsed, 1)
            for k in ("lines", "events", "malformed", "delivery_errors")
        }
        out["irc_msgs_per_s"] = self.pool.stats().msgs_per_s  # decayed, per channel (placement)
        return out

    def _send_heartbeat(self, state: str) -> None:
        snap = self.snapshot
        counts = self.counts()
        hb = status.Heartbeat(
            worker_id=self.worker_id,
            replica=self.replica,
            host=self.host,
            pid=os.getpid(),
            started_at=self.started_at,
            sent_at=now_ms(),
            state=state,
            buckets=list(snap.owned),
            overlap_buckets=list(snap.overlap),
            loading_buckets=list(snap.loading),
            wanted=len(snap.wanted),
            confirmed=sorted(self.pool.confirmed),
            counts=counts,
            rates=self._rates(counts),
            metrics_port=self.metrics_port,
            max_channels=self.settings.ingest_max_channels,
            over_capacity=sorted(self.pool.over_capacity),
        )
        self.producer.produce_status(
            status.status_key(self.replica, self.worker_id), status.encode_heartbeat(hb)
        )

    # -- metrics and readiness ---------------------------------------------------------------------
    def _start_metrics(self) -> MetricsEndpoint:
        registry = CollectorRegistry(auto_describe=False)
        labels = {"worker": self.worker_id, "replica": str(self.replica)}
        registry.register(IngestCollector(labels, self._samples, self._histograms))
        registry.register(REGISTRY)  # module-level: the pool's metrics (ingest/irc/metrics.py), process
        server = self._serve_metrics(registry, self.ready)
        self.metrics_port = server.port
        return server

    def _samples(self) -> Iterable[Sample]:
        snap = self.membership.snapshot()
        handoff, timed_out = self.membership.handoff_state()
        p = "chatlog_ingest_"
        return [
            *counter_samples(self.producer.counts),
            *counter_samples(self.membership.stats),
            Sample(p + "buckets_owned", "Buckets (channel partitions) owned.", len(snap.owned), "gauge"),
            Sample(p + "buckets_loading", "Owned buckets still being read.", len(snap.loading), "gauge"),
            Sample(p + "buckets_overlap", "Revoked buckets still logged.", len(snap.overlap), "gauge"),
            Sample(p + "handoff_channels", "Revoked channels logged until confirmed.", handoff, "gauge"),
            Sample(p + "handoff_timeouts", "Channels parted unconfirmed (gap risk).", timed_out),
            Sample(p + "channels_wanted", "Channels this ingester should be in.", len(snap.wanted), "gauge"),
            Sample(p + "producer_queue", "Records waiting in the producer.", self.producer.queued(), "gauge"),
            *self._consent_samples(),
        ]  # fmt: skip

    def _consent_samples(self) -> list[Sample]:
        gate = self.consent
        if gate is None:
            return []
        p = "chatlog_ingest_optout_"
        return [
            Sample(p + "dropped", "Events of opted-out users/channels dropped before Kafka.", gate.dropped),
            Sample(p + "registered", "Self-service opt-outs registered from chat commands.", gate.registered),
            Sample(p + "publish_errors", "Self-service opt-outs not written.", gate.publish_errors),
            Sample(p + "records_read", "Opt-out topic records read.", gate.registry.records_read),
        ]  # fmt: skip

    def _histograms(self) -> Iterable[tuple[str, str, FastHistogram]]:
        return [
            (
                "chatlog_ingest_produce_latency_seconds",
                "From produce() to the delivery report.",
                self.producer.latency,
            )
        ]

    def ready(self) -> bool:
        """Owns buckets and has read them all, or the group has no bucket for this member."""
        snap = self.membership.snapshot()
        if snap.owned:
            return not snap.loading
        now = time.monotonic()
        at, answer = self._ready_cache
        if now - at < _READY_CACHE_S:
            return answer
        member = self.membership.member_id
        answer = self._nothing_assigned(member) if member else False
        self._ready_cache = (now, answer)
        return answer


def check_topics(settings: IngestSettings, timeout: float = PROBE_TIMEOUT_S) -> None:
    """Fail in one line when Kafka is unreachable or a topic is missing (instead of waiting forever)."""
    topics = probe(settings, timeout).topics
    missing = [t for t in (*settings.topic_names(), settings.topic_optout) if t not in topics]
    if missing:
        raise ChatlogError(f"missing Kafka topic(s) {', '.join(missing)}; `chatlog stack up` creates them")


def build_worker(settings: IngestSettings) -> Worker:
    """The production wiring: a librdkafka producer, the IRC pool feeding it, the group membership, the
    coverage watch feeding confirmations to the membership, and the HTTP metrics endpoint."""
    from consent.publish import OptOutPublisher
    from consent.registry import OptOutRegistry

    worker_id = settings.worker_id
    gate = OptOutGate(
        OptOutRegistry(settings, settings.topic_optout),
        command_word=settings.optout_command,
        aliases=settings.optout_aliases(),
        publisher=OptOutPublisher(settings),
    )
    parse = with_client_id_tags(parse_line) if settings.ingest_client_id_tags else parse_line
    producer = IngestProducer(settings, worker_id, parse=parse, gate=gate)
    membership = Membership(
        consumer_config(
            settings.kafka_client_config(),
            group_id=settings.group_id,
            protocol=settings.ingest_group_protocol,
            session_timeout_ms=settings.ingest_session_timeout_ms,
            client_id=f"chatlog-ingest-{worker_id}",
        ),
        settings.topic_channels,
        loader_conf=loader_config(settings, client_id=f"chatlog-ingest-{worker_id}"),
        handoff_timeout_s=settings.ingest_handoff_timeout_s,
    )
    watch = ConfirmationWatch(
        {**settings.kafka_client_config(), **QUIET},
        settings.topic_coverage,
        replica=settings.ingest_replica,
        worker=worker_id,
        on_confirmed=membership.confirm,
    )

    def serve_metrics(registry: CollectorRegistry, ready: Callable[[], bool]) -> MetricsEndpoint:
        server = MetricsServer(
            registry,
            ready,
            settings.metrics_host,
            settings.metrics_port,
            fallback=not settings.metrics_port_chosen,  # the default port: several ingesters per host
        )
        server.start()
        return server

    return Worker(
        settings,
        producer=producer,
        pool=IrcPool(settings, producer.on_lines, worker_id=worker_id),
        membership=membership,
        watch=watch,
        coverage=CoverageTracker(settings.ingest_replica, worker_id, now_ms()),
        nothing_assigned=GroupAssignments(settings.kafka_client_config(), settings.group_id).nothing_for,
        serve_metrics=serve_metrics,
        consent=gate,
    )


def run(settings: IngestSettings) -> int:
    """``chatlog ingest``: run one ingester until a signal; returns the exit code."""
    check_topics(settings)
    return asyncio.run(build_worker(settings).run())
