"""The coverage ledger on the real stack: ingesters -> chatlog.coverage -> Cassandra -> spans and gaps.

Ground truth is the IRC server's NAMES: when an ingester's nick left the channel and when the next one
joined it."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC
from pathlib import Path

import pytest
import typer
from confluent_kafka import Consumer, Producer, TopicPartition
from typer.testing import CliRunner

from chatlog.cli.log_reader import text_with_gaps
from core.coverage_spans import gaps
from core.cql import connect
from core.settings import StackSettings
from ingest.registry import Registry
from lab.demo.observer import NamesObserver, worker_of
from lab.demo.supervisor import Supervisor
from lab.simulator import ChatSimulator, SentMessage
from schemas.chat_event import ChatEvent
from serve.coverage import read_coverage
from sink.settings import SinkSettings
from sink.side.ledger import LedgerWriter
from sink.writer.partition import write_partition
from store.write import close_sessions

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
        _drain_ledger(settings, f"ledger-{unique}")
        cluster, session = connect(settings)
        try:
            now = int(time.time() * 1000)
            for ch in channels:
                both = read_coverage(session, settings.cassandra_keyspace, ch, started_ms, now)
                (stopped,) = both.gaps  # replica 1 covered the kill; only the final stop is a gap
                # the gap opens when the second group's span ends: between asking both to stop and
                # both having exited (an exit may take seconds after the span is closed)
                assert truth["stopping"] - 1 <= stopped.start / 1000 <= truth["stopped"] + 1, (stopped, truth)
                assert "stopped" in stopped.why
                assert {s.replica for s in both.spans} == {0, 1}
                killed = [s for s in both.spans if s.worker == a]
                assert [s.end_reason for s in killed] == ["silent"]
                # replica 0 alone: exactly one gap, where the IRC server saw it
                r0 = [s for s in both.spans if s.replica == 0]
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


def _drain_ledger(settings: StackSettings, group: str) -> None:
    """Run a ledger writer until it has written something and the coverage topic is drained."""
    ledger = LedgerWriter(settings, settings, group=group)
    try:
        deadline = time.monotonic() + 30
        idle = 0
        while idle < 2 or ledger.written == 0:
            assert time.monotonic() < deadline, f"the ledger wrote {ledger.written} events"
            idle = 0 if ledger.step(1.0) else idle + 1
        assert ledger.undecodable == 0
    finally:
        ledger.close()


def _store_messages(settings: SinkSettings) -> int:
    """Write the whole messages topic into Cassandra with the sink's executor code (no Spark)."""
    consumer = Consumer({**settings.kafka_client_config(), "group.id": "unused", "enable.auto.commit": False})
    try:
        topic = settings.topic_messages
        parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10) for p in parts}
        consumer.assign([TopicPartition(topic, p, low) for p, (low, high) in ends.items() if high > low])
        want = sum(high - low for low, high in ends.values())
        records: list[tuple[bytes | None, int, int]] = []
        deadline = time.monotonic() + 60
        while len(records) < want:
            assert time.monotonic() < deadline, f"read {len(records)} of {want} records"
            for msg in consumer.consume(1000, 0.5):
                if msg.error() is None:
                    records.append((msg.value(), msg.partition() or 0, msg.offset() or 0))
    finally:
        consumer.close()
    stats = write_partition(iter(records), settings)
    close_sessions()
    return stats.events


def _logs_app() -> typer.Typer:
    import chatlog.cli.logs

    app = typer.Typer()
    app.callback()(lambda: None)
    chatlog.cli.logs.register(app)
    return app


def test_the_messages_sent_inside_a_gap_are_absent_and_explained(
    fresh_topics: StackSettings,
    fresh_keyspace: StackSettings,
    sink_settings: SinkSettings,
    unique: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """R = 1: the only ingester is killed for ~15 s while chatters send; what was lost is what the
    ledger says was not logged, and `chatlog logs --format text` shows the gap where it fell."""
    settings = fresh_topics.model_copy(update={"cassandra_keyspace": fresh_keyspace.cassandra_keyspace})
    channels = [f"m{unique}_{i}" for i in range(2)]
    Registry(settings).add(channels)
    started_ms = int(time.time() * 1000)
    a, a2 = f"a{unique[:6]}", f"b{unique[:6]}"
    truth: dict[str, float] = {}
    sent: list[SentMessage] = []

    async def scenario(sup: Supervisor) -> None:
        observer = NamesObserver("127.0.0.1", settings.irc_port)
        await observer.connect()
        sim = ChatSimulator("127.0.0.1", settings.irc_port, channels, rate=40, connections=2, seed=3)
        try:
            sup.start(a, ["ingest", "--replica", "0", "--worker-id", a])
            await _until_in(observer, channels, a, True)
            await sim.start()
            traffic = asyncio.create_task(sim.run(600))
            await asyncio.sleep(4)
            sup.kill9(a)
            truth["killed"] = time.time()
            truth["left"] = await _until_in(observer, channels, a, False)
            await asyncio.sleep(15)
            sup.start(a2, ["ingest", "--replica", "0", "--worker-id", a2])
            truth["back"] = await _until_in(observer, channels, a2, True)
            await asyncio.sleep(4)
            sim.stop()
            await traffic
            truth["until"] = time.time() + 0.5
            await asyncio.sleep(1)
            assert sup.terminate(a2, timeout=40) == 0  # flushes what it received
        finally:
            sent.extend(sim.sent)
            await sim.close()
            await observer.close()

    with Supervisor(tmp_path / "logs", env=_env(settings, unique)) as sup:
        asyncio.run(scenario(sup))
    assert _store_messages(sink_settings) > 0
    _drain_ledger(settings, f"ledger-{unique}")

    monkeypatch.setenv("CHATLOG_CASSANDRA_KEYSPACE", settings.cassandra_keyspace)
    runner = CliRunner()
    until_ms = int(truth["until"] * 1000)
    window = ["--since", str(started_ms), "--until", str(until_ms)]
    for channel in channels:
        mine = [m for m in sent if m.channel == channel]
        nd = runner.invoke(_logs_app(), ["logs", channel, *window, "--format", "ndjson"])
        assert nd.exit_code == 0, nd.output
        stored = [json.loads(line) for line in nd.stdout.splitlines()]
        stored_tokens = {str(e["text"]).split(" ", 1)[0] for e in stored}
        missing = [m for m in mine if m.token not in stored_tokens]

        cluster, session = connect(settings)
        try:
            cov = read_coverage(session, settings.cassandra_keyspace, channel, started_ms, until_ms)
        finally:
            cluster.shutdown()
        (gap,) = cov.gaps  # R = 1: the kill is the one gap
        assert abs(gap.start / 1000 - truth["left"]) <= 5 and abs(gap.end / 1000 - truth["back"]) <= 5
        assert "silent" in gap.why and a in gap.why

        # absent: every message sent after the kill and before the new ingester's JOIN
        inside = [m for m in mine if truth["killed"] + 0.2 <= m.sent_at_ms / 1000 <= truth["back"] - 1]
        assert len(inside) >= 20, (len(inside), truth)
        assert not {m.token for m in inside} & stored_tokens
        # explained: every message missing was sent inside the reported gap (1 s for the clocks)
        unexplained = [m for m in missing if not gap.start - 1000 <= m.sent_at_ms <= gap.end + 1000]
        assert unexplained == [], (unexplained[:5], gap)
        assert len(missing) >= len(inside) and len(stored) + len(missing) == len(mine)
        print(
            f"#{channel}: sent {len(mine)}, stored {len(stored)}, missing {len(missing)} "
            f"({len(inside)} sent between the kill and the rejoin); gap {gap.seconds:.1f} s, "
            f"NAMES {truth['back'] - truth['left']:.1f} s"
        )

        # `chatlog logs --format text`: the mark between the last message before and the first after
        text = runner.invoke(_logs_app(), ["logs", channel, *window])
        assert text.exit_code == 0, text.output
        lines = text.stdout.splitlines()
        marks = [i for i, line in enumerate(lines) if line.startswith("-- not logged ")]
        assert len(marks) == 1 and len(lines) == len(stored) + 1, lines[:3]
        (i,) = marks
        assert "silent" in lines[i] and a in lines[i]
        before = [e for e in stored if e["sent_at"] < gap.start]
        after = [e for e in stored if e["sent_at"] >= gap.start]
        assert before and after
        assert lines[i - 1].endswith(str(before[-1]["text"])) and lines[i + 1].endswith(str(after[0]["text"]))
        # the ledger's gap is a little wider than the loss, never narrower: it starts at the last sign
        # of life (heartbeat 1 s) and ends when the new ingester handled its JOIN's confirmation (~0.2 s
        # after the server began relaying): messages stored inside it lie within those margins
        inner = (gap.start + 1500, gap.end - 1000)
        odd = [
            (e["sent_at"] - gap.start, gap.end - e["sent_at"])
            for e in stored
            if inner[0] < e["sent_at"] < inner[1]
        ]
        assert not odd, (odd, gap)


def test_a_later_batch_of_older_events_never_moves_last_seen_back(
    fresh_topics: StackSettings, fresh_keyspace: StackSettings, unique: str
) -> None:
    """A worker run's events reach the ledger through several partitions, so a later batch can hold older
    events than an earlier one: the newest sign of life must still win."""
    from schemas.coverage import CoverageEvent, encode

    settings = fresh_topics.model_copy(update={"cassandra_keyspace": fresh_keyspace.cassandra_keyspace})
    now = int(time.time() * 1000)
    session = now - 3_600_000
    alive = CoverageEvent(replica=0, worker="w", session=session, state="alive", at=now)
    joined = CoverageEvent(
        replica=0, worker="w", session=session, state="joined", at=session + 1000, channel=f"c{unique}"
    )
    producer = Producer(settings.kafka_client_config())
    ledger = LedgerWriter(settings, settings, group=f"seen-{unique}")
    try:
        for event in (alive, joined):  # the newest first, the older in a later batch
            producer.produce(settings.topic_coverage, encode(event), event.key.encode())
            assert producer.flush(30) == 0
            deadline = time.monotonic() + 30
            while not ledger.step(1.0) and event is joined:
                assert time.monotonic() < deadline, "the ledger never wrote the join"
            if event is alive:
                ledger.step(2.0)
    finally:
        ledger.close()
    cluster, cql = connect(settings)
    try:
        row = cql.execute(
            f"SELECT last_seen FROM {settings.cassandra_keyspace}.coverage_sessions "
            "WHERE replica = 0 AND worker = 'w' AND session = %s",
            (session,),
        ).one()
    finally:
        cluster.shutdown()
    assert row is not None
    assert int(row.last_seen.replace(tzinfo=UTC).timestamp() * 1000) == now
