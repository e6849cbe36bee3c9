"""A run of the whole pipeline on the local stack, with faults injected on a schedule, and its report.

Simulated chatters send real IRC traffic; replica groups of ingesters log it into Kafka; the Spark sink
writes it into Cassandra. Faults (kill -9 an ingester, start a new one, kill the sink, restart a
service...) happen at set points of the sending time. The run drains, then checks every message that
was sent against the rows in Cassandra. ``chatlog demo`` and the chaos suite are such runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table

from core.errors import ChatlogError
from core.settings import StackSettings
from core.times import now_ms
from lab import extras
from lab.demo import process_cpu, progress
from lab.demo.e2e import ProbeStats, ReadProbe, sample_channels
from lab.demo.faults import Fault, Outage, at, kill_ingester, start_ingester
from lab.demo.impact import fault_impact, rate_window_s
from lab.demo.look import busiest, look_lines, program_name, serve_address
from lab.demo.machine import busy_s, cpu_us_per_msg
from lab.demo.observer import NamesObserver, worker_of
from lab.demo.plot import plot_run
from lab.demo.report import (
    CoverageSample,
    RunReport,
    Spread,
    batch_summary,
    binned_quantiles,
    covered_at,
    late_copies,
    max_gap_s,
    recovery_s,
    sink_batches,
    sink_log_totals,
)
from lab.demo.supervisor import Child, Supervisor
from lab.demo.verify import TopicScan, TopicSize, scan_topic, sink_wrote_all, stored_tokens
from lab.results import RESULTS_DIR, write_json
from lab.simulator import SentMessage, read_sent
from lab.stack.cluster import Layout, failover_env

NODE_PARTITIONS = 2
"""Partitions of the messages topic of a run on one node (:attr:`RunConfig.messages_partitions`)."""


@dataclass
class RunConfig:
    name: str = "demo"
    channels: int = 500
    rate: float = 1000.0
    duration: float = 120.0
    workers: dict[str, int] = field(default_factory=lambda: {"r0a": 0, "r0b": 0, "r1a": 1, "r1b": 1})
    faults: list[Fault] = field(default_factory=list)
    drain_timeout_s: float = 120.0
    burst: tuple[float, float, float] | None = None  # (at fraction, factor, seconds)
    schedule: list[tuple[float, float]] | None = None
    """Steps of (rate, seconds) instead of one rate for ``duration`` (``chatlog bench capacity``)."""
    at_rest_s: float = 0.0
    """Seconds the pipeline is measured at rest (joined, warmed, no traffic) before traffic starts."""
    cpu_marks: list[float] = field(default_factory=list)
    """Seconds after traffic starts at which every process's CPU time is taken (:attr:`Run.marks`)."""
    results_dir: Path | None = RESULTS_DIR
    sim_connections: int = 16
    sim_seed: int = 0
    e2e_probe: bool = True  # poll a sample of channels' rows: IRC send -> row readable
    sink_metrics_port: int = progress.SINK_METRICS_PORT
    """Where the run reads the sink's counters (the cluster's runs have their own: a sink of the single
    stack's runs may hold the default one)."""
    client_env: dict[str, str] = field(default_factory=dict)
    """More ``CHATLOG_*`` variables of the run's processes, the ingesters and the sink (a cluster's:
    :func:`on_cluster`)."""
    spark_master: str = "local[2]"
    """Where the sink runs: Spark in its own JVM (``local[2]``) or a cluster's master (``spark://...``),
    with its checkpoint under the run's directory (on the state directory every executor here reaches)."""
    messages_partitions: int = NODE_PARTITIONS
    """Partitions of the run's messages topic: one per core of the sink's ``local[2]`` (a cluster's runs:
    4, spread over its brokers). Each producer sends a request per partition it has records for, every
    linger: at 1,000 msg/s, 2 partitions instead of 4 took the pipeline from 325 to 302 µs per stored message
    (two A/B pairs of ``chatlog bench capacity --rates 1000``, the JIT's time aside), Kafka from 80 to 65."""


WARM_UP_ROUNDS = (1, 5000)
"""Events per round of the sink's warm-up (:meth:`Run.warm_up_sink`): each round is one micro-batch at
least (a trigger's wait, 10 s by default), so two: the first pays for the workers and sessions, the second,
the size of an ordinary batch, for the JVM's compilation."""


def demo_config(channels: int = 500, rate: float = 1000.0, duration: float = 120.0) -> RunConfig:
    """The demo: two replica groups of two; r0b is killed at 35 % of the run, r0c starts at 65 %."""
    return RunConfig(
        channels=channels,
        rate=rate,
        duration=duration,
        faults=[at(0.35, kill_ingester("r0b")), at(0.65, start_ingester("r0c", 0))],
    )


def on_cluster(config: RunConfig, layout: Layout) -> RunConfig:
    """``config`` for a run on the multi-node stack of ``layout`` (with ``layout.client_settings()``): the
    sink on its Spark master, its counters on the cluster's own metrics port, the ingesters' and the sink's
    Kafka clients turning from a dead or hung leader to the new one within seconds (the cluster's
    :func:`~lab.stack.cluster.failover_env`)."""
    return replace(
        config,
        spark_master=layout.spark_master.url,
        sink_metrics_port=layout.settings.cluster_sink_metrics_port,
        client_env={**config.client_env, **failover_env()},
        messages_partitions=CLUSTER_PARTITIONS,
    )


CLUSTER_PARTITIONS = 4
"""Partitions of the messages topic of a run on the multi-node stack: more than its 3 brokers, so each leads
some and a broker's fault stops a part of them."""


def run_settings(
    settings: StackSettings, name: str, run_id: str, partitions: int = NODE_PARTITIONS
) -> StackSettings:
    """The settings of run ``run_id`` named ``name``: its own topics (the messages topic of ``partitions``)
    and its keyspace."""
    return settings.with_topics(
        f"{name}.{run_id}",
        cassandra_keyspace=f"chatlog_{name}".replace("-", "_"),
        channel_buckets=16,
        messages_partitions=partitions,
    )


def free_port() -> int:
    """A TCP port nothing listens on now (127.0.0.1)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def run_channels(run_id: str, count: int) -> list[str]:
    """The channels run ``run_id`` registers."""
    return [f"d{run_id}_{i}" for i in range(count)]


@dataclass
class Timeline:
    t: list[float] = field(default_factory=list)
    sent_rate: list[float] = field(default_factory=list)
    stored_rate: list[float] = field(default_factory=list)
    coverage: dict[int, list[float]] = field(default_factory=dict)
    samples: list[CoverageSample] = field(default_factory=list)
    e2e_t: list[float] = field(default_factory=list)  # middle of each 5 s bin of send times
    e2e_p50: list[float] = field(default_factory=list)
    e2e_p99: list[float] = field(default_factory=list)
    cpu: list[tuple[float, float]] = field(default_factory=list)  # (epoch s, the machine's busy CPU s)
    lag: list[tuple[float, int]] = field(
        default_factory=list
    )  # (s since t0, Kafka records the sink has not read)


@dataclass(frozen=True)
class _Watch:
    """What a run follows its traffic with: the simulator's process, the IRC observer (who is in which
    channel), the messages topic's size, and the live table (None without a console)."""

    sim: Child
    observer: NamesObserver
    topic_size: TopicSize
    live: Live | None


class Run:
    def __init__(self, settings: StackSettings, config: RunConfig, console: Console | None) -> None:
        self.config, self.console = config, console
        self.run_id = secrets.token_hex(3)
        self.run_dir = settings.state_dir / "runs" / f"{config.name}-{self.run_id}"
        self.settings = run_settings(settings, config.name, self.run_id, config.messages_partitions)
        self.channels = run_channels(self.run_id, config.channels)
        self.workers = dict(config.workers)
        self.replicas = sorted(set(self.workers.values()))
        self.timeline = Timeline(coverage={r: [] for r in self.replicas})
        self.events: dict[str, float] = {}
        self.killed: list[tuple[str, int, float]] = []
        self.outages: list[Outage] = []
        self.e2e_points: list[tuple[float, float]] = []
        """(send time s since t0, IRC send -> row readable s) of the probe's sample channels."""
        self.probe: ReadProbe | None = None
        self.processes_at_start: tuple[float, process_cpu.Snapshot] | None = None
        self.batches: list[tuple[float, float, int]] = []
        """The sink's micro-batches: (start s since t0, duration s, records), for the plot."""
        self.t0 = time.time()
        self.serve_port = free_port()
        self.write_points: list[tuple[float, float]] = []
        """(send time s since t0, send -> the sink's write of its block s) of every stored message."""
        self.lost_points: list[float] = []
        """Send times (s since t0) of the messages not stored."""
        self.sent_points: list[float] = []
        """Send times (s since t0) of every message sent."""
        self.marks: list[tuple[float, float, process_cpu.Snapshot]] = []
        """(seconds after traffic start, the machine's busy CPU s, every process's CPU) at each of
        ``config.cpu_marks``."""
        self.at_rest: dict[str, float] = {}
        """Cores each part used at rest (:meth:`measure_at_rest`); empty when not measured."""
        """Where the run's ``chatlog serve`` answers (the e2e probe reads over HTTP)."""
        self.look_channel = self.channels[0] if self.channels else ""
        """The channel the run ends by pointing at (the one with most lines sent, known once it reports)."""

    def env(self) -> dict[str, str]:
        s = self.settings
        return {
            "CHATLOG_KAFKA_BOOTSTRAP_SERVERS": s.kafka_bootstrap_servers,
            **s.topic_env(),
            "CHATLOG_CASSANDRA_HOSTS": s.cassandra_hosts,
            "CHATLOG_CASSANDRA_LOCAL_DC": s.cassandra_local_dc,
            "CHATLOG_CASSANDRA_KEYSPACE": s.cassandra_keyspace,
            "CHATLOG_IRC_PORT": str(s.irc_port),
            "CHATLOG_IRC_HOST": "127.0.0.1",
            "CHATLOG_IRC_FLAVOR": "ircv3",
            "CHATLOG_IRC_JOIN_RATE": "1000",
            "CHATLOG_METRICS_PORT": "0",
            "CHATLOG_INGEST_GROUP_PREFIX": f"{self.config.name}-{self.run_id}-ingest",
            # A run ends by stopping every ingester at once: no new owner will confirm their channels, so
            # the hand-off a SIGTERM waits for (45 s by default) would only hold the run's end until the
            # supervisor's SIGKILL 30 s later. Faults kill ingesters with -9; none is stopped gracefully.
            "CHATLOG_INGEST_SHUTDOWN_DRAIN_S": "0",
            "CHATLOG_SINK_CHECKPOINT": str(self.run_dir / "checkpoint"),
            "CHATLOG_SINK_METRICS_PORT": str(self.config.sink_metrics_port),
            "CHATLOG_SPARK_MASTER": self.config.spark_master,
            **self.config.client_env,
        }

    # --- phases ---------------------------------------------------------------------------------
    def prepare(self) -> None:
        from core.cql import connect
        from core.kafka_admin import ensure_topics
        from store.schema import apply_schema

        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.drop_earlier_topics()
        ensure_topics(self.settings)
        cluster, session = connect(self.settings, timeout=60)
        try:
            session.execute(f"DROP KEYSPACE IF EXISTS {self.settings.cassandra_keyspace}", timeout=120)
        finally:
            cluster.shutdown()
        apply_schema(self.settings)
        (self.run_dir / "channels.txt").write_text("\n".join(self.channels) + "\n")

    def drop_earlier_topics(self) -> None:
        """Delete the topics of earlier runs of this name (this run's are not made yet): their keyspace is
        the one this run drops, so they hold nothing a later run reads, and the broker carries every
        partition it keeps."""
        from core.kafka_admin import admin_client

        admin = admin_client(self.settings)
        earlier = [t for t in admin.list_topics(timeout=30).topics if t.startswith(f"{self.config.name}.")]
        for future in (admin.delete_topics(earlier, operation_timeout=60) if earlier else {}).values():
            future.result()

    def start_ingester(self, sup: Supervisor, worker: str, replica: int) -> None:
        self.workers[worker] = replica
        sup.start(worker, ["ingest", "--replica", str(replica), "--worker-id", worker])

    async def observe(self, observer: NamesObserver) -> CoverageSample:
        try:
            members = await observer.members(self.channels)
        except (OSError, TimeoutError, asyncio.IncompleteReadError):
            # The IRC server is down or restarting: nobody can be seen in any channel right now.
            with contextlib.suppress(OSError, TimeoutError, asyncio.IncompleteReadError):
                await observer.connect(timeout=5)
            return CoverageSample(time.time(), {r: frozenset() for r in self.replicas})
        per_replica: dict[int, set[str]] = {r: set() for r in self.replicas}
        workers = list(self.workers)
        for ch, nicks in members.items():
            for nick in nicks:
                w = worker_of(nick, workers)
                if w is not None:
                    per_replica[self.workers[w]].add(ch)
        return CoverageSample(time.time(), {r: frozenset(c) for r, c in per_replica.items()})

    def record(self, sample: CoverageSample, sent_rate: float, stored_rate: float) -> None:
        tl = self.timeline
        self.sample_cpu()
        tl.samples.append(sample)
        tl.t.append(sample.t - self.t0)
        tl.sent_rate.append(sent_rate)
        tl.stored_rate.append(stored_rate)
        for r in self.replicas:
            tl.coverage[r].append(len(sample.confirmed.get(r, frozenset())))

    def sample_cpu(self) -> None:
        """The machine's busy CPU seconds now (nothing without psutil, the bench extra)."""
        if extras.has("psutil"):
            self.timeline.cpu.append((time.time(), busy_s()))

    def process_snapshot(self) -> tuple[float, process_cpu.Snapshot] | None:
        """The machine's busy CPU seconds and every pipeline process's CPU time now (None without
        psutil, the bench extra)."""
        if not extras.has("psutil"):
            return None
        return busy_s(), process_cpu.snapshot(me_as="demo")

    def cpu_by_process(self, stored: int) -> dict[str, Any] | None:
        """CPU µs per stored message of each part of the pipeline (:data:`process_cpu.PIPELINE`) from
        traffic start until now (the drain is over), and ``other``: the rest of the machine's busy time
        (processes not of this run: another program's load)."""
        end = self.process_snapshot()
        if self.processes_at_start is None or end is None or stored <= 0:
            return None
        (busy0, before), (busy1, after) = self.processes_at_start, end
        per_msg = process_cpu.per_event(before, after, stored, process_cpu.PIPELINE)
        machine = (busy1 - busy0) * 1e6 / stored
        return {
            "us_per_msg": per_msg,
            "other_us_per_msg": round(machine - sum(per_msg.values()), 1),
            "machine_us_per_msg": round(machine, 1),
            "note": "from traffic start to the end of the drain, per message stored: CPU time of this "
            "run's processes (the demo's descendants and the stack's services) by part; a process that "
            "exited (the killed ingester) counts in its parent's part (the demo's); other = the whole "
            "machine's busy time minus them",
        }

    async def measure_at_rest(self, seconds: float) -> None:
        """The pipeline's CPU over ``seconds`` of rest (every channel joined, the sink warm, nothing sent),
        in cores by part: :attr:`at_rest`."""
        before = self.process_snapshot()
        await asyncio.sleep(seconds)
        after = self.process_snapshot()
        if before is None or after is None:
            return
        totals = process_cpu.spent(before[1], after[1])
        self.at_rest = {part: round(totals[part] / seconds, 4) for part in process_cpu.PIPELINE}
        self.at_rest["pipeline"] = round(sum(totals[p] for p in process_cpu.PIPELINE_PARTS) / seconds, 4)
        self.at_rest["machine"] = round((after[0] - before[0]) / seconds, 4)

    def mark(self, label: str) -> None:
        self.events[label] = time.time() - self.t0

    def table(self, phase: str, sample: CoverageSample | None, stats: progress.Stats) -> Table:
        table = Table(
            title=f"chatlog {self.config.name} {self.run_id} — {phase}", show_header=False, min_width=60
        )
        table.add_row("elapsed", f"{time.time() - self.t0:.0f} s")
        if sample is not None:
            for r in self.replicas:
                n = len(sample.confirmed.get(r, frozenset()))
                table.add_row(f"replica {r} confirmed", f"{n} / {len(self.channels)} channels")
        table.add_row("sent", f"{stats.sent} ({stats.sent_rate:.0f}/s)")
        table.add_row("stored (sink)", f"{stats.rows} ({stats.rows_rate:.0f}/s)")
        table.add_row("duplicates dropped (sink)", str(stats.duplicates))
        table.add_row("Kafka lag (records the sink has not read)", str(max(0, stats.produced - stats.read)))
        table.add_row("workers", ", ".join(f"{w} (r{r})" for w, r in self.workers.items()))
        for name, t in self.events.items():
            table.add_row(name, f"at {t:.0f} s")
        return table

    async def main(self, sup: Supervisor) -> RunReport:
        """The run, phase after phase: the pipeline started (:meth:`_start_pipeline`), every channel joined
        (:meth:`_join`), the pipeline warmed and traffic started (:meth:`_start_traffic`), sent with the
        faults at their times (:meth:`_send`) and drained (:meth:`_drain`); then its report. The live table
        shows it on the console; the probe, the table, the topic's size and the observer end with it."""
        self._start_pipeline(sup)
        observer = NamesObserver("127.0.0.1", self.settings.irc_port)
        await observer.connect()
        topic_size = TopicSize(self.settings, self.settings.topic_messages)
        stats = progress.Stats()
        sent_file = self.run_dir / "sent.ndjson"
        live = (
            Live(
                self.table("joining", None, stats),
                console=self.console,
                refresh_per_second=2,
                transient=False,
            )
            if self.console is not None
            else None
        )
        if live is not None:
            live.start()
        try:
            await self._join(sup, observer, live, stats)
            watch = _Watch(await self._start_traffic(sup, sent_file), observer, topic_size, live)
            stats = await self._send(sup, watch, stats)
            await self._drain(sup, watch, stats)
        finally:
            if self.probe is not None:
                await asyncio.to_thread(self.probe.stop)
            if live is not None:
                live.stop()
            topic_size.close()
            await observer.close()
        return self.report(sent_file, sup.children["sink"].log, sink_restarted=sup.starts["sink"] > 1)

    def _start_pipeline(self, sup: Supervisor) -> None:
        """The run's topics, keyspace and channels (:meth:`prepare`) registered, then the sink, ``chatlog
        serve`` for the e2e probe and the ingesters started."""
        self.prepare()
        reg = sup.start("channels-add", ["channels", "add", "--file", str(self.run_dir / "channels.txt")])
        if reg.proc.wait(timeout=120) != 0:
            raise ChatlogError(f"registering channels failed; see {reg.log}")
        sup.start("sink", ["sink"])
        if self.config.e2e_probe:
            sup.start(
                "serve", ["serve", "--host", "127.0.0.1", "--port", str(self.serve_port), "--workers", "1"]
            )
        for w, r in list(self.workers.items()):
            self.start_ingester(sup, w, r)

    def _show(self, live: Live | None, phase: str, sample: CoverageSample, stats: progress.Stats) -> None:
        """The live table at ``phase`` (when there is a console)."""
        if live is not None:
            live.update(self.table(phase, sample, stats))

    async def _join(
        self, sup: Supervisor, observer: NamesObserver, live: Live | None, stats: progress.Stats
    ) -> None:
        """Each second, who is in which channel, until every replica group has confirmed every channel and
        the sink has started; a :class:`ChatlogError` when a process exits or that takes over 120 s."""
        deadline = time.time() + 120
        while True:
            sample = await self.observe(observer)
            self.record(sample, 0.0, 0.0)
            self._show(live, "joining", sample, stats)
            sink_log = sup.children["sink"].log
            sink_up = sink_log.exists() and "sink started" in sink_log.read_text(errors="replace")
            if sink_up and all(len(sample.confirmed[r]) == len(self.channels) for r in self.replicas):
                return
            self._check_alive(sup)
            if time.time() > deadline:
                raise ChatlogError(
                    "the ingesters did not confirm every channel (or the sink did not start) within 120 s"
                )
            await asyncio.sleep(1.0)

    async def _start_traffic(self, sup: Supervisor, sent_file: Path) -> Child:
        """The sink warmed (:meth:`warm_up_sink`), the pipeline measured at rest (``at_rest_s``), the e2e
        probe started; then traffic starts (marked, the CPU taken): the simulator, which writes what it sent
        to ``sent_file``."""
        cfg = self.config
        await asyncio.to_thread(self.warm_up_sink)
        if cfg.at_rest_s > 0:  # before the probe: nothing asks the pipeline anything
            await self.measure_at_rest(cfg.at_rest_s)
        if cfg.e2e_probe:
            self.probe = ReadProbe(
                f"http://127.0.0.1:{self.serve_port}",
                sample_channels(self.channels, cfg.sim_seed),
                sent_file,
            )
            await asyncio.to_thread(self.probe.start)
        self.mark("traffic starts")
        self.sample_cpu()
        self.processes_at_start = self.process_snapshot()
        return sup.start("simulator", self._simulator_args(sent_file))

    def _simulator_args(self, sent_file: Path) -> list[str]:
        """``chatlog simulate``'s arguments for the run's channels, rate (or schedule), duration and burst."""
        cfg = self.config
        sim_args = [
            "simulate",
            "--file",
            str(self.run_dir / "channels.txt"),
            "--rate",
            str(cfg.rate),
            "--duration",
            str(cfg.duration),
            "--out",
            str(sent_file),
            "--connections",
            str(cfg.sim_connections),
            "--seed",
            str(cfg.sim_seed),
        ]
        if cfg.schedule:
            sim_args += ["--schedule", ",".join(f"{r:g}:{s:g}" for r, s in cfg.schedule)]
        if cfg.burst is not None:
            frac, factor, seconds = cfg.burst
            sim_args += [
                "--burst-at",
                str(frac * cfg.duration),
                "--burst-factor",
                str(factor),
                "--burst-seconds",
                str(seconds),
            ]
        return sim_args

    async def _send(self, sup: Supervisor, watch: _Watch, stats: progress.Stats) -> progress.Stats:
        """Each second while the simulator sends (2 s at least): the CPU marks that are due
        (``cpu_marks``), progress and Kafka lag, coverage, and each fault started (in a thread) once its
        time has come; traffic stops when the simulator ends, and the faults are waited for. The last
        progress."""
        cfg = self.config
        start = time.time()
        pending = sorted(cfg.faults, key=lambda f: f.at)
        running: list[asyncio.Task[None]] = []
        marks = sorted(cfg.cpu_marks)
        while watch.sim.alive or time.time() - start < 2:
            await asyncio.sleep(1.0)
            while marks and time.time() - start >= marks[0]:
                taken = self.process_snapshot()
                if taken is not None:
                    self.marks.append((marks[0], *taken))
                marks.pop(0)
            stats = progress.poll(stats, watch.sim.log, watch.topic_size(), cfg.sink_metrics_port)
            self.timeline.lag.append((time.time() - self.t0, max(0, stats.produced - stats.read)))
            sample = await self.observe(watch.observer)
            self.record(sample, stats.sent_rate, stats.rows_rate)
            self._show(watch.live, "sending", sample, stats)
            while pending and time.time() - start >= pending[0].at * cfg.duration:
                fault = pending.pop(0)
                self.mark(fault.label)
                running.append(asyncio.create_task(asyncio.to_thread(fault.action, self, sup)))
        self.mark("traffic stops")
        await asyncio.gather(*running)
        return stats

    async def _drain(self, sup: Supervisor, watch: _Watch, stats: progress.Stats) -> None:
        """Each second, progress and coverage until the sink has written all that was sent (by its
        counters; a restarted sink's by the rows stored) or ``drain_timeout_s`` has passed."""
        drain_deadline = time.time() + self.config.drain_timeout_s
        while time.time() < drain_deadline:
            await asyncio.sleep(1.0)
            stats = progress.poll(stats, watch.sim.log, watch.topic_size(), self.config.sink_metrics_port)
            sample = await self.observe(watch.observer)
            self.record(sample, 0.0, stats.rows_rate)
            self._show(watch.live, "draining", sample, stats)
            if stats.drained() or (
                sup.starts["sink"] > 1  # a restarted sink's counters cover its last run only
                and stats.sim_done
                and await asyncio.to_thread(
                    sink_wrote_all,
                    self.settings,
                    self.settings.topic_messages,
                    self.settings.cassandra_keyspace,
                )
            ):
                return

    def warm_up_sink(self, timeout: float = 180.0) -> None:
        """Events through the sink before traffic, in rounds of :data:`WARM_UP_ROUNDS` (each sent twice,
        as two replica groups send it), each round waited for: the first batch pays for Python workers
        and Cassandra sessions (seconds to tens of seconds: the first batch line of the sink's log says
        how long), the next for the JVM's compilation of the read and write path (a second batch of
        100 records took 3.8 s in a demo warmed with one event). That is start-up, not the latency being
        measured."""
        from confluent_kafka import Producer

        from schemas import chat_event

        producer = Producer(self.settings.kafka_client_config())
        deadline = time.time() + timeout
        sent = 0
        for round_no, events in enumerate(WARM_UP_ROUNDS):
            now = now_ms()
            for i in range(events):
                event = chat_event.ChatEvent(
                    message_id=f"warmup-{self.run_id}-{round_no}-{i}",
                    kind="PRIVMSG",
                    channel=self.channels[i % len(self.channels)],
                    text="warmup",
                    sent_at=now,
                    received_at=now,
                    raw="PRIVMSG :warmup",
                )
                value = chat_event.encode(event)
                for _copy in range(2):
                    producer.produce(self.settings.topic_messages, key=event.channel.encode(), value=value)
                    producer.poll(0)
            producer.flush(30)
            sent += events
            while (
                progress.pick(progress.sink_metrics(self.config.sink_metrics_port), progress.ROWS) or 0.0
            ) < sent:
                if time.time() > deadline:
                    raise ChatlogError(
                        f"the sink wrote {sent} warm-up events not within {timeout:.0f} s; "
                        f"see {self.run_dir / 'logs' / 'sink.log'}"
                    )
                time.sleep(0.2)

    def _check_alive(self, sup: Supervisor) -> None:
        for name in ("sink", *self.workers):
            child = sup.children.get(name)
            if child is not None and not child.alive:
                raise ChatlogError(f"{name} exited early (code {child.proc.returncode}); see {child.log}")

    def report(self, sent_file: Path, sink_log: Path, *, sink_restarted: bool = False) -> RunReport:
        """The run's report: every message sent checked against the rows stored (:meth:`_stored`) and the
        records of the messages topic, the copies' skews and late copies (:meth:`_copies`), e2e
        (:meth:`_e2e`), each fault's impact (:meth:`_impacts`) and the CPU per stored message
        (:meth:`_cpu`). The plot's points are kept on the run."""
        sent = read_sent(sent_file) if sent_file.exists() else []
        self.look_channel = busiest((m.channel for m in sent), self.look_channel)
        # The sink's own counters, read now that it has drained (its Prometheus endpoint; this run's sink
        # is the only one on the demo's metrics port). Its log's per-batch lines give the same numbers.
        metrics = progress.sink_metrics(self.config.sink_metrics_port)
        prefix = sent[0].token.split("-")[0] if sent else "sim"
        stored, written_at = self._stored(sent, prefix)
        latencies = sorted(written_at[m.token] - m.sent_at_ms for m in sent if m.token in written_at)
        scan = scan_topic(self.settings, prefix)
        in_topic = scan.tokens
        lost = [m for m in sent if m.token not in stored]
        self._keep_points(sent, written_at, lost)
        samples = self.timeline.samples
        lost_covered = [m for m in lost if covered_at(samples, m.channel, m.sent_at_ms / 1000)]
        traffic_start = self.events.get("traffic starts", 0.0) + self.t0
        first_kill = self.killed[0] if self.killed else None
        skew, late, copy_details = self._copies(scan, metrics, sink_log, sink_restarted=sink_restarted)
        batches = sink_batches(sink_log.read_text(errors="replace")) if sink_log.exists() else []
        self.batches = [(b.started - self.t0, b.duration_s, b.records) for b in batches]
        e2e, e2e_details = self._e2e(sent, stored)
        impacts = self._impacts(sent, written_at)
        stored_count = sum(1 for m in sent if m.token in stored)
        cpu, pipeline, cpu_details = self._cpu(sent, written_at, traffic_start, stored_count)
        write_lag = percentiles(latencies).get("p99")
        return RunReport(
            sent=len(sent),
            stored=stored_count,
            lost=len(lost),
            duplicates_removed=sum(in_topic.values()) - len(stored),
            max_gap_s=max_gap_s(samples, self.channels, since=traffic_start),
            recovery_s=recovery_s(samples, self.channels, first_kill[1], first_kill[2])
            if first_kill
            else None,
            late_copies=late,
            e2e=e2e,
            skew=skew,
            cpu_us_per_msg=cpu,
            write_lag_p99_s=None if write_lag is None else write_lag / 1000,
            pipeline_us_per_msg=pipeline,
            details={
                "run_id": self.run_id,
                "name": self.config.name,
                "channels": len(self.channels),
                "rate": self.config.rate,
                "duration_s": self.config.duration,
                "events": self.events,
                "keyspace": self.settings.cassandra_keyspace,
                "outages": [asdict(o) for o in self.outages],
                "fault_impact": impacts,
                "workers": self.workers,
                "kafka_records_with_tokens": sum(in_topic.values()),
                "rows_doubled": sum(1 for c in stored.values() if c > 1),
                # sent messages with fewer records in the topic than replica groups: a group's ingester
                # missed or dropped them (the other group's copy hides that from "lost")
                "copies_short": sum(1 for m in sent if in_topic[m.token] < len(self.replicas)),
                "lost_while_covered": len(lost_covered),
                "latency_ms": percentiles(latencies),
                "latency_ms_note": "Cassandra writetime of each stored row (the sink's client-side "
                "timestamp, set as it sends the write) - the simulator's send time, every message",
                **copy_details,
                "e2e": e2e_details,
                **cpu_details,
                "sink_batches": batch_summary(batches, self.t0),
                "lost_sample": sorted(m.token for m in lost)[:20],
                "logs": str(self.run_dir / "logs"),
            },
        )

    def _stored(self, sent: list[SentMessage], prefix: str) -> tuple[Counter[str], dict[str, int]]:
        """The run's tokens (those that start with ``prefix``) in the rows stored from a minute before the
        first send to a minute after the last, each with its number of rows; and each stored token's write
        time (epoch ms)."""
        since = min((m.sent_at_ms for m in sent), default=int(self.t0 * 1000)) - 60_000
        until = max((m.sent_at_ms for m in sent), default=now_ms()) + 60_000
        written_at: dict[str, int] = {}
        stored = stored_tokens(self.settings, self.channels, since, until, written_at)
        return Counter({t: n for t, n in stored.items() if t.startswith(prefix)}), written_at

    def _keep_points(
        self, sent: list[SentMessage], written_at: dict[str, int], lost: list[SentMessage]
    ) -> None:
        """The plot's points of every message (seconds since t0): :attr:`write_points`,
        :attr:`lost_points`, :attr:`sent_points`."""
        self.write_points = [
            (m.sent_at_ms / 1000 - self.t0, (written_at[m.token] - m.sent_at_ms) / 1000)
            for m in sent
            if m.token in written_at
        ]
        self.lost_points = [m.sent_at_ms / 1000 - self.t0 for m in lost]
        self.sent_points = [m.sent_at_ms / 1000 - self.t0 for m in sent]

    def _copies(
        self, scan: TopicScan, metrics: dict[str, float], sink_log: Path, *, sink_restarted: bool
    ) -> tuple[Spread | None, int | None, dict[str, Any]]:
        """The copies of a message in the topic: the skew of their Kafka timestamps, the late copies the sink
        wrote again (None when a restarted sink's counters cannot count them), and the report's details of
        both (``copy_skew``, ``late_copies``)."""
        copies = scan.copies
        skew = Spread.of(copies.kafka_skews_ms())
        skew_received = Spread.of(copies.received_skews_ms())
        skew_append = Spread.of(copies.append_skews_ms())
        events_written = progress.pick(metrics, progress.ROWS)
        dead_letters = progress.pick(metrics, progress.DEADLETTERS)
        late = (  # a restarted sink's counters hold its last run only: then it cannot be counted (n/a)
            late_copies(int(events_written), int(dead_letters or 0), copies.distinct)
            if events_written is not None and not sink_restarted
            else None
        )
        log_written, log_dead = (
            sink_log_totals(sink_log.read_text(errors="replace")) if sink_log.exists() else (0, 0)
        )
        return (
            skew,
            late,
            {
                "copy_skew": {
                    "kafka_timestamp_ms": asdict(skew) if skew else None,
                    "received_at_ms": asdict(skew_received) if skew_received else None,
                    "append_floor_ms": asdict(skew_append) if skew_append else None,
                    "timestamp_types": dict(scan.timestamp_types),
                    "copies_per_message_id": copies.copies_histogram(),
                    "records": copies.records,
                    "distinct_message_ids": copies.distinct,
                    "undecodable_records": scan.undecodable,
                    "note": "for every message_id in the run's messages topic more than once: latest - "
                    "earliest Kafka record timestamp of its copies (CreateTime: set by the producing "
                    "ingester's client when it hands the event over; the headline numbers) and, beside "
                    "it, of received_at and of the append floor (the latest record timestamp at or before "
                    "the copy's offset in its partition: when it can have been appended at the earliest)",
                },
                "late_copies": {
                    "value": late,
                    "events_written": events_written,
                    "dead_letters": dead_letters,
                    "distinct_message_ids": copies.distinct,
                    "sink_log_events_written": log_written,
                    "sink_log_dead_letters": log_dead,
                    "duplicates_dropped_by_spark": progress.pick(metrics, progress.DUPLICATES),
                    "note": "events the sink wrote + dead letters (its Prometheus counters after the drain) "
                    "- distinct message ids in the topic: copies that got past the deduplication and "
                    "were written again (onto the same rows)",
                },
            },
        )

    def _cpu(
        self, sent: list[SentMessage], written_at: dict[str, int], traffic_start: float, stored_count: int
    ) -> tuple[float | None, float | None, dict[str, Any]]:
        """CPU µs per stored message: the whole machine's from traffic start to the last row's write, and
        the pipeline's parts' (:meth:`cpu_by_process`), with the report's details of both (``cpu``,
        ``cpu_by_process``)."""
        self.sample_cpu()
        last_row = max((written_at[m.token] for m in sent if m.token in written_at), default=0) / 1000
        cpu = cpu_us_per_msg(self.timeline.cpu, traffic_start, last_row, stored_count)
        by_process = self.cpu_by_process(stored_count)
        pipeline = (
            round(sum(by_process["us_per_msg"][part] for part in process_cpu.PIPELINE_PARTS), 1)
            if by_process is not None
            else None
        )
        return (
            cpu,
            pipeline,
            {
                "cpu": {
                    "us_per_msg": cpu,
                    "from_s": traffic_start - self.t0,
                    "to_s": last_row - self.t0 if last_row else None,
                    "note": "CPU time of the whole machine (every process: simulator, IRC server, "
                    "ingesters, Kafka, Spark, Cassandra; /proc/stat through psutil, interpolated between "
                    "1 s samples) from traffic start to the last row's write time, per message stored",
                },
                "cpu_by_process": by_process,
            },
        )

    def look(self) -> list[str]:
        """How to look at what the run logged: ``chatlog logs``, ``chatlog serve`` on its keyspace, and
        the page of its busiest channel for today (UTC)."""
        host, port = serve_address()
        return look_lines(
            program=program_name(),
            keyspace=self.settings.cassandra_keyspace,
            channel=self.look_channel,
            since_ms=int(self.t0 * 1000) - 60_000,
            day=datetime.now(UTC).date(),
            host=host,
            port=port,
        )

    def _e2e(self, sent: list[SentMessage], stored: Counter[str]) -> tuple[Spread | None, dict[str, Any]]:
        """IRC send -> first poll that read the row, for the sample channels' messages (seconds)."""
        if self.probe is None:
            return None, {}
        stats: ProbeStats = self.probe.stats
        points: list[tuple[float, float]] = []
        unseen = 0
        sampled = set(self.probe.channels)
        for m in sent:
            if m.channel not in sampled:
                continue
            seen = stats.seen.get(m.token)
            if seen is not None:
                points.append((m.sent_at_ms / 1000 - self.t0, (seen - m.sent_at_ms) / 1000))
            elif m.token in stored:
                unseen += 1
        self.e2e_points = points
        spread = Spread.of(v for _t, v in points)
        mids, qs = binned_quantiles(points, 5.0, (0.5, 0.99))
        tl = self.timeline
        tl.e2e_t, tl.e2e_p50, tl.e2e_p99 = mids, qs[0.5], qs[0.99]
        return spread, {
            "seconds": asdict(spread) if spread else None,
            "sample_channels": self.probe.channels,
            "sampled_messages": len(points),
            "stored_but_unseen": unseen,
            "poll_interval_s": self.probe.interval_s,
            "polls": stats.polls,
            "poll_mean_ms": round(1000 * stats.poll_s_total / stats.polls, 1) if stats.polls else None,
            "poll_max_ms": round(1000 * stats.poll_s_max, 1),
            "rows_read": stats.rows_read,
            "poll_errors": stats.errors,
            "given_up": stats.given_up,
            "note": "simulator's send time (taken just before the PRIVMSG is written to its socket) -> "
            "return of the first GET /api/v2/recent-messages/<channel> of the run's chatlog serve that held "
            "it, for every message sent to the sample channels; polls every poll_interval_s (every 1/20 of "
            "the oldest missing message's age while they lag, at most 2 s), so each value errs late by up "
            "to one interval plus one request, never early",
        }

    def _impacts(self, sent: list[SentMessage], written_at: dict[str, int]) -> list[dict[str, Any]]:
        """Each fault's impact (:mod:`lab.demo.impact`): stored-rate recovery, e2e and write p99
        before and after it."""
        sent_s = [m.sent_at_ms / 1000 - self.t0 for m in sent]
        stored_s = [written_at[m.token] / 1000 - self.t0 for m in sent if m.token in written_at]
        writes = [
            (m.sent_at_ms / 1000 - self.t0, (written_at[m.token] - m.sent_at_ms) / 1000)
            for m in sent
            if m.token in written_at
        ]
        labels = {f.label for f in self.config.faults}
        w = rate_window_s([start for start, _d, records in self.batches if records])
        e2e = self.e2e_points
        return [
            asdict(fault_impact(label, t, sent=sent_s, stored=stored_s, e2e=e2e, writes=writes, window_s=w))
            for label, t in self.events.items()
            if label in labels
        ]

    def write(self, rep: RunReport) -> tuple[Path, Path] | None:
        out = self.config.results_dir
        if out is None:
            return None
        tl = self.timeline
        js = write_json(
            out / f"{self.config.name}.json",
            {
                **rep.as_dict(),
                "summary": rep.line(),
                "timeline": {
                    "t": tl.t,
                    "sent_rate": tl.sent_rate,
                    "stored_rate": tl.stored_rate,
                    "coverage": tl.coverage,
                    "e2e_5s_bins": {"t": tl.e2e_t, "p50_s": tl.e2e_p50, "p99_s": tl.e2e_p99},
                },
            },
            indent=1,
        )
        png = plot_run(
            out / f"{self.config.name}.png",
            t=tl.t,
            series={"sent": tl.sent_rate, "stored (5 s mean)": rolling_mean(tl.stored_rate, 5)},
            coverage={f"replica {r}": v for r, v in tl.coverage.items()},
            latency={"p50": (tl.e2e_t, tl.e2e_p50), "p99": (tl.e2e_t, tl.e2e_p99)},
            batches=self.batches,
            events=self.events,
            title=rep.line(),
        )
        return js, png


def percentiles(sorted_values: list[int]) -> dict[str, float]:
    """p50/p90/p99/max of already sorted values (empty dict when there are none)."""
    if not sorted_values:
        return {}
    n = len(sorted_values)

    def pct(p: float) -> float:
        return float(sorted_values[min(n - 1, int(p * n))])

    return {"p50": pct(0.50), "p90": pct(0.90), "p99": pct(0.99), "max": float(sorted_values[-1]), "n": n}


def rolling_mean(values: list[float], window: int) -> list[float]:
    """Mean of each value and the ``window - 1`` before it (micro-batches make the raw rate spiky)."""
    out = []
    for i in range(len(values)):
        part = values[max(0, i - window + 1) : i + 1]
        out.append(sum(part) / len(part))
    return out


def execute(settings: StackSettings, config: RunConfig, console: Console | None) -> RunReport:
    """Run ``config`` to the end; every process it started is stopped when it returns or fails."""
    return execute_run(settings, config, console)[1]


def execute_run(settings: StackSettings, config: RunConfig, console: Console | None) -> tuple[Run, RunReport]:
    """:func:`execute`, with the run (its timeline, CPU marks and per-message points) for a benchmark."""
    if config.results_dir is not None:
        extras.require_plotting()  # now, not after the run
    run = Run(settings, config, console)
    with Supervisor(run.run_dir / "logs", env=run.env()) as sup:
        rep = asyncio.run(run.main(sup))
    written = run.write(rep)
    if console is not None:
        if written:
            console.print(f"report: {written[0]}  plot: {written[1]}  logs: {run.run_dir / 'logs'}")
        for line in run.look():
            console.print(line, markup=False, highlight=False, soft_wrap=True)
        console.print(rep.line())  # the last line: tools read the summary there
    return run, rep
