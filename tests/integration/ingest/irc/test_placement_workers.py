"""Worker capacity with real ingesters (``chatlog ingest`` processes) in a consumer group on the real
Kafka and InspIRCd: CHATLOG_INGEST_MAX_CHANNELS=30, 120 registered channels, 2 workers → exactly 60
channels joined (30 by each, by the server's NAMES), never more; a third worker joins more of them.

A NAMES scan of 120 channels is not one instant: a worker that parts #a and then joins #b can show in
both, if #a is asked before the PART and #b after the JOIN. A channel seen joined in two consecutive
scans was joined at every instant between them (it was, at the end of the first, and still is, at the
start of the second), so the capacity is checked on what two consecutive scans both saw."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from core.settings import StackSettings
from ingest.registry import Registry
from lab.demo.observer import NamesObserver, worker_of
from lab.demo.supervisor import Supervisor
from tests.integration.ingest.ingester_env import QUICK, ingester_env

pytestmark = pytest.mark.integration

CAPACITY = 30


def test_workers_join_at_most_their_capacity(
    fresh_topics: StackSettings, unique: str, tmp_path: Path
) -> None:
    settings = fresh_topics
    channels = [f"w{unique}_{i}" for i in range(120)]
    Registry(settings).add(channels)
    more = {
        "CHATLOG_INGEST_HANDOFF_TIMEOUT_S": "0",
        "CHATLOG_INGEST_SHUTDOWN_DRAIN_S": "0",
        **QUICK,
        "CHATLOG_INGEST_MAX_CHANNELS": str(CAPACITY),
    }
    env = ingester_env(settings, settings.irc_port, f"test-{unique}", more)
    workers = [f"k{unique[:6]}{n}" for n in "abc"]

    async def joined_by(observer: NamesObserver, live: list[str]) -> dict[str, set[str]]:
        members = await observer.members(channels)
        out: dict[str, set[str]] = {w: set() for w in live}
        for ch, nicks in members.items():
            for nick in nicks:
                w = worker_of(nick, live)
                if w is not None:
                    out[w].add(ch)
        return out

    async def scan(
        observer: NamesObserver, live: list[str], before: dict[str, set[str]]
    ) -> dict[str, set[str]]:
        seen = await joined_by(observer, live)
        held = {w: len(seen[w] & before.get(w, set())) for w in live}
        assert all(n <= CAPACITY for n in held.values()), held
        return seen

    async def until(observer: NamesObserver, live: list[str], counts: list[int], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        seen: dict[str, set[str]] = {}
        while True:
            seen = await scan(observer, live, seen)
            if [len(seen[w]) for w in live] == counts:
                return
            for w in live:
                child = sup.children[w]
                if not child.alive:
                    pytest.fail(f"{w} exited: {child.log.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"timed out: joined {[len(seen[w]) for w in live]}, wanted {counts}")
            await asyncio.sleep(0.3)

    async def scenario() -> None:
        observer = NamesObserver("127.0.0.1", settings.irc_port)
        await observer.connect()
        try:
            for w in workers[:2]:
                sup.start(w, ["ingest", "--replica", "0", "--worker-id", w])
            await until(observer, workers[:2], [CAPACITY, CAPACITY], 60)
            for _ in range(5):  # and it stays there: nothing beyond the limit, no churn
                await asyncio.sleep(0.5)
                seen = await joined_by(observer, workers[:2])
                assert [len(seen[w]) for w in workers[:2]] == [CAPACITY, CAPACITY]
            assert not seen[workers[0]] & seen[workers[1]]
            first = seen

            sup.start(workers[2], ["ingest", "--replica", "0", "--worker-id", workers[2]])
            deadline = time.monotonic() + 60
            while True:  # the third worker takes a share of the buckets: more channels are logged
                seen = await scan(observer, workers, seen)
                if len(seen[workers[2]]) >= 20 and sum(len(c) for c in seen.values()) > 2 * CAPACITY:
                    break
                if time.monotonic() > deadline:
                    pytest.fail(f"third worker: joined {[len(seen[w]) for w in workers]}")
                await asyncio.sleep(0.3)
            kept = sum(len(first[w] & seen[w]) for w in workers[:2])
            assert kept > 0  # channels a worker still owns keep their place
        finally:
            await observer.close()

    with Supervisor(tmp_path / "logs", env=env) as sup:
        asyncio.run(asyncio.wait_for(scenario(), 200))
