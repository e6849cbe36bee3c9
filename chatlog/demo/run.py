"""``chatlog demo``: the whole pipeline on the local stack, a failover and a scale-out, and a report.

Simulated chatters send real IRC traffic; two replica groups of two ingesters log it into Kafka; the
Spark sink writes it into Cassandra. Midway one ingester is killed with SIGKILL and later a new one
starts. The run drains, then checks every message that was sent against the rows in Cassandra.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.live import Live
from rich.table import Table

from chatlog.demo import progress
from chatlog.demo.observer import NamesObserver, worker_of
from chatlog.demo.plot import plot_run
from chatlog.demo.report import CoverageSample, RunReport, lost_tokens, max_gap_s, recovery_s
from chatlog.demo.supervisor import Supervisor
from chatlog.demo.verify import TopicSize, stored_tokens, topic_tokens
from chatlog.errors import ChatlogError
from chatlog.settings import PROJECT_ROOT, StackSettings


@dataclass
class DemoConfig:
    channels: int = 500
    rate: float = 2000.0
    duration: float = 120.0
    kill_at: float = 0.35  # fraction of the sending time
    scale_at: float = 0.65
    drain_timeout_s: float = 90.0
    results_dir: Path = PROJECT_ROOT / "results"
    workers: dict[str, int] = field(default_factory=lambda: {"r0a": 0, "r0b": 0, "r1a": 1, "r1b": 1})
    victim: str = "r0b"
    newcomer: str = "r0c"


@dataclass
class Timeline:
    t: list[float] = field(default_factory=list)
    sent_rate: list[float] = field(default_factory=list)
    stored_rate: list[float] = field(default_factory=list)
    coverage: dict[int, list[float]] = field(default_factory=lambda: {0: [], 1: []})
    samples: list[CoverageSample] = field(default_factory=list)


class Demo:
    def __init__(self, settings: StackSettings, config: DemoConfig, console: Console) -> None:
        self.config, self.console = config, console
        self.run_id = secrets.token_hex(3)
        self.run_dir = settings.state_dir / "demo" / self.run_id
        self.settings = settings.model_copy(
            update={
                "topic_channels": f"demo.{self.run_id}.channels",
                "topic_messages": f"demo.{self.run_id}.messages",
                "topic_deadletter": f"demo.{self.run_id}.deadletter",
                "topic_status": f"demo.{self.run_id}.status",
                "cassandra_keyspace": "chatlog_demo",
            }
        )
        self.channels = [f"d{self.run_id}_{i}" for i in range(config.channels)]
        self.workers = dict(config.workers)
        self.timeline = Timeline()
        self.events: dict[str, float] = {}
        self.t0 = time.time()

    def env(self) -> dict[str, str]:
        s = self.settings
        return {
            "CHATLOG_KAFKA_BOOTSTRAP_SERVERS": s.kafka_bootstrap_servers,
            "CHATLOG_TOPIC_CHANNELS": s.topic_channels,
            "CHATLOG_TOPIC_MESSAGES": s.topic_messages,
            "CHATLOG_TOPIC_DEADLETTER": s.topic_deadletter,
            "CHATLOG_TOPIC_STATUS": s.topic_status,
            "CHATLOG_CASSANDRA_KEYSPACE": s.cassandra_keyspace,
            "CHATLOG_IRC_PORT": str(s.irc_port),
            "CHATLOG_IRC_HOST": "127.0.0.1",
            "CHATLOG_IRC_FLAVOR": "ircv3",
            "CHATLOG_IRC_JOIN_RATE": "1000",
            "CHATLOG_METRICS_PORT": "0",
            "CHATLOG_SINK_CHECKPOINT": str(self.run_dir / "checkpoint"),
            "CHATLOG_SINK_METRICS_PORT": str(progress.SINK_METRICS_PORT),
            "CHATLOG_SPARK_MASTER": "local[2]",
        }

    # --- phases -------------------------------------------------------------------------------------
    def prepare(self) -> None:
        from chatlog.cql import apply_schema, connect
        from chatlog.kafka_admin import ensure_topics

        self.run_dir.mkdir(parents=True, exist_ok=True)
        ensure_topics(self.settings)
        cluster, session = connect(self.settings, timeout=60)
        try:
            session.execute("DROP KEYSPACE IF EXISTS chatlog_demo", timeout=120)
        finally:
            cluster.shutdown()
        apply_schema(self.settings)
        (self.run_dir / "channels.txt").write_text("\n".join(self.channels) + "\n")

    async def observe(self, observer: NamesObserver) -> CoverageSample:
        members = await observer.members(self.channels)
        per_replica: dict[int, set[str]] = {0: set(), 1: set()}
        workers = list(self.workers)
        for ch, nicks in members.items():
            for nick in nicks:
                w = worker_of(nick, workers)
                if w is not None:
                    per_replica[self.workers[w]].add(ch)
        return CoverageSample(time.time(), {r: frozenset(c) for r, c in per_replica.items()})

    def record(self, sample: CoverageSample, sent_rate: float, stored_rate: float) -> None:
        tl = self.timeline
        tl.samples.append(sample)
        tl.t.append(sample.t - self.t0)
        tl.sent_rate.append(sent_rate)
        tl.stored_rate.append(stored_rate)
        for r in (0, 1):
            tl.coverage[r].append(len(sample.confirmed.get(r, frozenset())))

    def table(self, phase: str, sample: CoverageSample | None, stats: progress.Stats) -> Table:
        table = Table(title=f"chatlog demo {self.run_id} — {phase}", show_header=False, min_width=60)
        table.add_row("elapsed", f"{time.time() - self.t0:.0f} s")
        if sample is not None:
            for r in (0, 1):
                table.add_row(
                    f"replica {r} confirmed",
                    f"{len(sample.confirmed.get(r, frozenset()))} / {len(self.channels)} channels",
                )
        table.add_row("sent", f"{stats.sent} ({stats.sent_rate:.0f}/s)")
        table.add_row("stored (sink rows)", f"{stats.rows} ({stats.rows_rate:.0f}/s)")
        table.add_row("duplicates dropped (sink)", str(stats.duplicates))
        table.add_row("kafka lag (records not read by the sink)", str(max(0, stats.produced - stats.read)))
        table.add_row("workers", ", ".join(f"{w}(r{r})" for w, r in self.workers.items()))
        for name, at in self.events.items():
            table.add_row(name, f"at {at:.0f} s")
        return table

    async def main(self, sup: Supervisor) -> RunReport:
        cfg = self.config
        self.prepare()
        reg = sup.start("channels-add", ["channels", "add", "--file", str(self.run_dir / "channels.txt")])
        if reg.proc.wait(timeout=120) != 0:
            raise ChatlogError(f"registering channels failed; see {reg.log}")
        sup.start("sink", ["sink"])
        for w, r in self.workers.items():
            sup.start(w, ["ingest", "--replica", str(r), "--worker-id", w])
        observer = NamesObserver("127.0.0.1", self.settings.irc_port)
        await observer.connect()
        stats = progress.Stats()
        topic_size = TopicSize(self.settings, self.settings.topic_messages)
        sent_file = self.run_dir / "sent.ndjson"
        with Live(self.table("joining", None, stats), console=self.console, refresh_per_second=2) as live:
            deadline = time.time() + 120
            while True:
                sample = await self.observe(observer)
                self.record(sample, 0.0, 0.0)
                live.update(self.table("joining", sample, stats))
                if all(len(sample.confirmed[r]) == len(self.channels) for r in (0, 1)):
                    break
                self._check_alive(sup)
                if time.time() > deadline:
                    raise ChatlogError("the ingesters did not confirm every channel within 120 s")
                await asyncio.sleep(1.0)
            self.events["traffic starts"] = time.time() - self.t0
            sim = sup.start(
                "simulator",
                [
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
                    "16",
                ],
            )
            start = time.time()
            killed_at: float | None = None
            while sim.alive or time.time() - start < 2:
                await asyncio.sleep(1.0)
                stats = progress.poll(stats, sim.log, topic_size())
                sample = await self.observe(observer)
                self.record(sample, stats.sent_rate, stats.rows_rate)
                live.update(self.table("sending", sample, stats))
                elapsed = time.time() - start
                if killed_at is None and elapsed >= cfg.kill_at * cfg.duration:
                    sup.kill9(cfg.victim)
                    killed_at = time.time()
                    self.events[f"kill -9 {cfg.victim}"] = killed_at - self.t0
                if cfg.newcomer not in self.workers and elapsed >= cfg.scale_at * cfg.duration:
                    self.workers[cfg.newcomer] = self.workers[cfg.victim]
                    sup.start(
                        cfg.newcomer,
                        ["ingest", "--replica", str(self.workers[cfg.newcomer]), "--worker-id", cfg.newcomer],
                    )
                    self.events[f"start {cfg.newcomer}"] = time.time() - self.t0
            self.events["traffic stops"] = time.time() - self.t0
            # drain: until the sink has written everything that was produced
            drain_deadline = time.time() + cfg.drain_timeout_s
            while time.time() < drain_deadline:
                await asyncio.sleep(1.0)
                stats = progress.poll(stats, sim.log, topic_size())
                sample = await self.observe(observer)
                self.record(sample, 0.0, stats.rows_rate)
                live.update(self.table("draining", sample, stats))
                if stats.drained():
                    break
        await observer.close()
        topic_size.close()
        return self.report(sent_file, killed_at)

    def _check_alive(self, sup: Supervisor) -> None:
        for name in ("sink", *self.workers):
            child = sup.children.get(name)
            if child is not None and not child.alive:
                raise ChatlogError(f"{name} exited early (code {child.proc.returncode}); see {child.log}")

    def report(self, sent_file: Path, killed_at: float | None) -> RunReport:
        from chatlog.simulate_cli import read_sent

        sent = read_sent(sent_file)
        since = min((m.sent_at_ms for m in sent), default=int(self.t0 * 1000)) - 60_000
        until = max((m.sent_at_ms for m in sent), default=int(time.time() * 1000)) + 60_000
        stored = stored_tokens(self.settings, self.channels, since, until)
        prefix = sent[0].token.split("-")[0] if sent else "sim"
        in_topic = topic_tokens(self.settings, prefix)
        sent_tokens = [m.token for m in sent]
        lost = lost_tokens(sent_tokens, stored)
        traffic_start = self.events.get("traffic starts", 0.0) + self.t0
        rep = RunReport(
            sent=len(sent),
            stored=sum(1 for t in set(sent_tokens) if t in stored),
            lost=len(lost),
            duplicates_removed=sum(in_topic.values()) - len(stored),
            max_gap_s=max_gap_s(self.timeline.samples, self.channels, since=traffic_start),
            recovery_s=(
                recovery_s(self.timeline.samples, self.channels, self.workers[self.config.victim], killed_at)
                if killed_at
                else None
            ),
            details={
                "run_id": self.run_id,
                "channels": len(self.channels),
                "rate": self.config.rate,
                "duration_s": self.config.duration,
                "events": self.events,
                "kafka_records_with_tokens": sum(in_topic.values()),
                "rows_doubled": sum(1 for c in stored.values() if c > 1),
                "lost_sample": sorted(lost)[:20],
            },
        )
        return rep

    def write(self, rep: RunReport) -> tuple[Path, Path]:
        out = self.config.results_dir
        out.mkdir(parents=True, exist_ok=True)
        js = out / "demo.json"
        js.write_text(
            json.dumps(
                {
                    **rep.as_dict(),
                    "summary": rep.line(),
                    "timeline": {
                        "t": self.timeline.t,
                        "sent_rate": self.timeline.sent_rate,
                        "stored_rate": self.timeline.stored_rate,
                        "coverage": self.timeline.coverage,
                    },
                },
                indent=1,
            )
        )
        png = plot_run(
            out / "demo.png",
            t=self.timeline.t,
            series={"sent": self.timeline.sent_rate, "stored": self.timeline.stored_rate},
            coverage={f"replica {r}": v for r, v in self.timeline.coverage.items()},
            events=self.events,
            title=rep.line(),
        )
        return js, png


def rolling_mean(values: list[float], window: int) -> list[float]:
    """Mean of each value and the ``window - 1`` before it (micro-batches make the raw rate spiky)."""
    out = []
    for i in range(len(values)):
        part = values[max(0, i - window + 1) : i + 1]
        out.append(sum(part) / len(part))
    return out


def run_demo(settings: StackSettings, config: DemoConfig, console: Console) -> RunReport:
    demo = Demo(settings, config, console)
    with Supervisor(demo.run_dir / "logs", env=demo.env()) as sup:
        rep = asyncio.run(demo.main(sup))
    js, png = demo.write(rep)
    console.print(f"report: {js}  plot: {png}  logs: {demo.run_dir / 'logs'}")
    console.print(rep.line())
    return rep
