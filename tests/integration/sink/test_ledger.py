"""The coverage ledger on the real stack: ingesters -> chatlog.coverage -> Cassandra -> spans and gaps.

Ground truth is the IRC server's NAMES: when an ingester's nick left the channel and when the next one
joined it."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from chatlog.demo.observer import NamesObserver, worker_of
from chatlog.demo.supervisor import Supervisor
from core.settings import StackSettings
from ingest.registry import Registry
from schemas.chat_event import ChatEvent
from serve.coverage import read_coverage
from serve.logs import text_with_gaps
from sink.driver.ledger import LedgerWriter

pytestmark = pytest.mark.integration


def _env(settings: StackSettings, unique: str) -> dict[str, str]:
    return {
        "CHATLOG_KAFKA_BOOTSTRAP_SERVERS": settings.kafka_bootstrap_servers,
        **settings.topic_env(),
        "CHATLOG_INGEST_GROUP_PREFIX": f"ledger-{unique}",
        "CHATLOG_INGEST_HEARTBEAT_S": "1",
        "CHATLOG_INGEST_SHUTDOWN_DRAIN_S": "1",
        "CHATLOG_IRC_HOST": "127.0.0.1",
        "CHATLOG_IRC_PORT": str(settings.irc_port),
        "CHATLOG_IRC_FLAVOR": "ircv3",
        "CHATLOG_IRC_JOIN_RATE": "1000",
        "CHATLOG_METRICS_PORT": "0",
    }


async def _until_in(observer: NamesObserver, channels: list[str], worker: str, present: bool) -> float:
    """Poll NAMES until ``worker`` is (or is no longer) in every channel; returns the time (epoch s)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        members = await observer.members(channels)
        inside = [any(worker_of(n, [worker]) for n in nicks) for nicks in members.values()]
        if all(inside) if present else not any(inside):
            return time.time()
        await asyncio.sleep(0.2)
    pytest.fail(f"{worker} {'never joined' if present else 'never left'} {channels}")


def test_a_killed_ingester_leaves_one_gap_that_the_other_replica_covers(
    fresh_topics: StackSettings, fresh_keyspace: StackSettings, unique: str, tmp_path: Path
) -> None:
    settings = fresh_topics.model_copy(update={"cassandra_keyspace": fresh_keyspace.cassandra_keyspace})
    channels = [f"l{unique}_{i}" for i in range(3)]
    Registry(settings).add(channels)
    started_ms = int(time.time() * 1000)
    a, x, a2 = f"a{unique[:6]}", f"x{unique[:6]}", f"b{unique[:6]}"
    truth: dict[str, float] = {}

    async def scenario(sup: Supervisor) -> None:
        observer = NamesObserver("127.0.0.1", settings.irc_port)
        await observer.connect()
        try:
            sup.start(a, ["ingest", "--replica", "0", "--worker-id", a])
            sup.start(x, ["ingest", "--replica", "1", "--worker-id", x])
            await _until_in(observer, channels, a, True)
            await _until_in(observer, channels, x, True)
            await asyncio.sleep(2)
            sup.kill9(a)
            truth["left"] = await _until_in(observer, channels, a, False)
            await asyncio.sleep(15)
            sup.start(a2, ["ingest", "--replica", "0", "--worker-id", a2])
            truth["back"] = await _until_in(observer, channels, a2, True)
            later = f"l{unique}_late"
            truth["late_added"] = time.time()
            Registry(settings).add([later])
            await _until_in(observer, [later], a2, True)
            await asyncio.sleep(2)
            truth["stopping"] = time.time()
            for name in (x, a2):  # both groups stop: from here on nobody logs the channels
                assert sup.terminate(name, timeout=40) == 0
            truth["stopped"] = time.time()
            await asyncio.sleep(3)
        finally:
            await observer.close()

    with Supervisor(tmp_path / "logs", env=_env(settings, unique)) as sup:
        asyncio.run(scenario(sup))
        ledger = LedgerWriter(settings, settings, group=f"ledger-{unique}")
        try:
            deadline = time.monotonic() + 30
            idle = 0
            while idle < 2 or ledger.written == 0:  # until it has written and the topic is drained
                assert time.monotonic() < deadline, f"the ledger wrote {ledger.written} events"
                idle = 0 if ledger.step(1.0) else idle + 1
            assert ledger.undecodable == 0
            from core.cql import connect

            cluster, session = connect(settings)
            try:
                now = int(time.time() * 1000)
                for ch in channels:
                    both = read_coverage(session, settings.cassandra_keyspace, ch, started_ms, now)
                    (stopped,) = both.gaps  # replica 1 covered the kill; only the final stop is a gap
                    assert abs(stopped.start / 1000 - truth["stopped"]) <= 5 and "stopped" in stopped.why
                    assert {s.replica for s in both.spans} == {0, 1}
                    killed = [s for s in both.spans if s.worker == a]
                    assert [s.end_reason for s in killed] == ["silent"]
                    # replica 0 alone: exactly one gap, where the IRC server saw it
                    r0 = [s for s in both.spans if s.replica == 0]
                    from core.coverage_spans import gaps

                    (gap,) = gaps(r0, since_ms=started_ms, until_ms=int(truth["stopping"] * 1000))
                    assert abs(gap.start / 1000 - truth["left"]) <= 5, (gap, truth)
                    assert abs(gap.end / 1000 - truth["back"]) <= 5, (gap, truth)
                    assert gap.seconds >= 10 and "silent" in gap.why

                # `chatlog logs --format text` marks a gap of every group where it falls, not r0's alone
                def chat(at_s: float, text: str) -> ChatEvent:
                    at = int(at_s * 1000)
                    return ChatEvent(
                        message_id=text, kind="PRIVMSG", channel=channels[0], user_login="u", text=text,
                        sent_at=at, received_at=at, raw=text,
                    )  # fmt: skip

                lines = list(
                    text_with_gaps(
                        settings,
                        channels[0],
                        iter(
                            [
                                chat(truth["left"] - 3, "a"),
                                chat(truth["back"] + 3, "b"),
                                chat(now / 1000, "c"),
                            ]
                        ),
                        started_ms,
                        now,
                    )
                )
                assert [ln.rsplit(": ", 1)[-1] for ln in lines] == [
                    "a",
                    "b",
                    lines[2].rsplit(": ", 1)[-1],
                    "c",
                ]
                assert lines[2].startswith("-- not logged ") and "stopped" in lines[2], lines
                late = read_coverage(
                    session,
                    settings.cassandra_keyspace,
                    f"l{unique}_late",
                    started_ms,
                    int(truth["stopping"] * 1000),
                )
                assert late.gaps == [] and late.spans, "no gap before a new channel's first JOIN"
                assert min(s.start for s in late.spans) / 1000 >= truth["late_added"] - 1
            finally:
                cluster.shutdown()
        finally:
            ledger.close()
