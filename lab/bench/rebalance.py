"""``chatlog bench rebalance``: how fast a consumer group of ingesters heals and scales, on the real stack.

Setup: fresh topics (``channel_buckets`` partitions), ``channels`` registered, ``workers`` ingesters of
one replica (``chatlog ingest`` processes) on the local InspIRCd, with a JOIN rate of ``join_rate`` per
10 s. Ground truth is the server's NAMES, asked by an observer client every ~0.3 s.

Each round:

* ``kill -9`` one ingester; **recovery** = time until every channel has a live ingester again (the
  broker's session timeout, 4 s in the dev stack, is most of it);
* start a new ingester; **share** = time from its start until it is in every channel of its fair
  share of buckets (its ``/metrics``: buckets owned >= buckets // workers, none loading, and NAMES shows it
  in as many channels as it wants).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from core.errors import ChatlogError
from core.settings import load
from ingest.registry import Registry
from ingest.settings import IngestSettings
from lab import extras
from lab.bench.scratch import scratch_topics
from lab.demo.observer import NamesObserver, worker_of
from lab.demo.supervisor import Supervisor
from lab.results import figure, write_json
from lab.scrape import Scrape, scrape

_POLL_S = 0.3
_PORT = re.compile(r"metrics on port (\d+)")


class _Bench:
    def __init__(self, settings: IngestSettings, sup: Supervisor, channels: list[str], uid: str) -> None:
        self.settings, self.sup, self.channels, self.uid = settings, sup, channels, uid
        self.live: list[str] = []
        self.next_index = 0
        self.timeline: list[tuple[float, int]] = []  # (time, channels with a live ingester)
        self.t0 = time.monotonic()

    def start(self) -> str:
        worker = f"rb{self.uid}w{self.next_index}"
        self.next_index += 1
        self.sup.start(worker, ["ingest", "--replica", "0", "--worker-id", worker])
        self.live.append(worker)
        return worker

    async def observe(self, observer: NamesObserver) -> dict[str, set[str]]:
        members = await observer.members(self.channels, timeout=60)
        out: dict[str, set[str]] = {}
        for ch, nicks in members.items():
            out[ch] = {w for n in nicks if (w := worker_of(n, self.live)) is not None}
        self.timeline.append((time.monotonic() - self.t0, sum(1 for ws in out.values() if ws)))
        return out

    def metrics(self, worker: str) -> Scrape | None:
        """``worker``'s /metrics now (None until it logged its port, or while it does not answer)."""
        match = _PORT.search(self.sup.children[worker].log.read_text())
        return scrape(int(match.group(1))) if match else None

    def check_alive(self) -> None:
        for w in self.live:
            child = self.sup.children[w]
            if not child.alive:
                raise ChatlogError(f"ingester {w} exited ({child.proc.returncode}); see {child.log}")


async def _scenario(bench: _Bench, workers: int, rounds: int, timeout: float) -> list[dict[str, Any]]:
    observer = NamesObserver("127.0.0.1", bench.settings.irc_port)
    await observer.connect()
    buckets = bench.settings.channel_buckets
    results = []
    try:
        for _ in range(workers):
            bench.start()
        await _until(bench, observer, timeout, lambda cov: all(len(ws) == 1 for ws in cov.values()))
        for r in range(rounds):
            victim = bench.live[r % len(bench.live)]
            bench.sup.kill9(victim)
            killed = time.monotonic()
            bench.live.remove(victim)
            await _until(bench, observer, timeout, lambda cov: all(cov.values()))
            recovery = time.monotonic() - killed
            newcomer = bench.start()
            started = time.monotonic()

            def has_share(cov: dict[str, set[str]], w: str = newcomer) -> bool:
                metrics = bench.metrics(w)
                if metrics is None:
                    return False
                owned = metrics.value("chatlog_ingest_buckets_owned") or 0.0
                loading = metrics.value("chatlog_ingest_buckets_loading") or 0.0
                wanted = metrics.value("chatlog_ingest_channels_wanted") or 0.0
                seen = sum(1 for ws in cov.values() if w in ws)
                return owned >= buckets // workers and loading == 0 and wanted > 0 and seen >= wanted

            cov = await _until(bench, observer, timeout, has_share)
            share = time.monotonic() - started
            results.append(
                {
                    "round": r + 1,
                    "killed": victim,
                    "kill_to_all_confirmed_s": round(recovery, 2),
                    "started": newcomer,
                    "start_to_share_confirmed_s": round(share, 2),
                    "share_channels": sum(1 for ws in cov.values() if newcomer in ws),
                }
            )
            # let the hand-off overlap end before the next kill, so rounds do not overlap
            await _until(bench, observer, timeout, lambda cov: all(len(ws) == 1 for ws in cov.values()))
    finally:
        await observer.close()
    return results


async def _until(bench: _Bench, observer: NamesObserver, timeout: float, done: Any) -> dict[str, set[str]]:
    deadline = time.monotonic() + timeout
    while True:
        cov = await bench.observe(observer)
        if done(cov):
            return cov
        bench.check_alive()
        if time.monotonic() > deadline:
            raise ChatlogError(f"bench rebalance: no progress within {timeout:.0f} s")
        await asyncio.sleep(_POLL_S)


def run(
    *, channels: int, workers: int, rounds: int, out: Path, join_rate: int = 1000, timeout: float = 120.0
) -> dict[str, Any]:
    extras.require_plotting()
    uid = uuid.uuid4().hex[:6]
    names_list = [f"rb{uid}_{i}" for i in range(channels)]
    with scratch_topics(load(IngestSettings), f"bench.{uid}") as settings:
        Registry(settings).add(names_list)
        env = {
            **settings.topic_env(),
            "CHATLOG_INGEST_GROUP_PREFIX": f"bench-rb-{uid}",
            "CHATLOG_IRC_HOST": "127.0.0.1",
            "CHATLOG_IRC_PORT": str(settings.irc_port),
            "CHATLOG_IRC_FLAVOR": "ircv3",
            "CHATLOG_IRC_JOIN_RATE": str(join_rate),
            "CHATLOG_METRICS_PORT": "0",
        }
        logs = Path(tempfile.mkdtemp(prefix="bench_rebalance_"))
        with Supervisor(logs, env=env) as sup:
            bench = _Bench(settings, sup, names_list, uid)
            rounds_out = asyncio.run(_scenario(bench, workers, rounds, timeout))
        shutil.rmtree(logs, ignore_errors=True)  # kept when the run failed: the error names the log
    kills = [r["kill_to_all_confirmed_s"] for r in rounds_out]
    shares = [r["start_to_share_confirmed_s"] for r in rounds_out]
    result = {
        "benchmark": "rebalance",
        "channels": channels,
        "buckets": settings.channel_buckets,
        "workers": workers,
        "join_rate_per_10s": join_rate,
        "group_protocol": settings.ingest_group_protocol,
        "broker_session_timeout_s": 4,
        "rounds": rounds_out,
        "kill_to_all_confirmed_s": {"median": statistics.median(kills), "max": max(kills)},
        "start_to_share_confirmed_s": {"median": statistics.median(shares), "max": max(shares)},
        "goal_kill_to_all_confirmed_s": 8,
        "machine": {"cpus": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2)},
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    write_json(out, result)
    _plot(bench.timeline, channels, out.with_suffix(".png"))
    return result


def _plot(timeline: list[tuple[float, int]], channels: int, path: Path) -> None:
    with figure(path, figsize=(8, 2.8), dpi=80) as (_fig, ax):
        ax.plot([t for t, _ in timeline], [100 * c / channels for _, c in timeline], lw=1)
        ax.set_xlabel("s")
        ax.set_ylabel("% channels with an ingester")
        ax.set_ylim(0, 105)


def summary(result: dict[str, Any]) -> str:
    k, s = result["kill_to_all_confirmed_s"], result["start_to_share_confirmed_s"]
    return (
        f"kill -9 -> all {result['channels']} channels confirmed again: "
        f"median {k['median']} s, max {k['max']} s; "
        f"new worker -> its share confirmed: median {s['median']} s, max {s['max']} s"
    )
