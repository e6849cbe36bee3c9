"""Ingesters sharing channels through consumer groups, against the real Kafka and the real IRC server.

Ground truth is the IRC server's NAMES (an observer client), not what the ingesters say about
themselves. Pool nicks are ``<worker id>-<n>-<rand>``, so a nick tells which ingester it belongs to.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.settings import StackSettings
from ingest.registry import Registry
from lab.demo.observer import NamesObserver, worker_of
from lab.demo.supervisor import CHATLOG, Supervisor
from lab.simulator import ChatSimulator
from tests.integration.ingest.ingester_env import QUICK, ingester_env
from tests.integration.ingest.topic_tokens import assert_sent_reached_kafka

pytestmark = pytest.mark.integration

CHANNELS = 160
HANDOFF_TIMEOUT_S = 60.0
Coverage = dict[int, dict[str, set[str]]]  # replica -> channel -> workers in it


def _env(settings: StackSettings, unique: str) -> dict[str, str]:
    more = {
        "CHATLOG_INGEST_HANDOFF_TIMEOUT_S": str(HANDOFF_TIMEOUT_S),
        "CHATLOG_INGEST_SHUTDOWN_DRAIN_S": "1",
        "CHATLOG_INGEST_HEARTBEAT_S": "1",
        **QUICK,
    }
    return ingester_env(settings, settings.irc_port, f"test-{unique}", more)


class Group:
    """The ingesters of a test, their replicas, and NAMES observations of the channels."""

    def __init__(self, sup: Supervisor, observer: NamesObserver, channels: list[str], unique: str) -> None:
        self.sup, self.observer, self.channels = sup, observer, channels
        self.replica_of: dict[str, int] = {}
        self.killed: set[str] = set()
        self.prefix = f"i{unique[:6]}"

    def start(self, name: str, replica: int) -> str:
        worker = f"{self.prefix}{name}"
        self.replica_of[worker] = replica
        self.sup.start(worker, ["ingest", "--replica", str(replica), "--worker-id", worker])
        return worker

    async def observe(self) -> Coverage:
        members = await self.observer.members(self.channels)
        out: Coverage = {r: {ch: set() for ch in self.channels} for r in set(self.replica_of.values())}
        workers = list(self.replica_of)
        for ch, nicks in members.items():
            for nick in nicks:
                w = worker_of(nick, workers)
                if w is not None:
                    out[self.replica_of[w]][ch].add(w)
        return out

    async def until(
        self, what: str, done: Callable[[Coverage], bool], timeout: float = 60.0
    ) -> list[Coverage]:
        """Observations (every ~0.3 s) until ``done``; fails after ``timeout`` or if an ingester died."""
        seen: list[Coverage] = []
        deadline = time.monotonic() + timeout
        while True:
            seen.append(await self.observe())
            if done(seen[-1]):
                return seen
            for name, child in self.sup.children.items():
                if name in self.replica_of and not child.alive and name not in self.killed:
                    pytest.fail(f"{name} exited ({child.proc.returncode}): {child.log.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"timed out waiting for: {what}; last: {_summary(seen[-1])}")
            await asyncio.sleep(0.3)


def _summary(cov: Coverage) -> str:
    parts = []
    for r, chans in sorted(cov.items()):
        counts: dict[int, int] = {}
        for ws in chans.values():
            counts[len(ws)] = counts.get(len(ws), 0) + 1
        parts.append(f"r{r}: channels by number of ingesters {dict(sorted(counts.items()))}")
    return "; ".join(parts)


def _exactly_one(cov: Coverage, replica: int, among: set[str] | None = None) -> bool:
    return all(len(ws) == 1 and (among is None or ws <= among) for ws in cov[replica].values())


def _owner_map(cov: Coverage, replica: int) -> dict[str, str]:
    return {ch: next(iter(ws)) for ch, ws in cov[replica].items()}


def _steady(done: Callable[[Coverage], bool], seconds: float = 5.0) -> Callable[[Coverage], bool]:
    """``done``, and who holds which channel unchanged for ``seconds``: a member joins its share at the
    JOIN rate and each channel is handed over once it confirms it, so "exactly one owner" also holds while
    a handover has not started yet or is half done."""
    since: list[tuple[float, Coverage]] = []

    def check(cov: Coverage) -> bool:
        if not since or since[-1][1] != cov:
            since.append((time.monotonic(), cov))
        return done(cov) and time.monotonic() - since[-1][0] >= seconds

    return check


def _status_until_ok(env: dict[str, str], timeout: float = 20.0) -> dict[str, Any]:
    """`chatlog status --json --replicas 2` until it exits 0 (heartbeats lag NAMES by up to 1 s)."""
    deadline = time.monotonic() + timeout
    while True:
        done = subprocess.run(
            [*CHATLOG, "status", "--json", "--replicas", "2"],
            env={**os.environ, **env},
            capture_output=True,
            timeout=60,
            check=False,
        )
        if done.returncode == 0 or time.monotonic() > deadline:
            assert done.returncode == 0, done.stdout.decode()[-2000:] + done.stderr.decode()[-2000:]
            report: dict[str, Any] = json.loads(done.stdout)
            return report
        time.sleep(0.5)


def _check_metrics(log: Path) -> None:
    """The ingester's Prometheus endpoint (port 0: it logs the one it got) answers and is ready."""
    match = re.search(r"metrics on port (\d+)", log.read_text())
    assert match, "the ingester must log its metrics port"
    base = f"http://127.0.0.1:{match.group(1)}"
    text = urllib.request.urlopen(base + "/metrics", timeout=10).read().decode()
    assert re.search(r"chatlog_ingest_buckets_owned\{[^}]*\} [1-9]", text), text[:2000]
    assert "chatlog_irc_channels_confirmed" in text
    assert urllib.request.urlopen(base + "/ready", timeout=10).status == 200


def test_group_shares_channels_fails_over_and_scales_out(
    fresh_topics: StackSettings, unique: str, tmp_path: Path
) -> None:
    settings = fresh_topics
    channels = [f"c{unique}_{i}" for i in range(CHANNELS)]
    Registry(settings).add(channels)
    env = _env(settings, unique)

    async def scenario(sup: Supervisor) -> None:
        observer = NamesObserver("127.0.0.1", settings.irc_port)
        await observer.connect()
        group = Group(sup, observer, channels, unique)
        try:
            a, b, c = (group.start(n, 0) for n in ("a", "b", "c"))
            group.start("x", 1)
            group.start("y", 1)

            # 1. every channel has exactly one ingester of each replica, and everybody got a share (a
            #    member whose buckets are assigned but whose channels are still held by their first owner
            #    is not there yet: the status already names it)
            seen = await group.until(
                "one ingester per channel per replica, each holding a share",
                _steady(
                    lambda cov: (
                        _exactly_one(cov, 0)
                        and _exactly_one(cov, 1)
                        and set(_owner_map(cov, 0).values()) == {a, b, c}
                    )
                ),
            )
            report = _status_until_ok(env)
            assert [r["confirmed"] for r in report["replicas"]] == [CHANNELS, CHANNELS]
            assert sorted(report["replicas"][0]["owners"]) == sorted([a, b, c])
            assert sum(len(v) for v in report["replicas"][0]["owners"].values()) == 16
            _check_metrics(sup.children[a].log)
            before = _owner_map(seen[-1], 0)

            # 2. kill -9 b while outside clients chat: its channels come back to a and c, theirs stay put;
            #    replica 1 covers every channel all along, so no message is lost
            sim = ChatSimulator("127.0.0.1", settings.irc_port, channels, rate=150, connections=4, seed=7)
            await sim.start()
            traffic = asyncio.create_task(sim.run(60))
            await asyncio.sleep(1.0)
            sup.kill9(b)
            group.killed.add(b)
            seen = await group.until(
                "b's channels back with a and c", lambda cov: _exactly_one(cov, 0, {a, c})
            )
            for cov in seen:
                assert all(cov[1][ch] for ch in channels), "replica 1 must cover every channel meanwhile"
                for ch, owner in before.items():
                    if owner != b:
                        assert owner in cov[0][ch], f"{ch} moved away from surviving {owner}"
            await asyncio.sleep(1.0)
            await assert_sent_reached_kafka(settings, sim, traffic, at_least=100)
            await sim.close()

            # 3. a new ingester takes a fair share; the others shrink; no channel is ever uncovered
            before_new = _owner_map(await group.observe(), 0)
            d = group.start("d", 0)
            seen = await group.until(
                "d took a share and the overlap ended",
                lambda cov: _exactly_one(cov, 0) and sum(d in ws for ws in cov[0].values()) > 0,
            )
            seen += await group.until("settled", _steady(lambda cov: _exactly_one(cov, 0)))
            for cov in seen:
                uncovered = [ch for ch, ws in cov[0].items() if not ws]
                assert not uncovered, f"uncovered during scale-out: {uncovered[:5]}"
            after = _owner_map(seen[-1], 0)
            share = {w: sum(1 for o in after.values() if o == w) for w in (a, c, d)}
            assert share[d] >= CHANNELS // 6, share  # 16 buckets over 3: 5 or 6 each
            for w in (a, c):
                assert share[w] < sum(1 for o in before_new.values() if o == w), share
            for ch, owner in after.items():
                assert owner == d or owner == before_new[ch], f"{ch} moved between old members"
        finally:
            await observer.close()

        # 4. SIGTERM is graceful: exit 0
        for name in (a, c, d, f"{group.prefix}x", f"{group.prefix}y"):
            assert sup.terminate(name, timeout=40) == 0, sup.children[name].log.read_text()[-3000:]

    with Supervisor(tmp_path / "logs", env=env) as sup:
        asyncio.run(scenario(sup))


def test_scale_out_at_the_twitch_join_limit_leaves_no_channel_unlogged_at_r1(
    fresh_topics: StackSettings, unique: str, tmp_path: Path
) -> None:
    """R = 1, the default JOIN limit (20 per 10 s) and hand-off: a new ingester needs ~20 s to join its
    share; the old owners keep every moved channel until the new one confirms it, so NAMES never shows a
    channel without a logger and every message sent meanwhile reaches Kafka."""
    settings = fresh_topics
    channels = [f"j{unique}_{i}" for i in range(120)]
    Registry(settings).add(channels)
    env = {**_env(settings, unique), "CHATLOG_IRC_JOIN_RATE": "20", "CHATLOG_IRC_JOIN_WINDOW_S": "10"}
    env.pop("CHATLOG_INGEST_HANDOFF_TIMEOUT_S")  # the default

    async def scenario(sup: Supervisor) -> None:
        observer = NamesObserver("127.0.0.1", settings.irc_port)
        await observer.connect()
        group = Group(sup, observer, channels, unique)
        sim = ChatSimulator("127.0.0.1", settings.irc_port, channels, rate=100, connections=4, seed=11)
        try:
            a, b = group.start("a", 0), group.start("b", 0)
            await group.until("one ingester per channel", lambda cov: _exactly_one(cov, 0), timeout=120)
            await sim.start()
            traffic = asyncio.create_task(sim.run(600))
            await asyncio.sleep(1.0)
            c = group.start("c", 0)
            share = {"n": 0, "since": time.monotonic()}

            def settled(cov: Coverage) -> bool:
                """c holds its share (5 of 16 buckets) and has joined nothing new for 12 s (its 20 JOINs
                per 10 s would have shown), and every channel has exactly one logger again."""
                n = sum(c in ws for ws in cov[0].values())
                if n != share["n"]:
                    share["n"], share["since"] = n, time.monotonic()
                return n > 0 and _exactly_one(cov, 0) and time.monotonic() - share["since"] >= 12

            seen = await group.until("c took a share and the others let go of it", settled, timeout=150)
            assert share["n"] >= 10, share
            uncovered = {ch for cov in seen for ch, ws in cov[0].items() if not ws}
            assert not uncovered, f"{len(uncovered)} channels without a logger during the scale-out"
            assert len(seen) > 20  # sampled all along (~0.3 s apart), not once at the end
            await asyncio.sleep(1.0)
            await assert_sent_reached_kafka(settings, sim, traffic, at_least=1000)
            for name in (a, b, c):
                assert sup.terminate(name, timeout=40) == 0, sup.children[name].log.read_text()[-3000:]
        finally:
            await sim.close()
            await observer.close()

    with Supervisor(tmp_path / "logs", env=env) as sup:
        asyncio.run(scenario(sup))
