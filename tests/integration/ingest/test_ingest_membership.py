"""The classic cooperative protocol, an idle member's readiness, and a lost session (SIGSTOP), for real."""

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
from tests.integration.ingest.ingester_env import QUICK, ingester_env

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
            # frozen one finds its bucket lost and leaves those channels at once (no overlap)
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
