"""The classic cooperative protocol, an idle member's readiness, and lost sessions (SIGSTOP), for real."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import time
import urllib.request
from pathlib import Path

import pytest

from core.kafka_admin import ensure_topics
from core.settings import StackSettings
from ingest.registry import Registry
from lab.demo.observer import NamesObserver, worker_of
from lab.demo.supervisor import Supervisor
from lab.simulator import ChatSimulator
from tests.integration.ingest.ingester_env import QUICK, ingester_env
from tests.integration.ingest.topic_tokens import assert_sent_reached_kafka

pytestmark = pytest.mark.integration

SESSION_MS = 3000


def _ready(log: Path) -> int:
    port = re.search(r"metrics on port (\d+)", log.read_text())
    assert port, log.read_text()[-2000:]
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port.group(1)}/ready", timeout=10) as resp:
            status: int = resp.status
            return status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_classic_protocol_idle_member_and_lost_session(
    fresh_topics: StackSettings, unique: str, tmp_path: Path
) -> None:
    settings = fresh_topics.model_copy(update={"topic_channels": f"t{unique}.ch2", "channel_buckets": 2})
    ensure_topics(settings)  # a channel topic of 2 buckets: one of 3 members has nothing to do
    channels = [f"m{unique}_{i}" for i in range(20)]
    Registry(settings).add(channels)
    more = {
        "CHATLOG_INGEST_GROUP_PROTOCOL": "classic",
        "CHATLOG_INGEST_SESSION_TIMEOUT_MS": str(SESSION_MS),
        "CHATLOG_INGEST_HANDOFF_TIMEOUT_S": "1",
        "CHATLOG_INGEST_SHUTDOWN_DRAIN_S": "1",
        **QUICK,
    }
    env = ingester_env(settings, settings.irc_port, f"test-{unique}", more)
    workers = [f"k{unique[:6]}{n}" for n in "abc"]

    async def covers(observer: NamesObserver) -> dict[str, set[str]]:
        members = await observer.members(channels)
        return {ch: {w for n in nicks if (w := worker_of(n, workers))} for ch, nicks in members.items()}

    async def until_two_share(observer: NamesObserver, timeout: float = 60) -> dict[str, set[str]]:
        """Each channel has exactly one ingester, and two ingesters (one per bucket) do the work."""
        deadline = time.monotonic() + timeout
        while True:
            cov = await covers(observer)
            if all(len(ws) == 1 for ws in cov.values()) and len(set().union(*cov.values())) == 2:
                return cov
            assert time.monotonic() < deadline, f"no exactly-one coverage: {cov}"
            await asyncio.sleep(0.3)

    async def scenario(sup: Supervisor) -> None:
        observer = NamesObserver("127.0.0.1", settings.irc_port)
        await observer.connect()
        try:
            for w in workers:
                sup.start(w, ["ingest", "--worker-id", w])
            cov = await until_two_share(observer)
            busy = {next(iter(ws)) for ws in cov.values()}
            [idle] = [w for w in workers if w not in busy]
            assert len(busy) == 2
            await asyncio.sleep(1.0)
            for w in workers:  # the idle member is ready too: the group has no bucket for it
                assert _ready(sup.children[w].log) == 200, w

            # a frozen member's session expires; the idle one takes its bucket; on waking up, the
            # frozen one finds its bucket lost and leaves those channels once the idle one has them
            frozen = sorted(busy)[0]
            pid = sup.children[frozen].proc.pid
            os.kill(pid, signal.SIGSTOP)
            try:
                deadline = time.monotonic() + 30
                while True:
                    cov = await covers(observer)
                    if all(ws - {frozen} for ws in cov.values()) and any(idle in ws for ws in cov.values()):
                        break
                    assert time.monotonic() < deadline, f"nobody took over from the frozen member: {cov}"
                    await asyncio.sleep(0.3)
            finally:
                os.kill(pid, signal.SIGCONT)
            await until_two_share(observer)
            assert "lost buckets" in sup.children[frozen].log.read_text()
        finally:
            await observer.close()
        for w in workers:
            assert sup.terminate(w, timeout=40) == 0, sup.children[w].log.read_text()[-3000:]

    with Supervisor(tmp_path / "logs", env=env) as sup:
        asyncio.run(scenario(sup))


def test_an_expired_session_loses_no_line_when_the_group_gives_the_buckets_back(
    fresh_topics: StackSettings, unique: str, tmp_path: Path
) -> None:
    """The only member of a group (KIP-848, the broker's short lab session) is frozen past its session
    while chat flows: on waking it finds every bucket lost and gets them straight back. It keeps its
    channels joined throughout, so every line said, before, during and after, reaches Kafka."""
    settings = fresh_topics
    channels = [f"s{unique}_{i}" for i in range(20)]
    Registry(settings).add(channels)
    env = ingester_env(
        settings, settings.irc_port, f"test-{unique}", {"CHATLOG_INGEST_SHUTDOWN_DRAIN_S": "1", **QUICK}
    )
    worker = f"x{unique[:6]}"

    async def joined_all(observer: NamesObserver) -> bool:
        members = await observer.members(channels)
        return all(any(worker_of(n, [worker]) for n in members.get(ch, ())) for ch in channels)

    async def scenario(sup: Supervisor) -> None:
        observer = NamesObserver("127.0.0.1", settings.irc_port)
        await observer.connect()
        sim = ChatSimulator("127.0.0.1", settings.irc_port, channels, rate=50, connections=2, seed=5)
        try:
            sup.start(worker, ["ingest", "--worker-id", worker])
            deadline = time.monotonic() + 60
            while not await joined_all(observer):
                assert time.monotonic() < deadline, "the ingester never joined its channels"
                await asyncio.sleep(0.3)
            await sim.start()
            traffic = asyncio.create_task(sim.run(600))
            await asyncio.sleep(2.0)
            pid = sup.children[worker].proc.pid
            os.kill(pid, signal.SIGSTOP)
            try:
                await asyncio.sleep(2.5 * settings.kafka_group_session_timeout_ms / 1000)
            finally:
                os.kill(pid, signal.SIGCONT)
            deadline = time.monotonic() + 30
            while "lost buckets" not in sup.children[worker].log.read_text():
                assert time.monotonic() < deadline, "the frozen member's session never expired"
                await asyncio.sleep(0.3)
            await asyncio.sleep(5.0)  # the rejoin, the buckets read again
            await assert_sent_reached_kafka(settings, sim, traffic, at_least=300)
            log = sup.children[worker].log.read_text()
            assert "no longer needed" not in log, log[-3000:]
            assert sup.terminate(worker, timeout=40) == 0, log[-3000:]
        finally:
            await sim.close()
            await observer.close()

    with Supervisor(tmp_path / "logs", env=env) as sup:
        asyncio.run(scenario(sup))
