"""The worker driven with doubles (no Kafka, no IRC, no sockets): the real membership over a scripted
consumer, the real producer over a librdkafka double, a pool that confirms what it is asked to join."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import cast

import msgspec
import pytest
from confluent_kafka import Consumer

from core.testing import FakeConsumer, FakeMessage, FakeProducer, eventually
from ingest import status
from ingest.coverage import CoverageTracker
from ingest.membership import Membership
from ingest.producer import IngestProducer
from ingest.settings import IngestSettings
from ingest.worker import Worker
from schemas import chat_event
from schemas.coverage import JOINED, LEFT, CoverageEvent, decode_records
from tests.unit.ingest.worker_doubles import CHANNELS, MetricsDouble, PoolDouble, WatchDouble

PRIVMSG = "@id=m{n};tmi-sent-ts=1700000000000 :u!u@u PRIVMSG #{channel} :hello {n}"


@dataclass
class Harness:
    worker: Worker
    settings: IngestSettings
    kafka: FakeProducer
    group: FakeConsumer
    pool: PoolDouble
    watch: WatchDouble
    metrics: MetricsDouble
    asked_about: list[str]

    def load(self, buckets: dict[int, list[str]]) -> None:
        """The group assigns ``buckets``; one poll then reads their partitions (these channels) to the end."""
        self.group.assign(CHANNELS, buckets)
        records = [
            FakeMessage(CHANNELS, b"{}", ch.encode(), partition=b) for b, chs in buckets.items() for ch in chs
        ]
        self.group.feed(*records, *(FakeMessage.end_of_partition(CHANNELS, b) for b in buckets))

    def coverage(self) -> list[CoverageEvent]:
        events, bad = decode_records(self.kafka.sent_to(self.settings.topic_coverage))
        assert bad == 0
        return [e for e in events if e.state != "alive"]

    def last_beat(self) -> status.Heartbeat:
        beat = self.statuses()[-1]
        assert beat is not None
        return beat

    def statuses(self) -> list[status.Heartbeat | None]:
        return [
            None if m.value() is None else msgspec.json.decode(m.value() or b"", type=status.Heartbeat)
            for m in self.kafka.sent_to(self.settings.topic_status)
        ]


def make_harness(*, drain_s: float = 0.5) -> Harness:
    """``drain_s``: at stop, channels nobody confirmed within it are parted (a gap risk, logged)."""
    settings = IngestSettings(
        ingest_worker_id="w1",
        ingest_replica=2,
        topic_channels=CHANNELS,
        topic_messages="t.messages",
        topic_status="t.status",
        topic_coverage="t.coverage",
        topic_deadletter="t.dl",
        ingest_heartbeat_s=0.05,
        ingest_handoff_timeout_s=60,
        ingest_shutdown_drain_s=drain_s,
    )
    kafka = FakeProducer()
    producer = IngestProducer(settings, "w1", producer=kafka)
    kafka.default_cb = producer._on_delivery  # what producer_config() wires into librdkafka
    group = FakeConsumer()
    membership = Membership(
        {}, CHANNELS, loader_conf={}, handoff_timeout_s=settings.ingest_handoff_timeout_s,
        consumer_factory=lambda _conf: cast(Consumer, group),
    )  # fmt: skip
    pool, watch, metrics, asked_about = PoolDouble(producer.on_lines), WatchDouble(), MetricsDouble(), []

    def nothing_assigned(member: str) -> bool:
        asked_about.append(member)
        return True

    worker = Worker(
        settings,
        producer=producer,
        pool=pool,
        membership=membership,
        watch=watch,
        coverage=CoverageTracker(2, "w1", 1_700_000_000_000),
        nothing_assigned=nothing_assigned,
        serve_metrics=metrics.serve,
    )
    return Harness(worker, settings, kafka, group, pool, watch, metrics, asked_about)


@pytest.fixture
def harness() -> Iterator[Harness]:
    h = make_harness()
    yield h
    h.worker.membership.close(timeout=5)  # when a test failed before the worker stopped


def drive(h: Harness, scenario: Callable[[asyncio.Event], Awaitable[None]]) -> int:
    """Run the worker with ``scenario`` beside it; the scenario sets the event to stop it (as SIGTERM)."""

    async def main() -> int:
        stop = asyncio.Event()
        run = asyncio.create_task(h.worker.run(stop))
        try:
            await scenario(stop)
            return await asyncio.wait_for(run, 15)
        finally:
            run.cancel()

    return asyncio.run(asyncio.wait_for(main(), 30))


def test_an_assigned_bucket_is_joined_once_read_and_its_lines_heartbeats_and_coverage_reach_kafka(
    harness: Harness,
) -> None:
    h = harness

    async def scenario(stop: asyncio.Event) -> None:
        await eventually(lambda: h.worker.membership.member_id == "member-1", 5, "the group joined")
        assert h.worker.ready() and h.asked_about == ["member-1"]  # no bucket: the group has none for me
        h.load({3: ["a", "b"], 5: ["c"]})
        await eventually(lambda: h.pool.wanted == {"a", "b", "c"}, 5, "the buckets' channels")
        assert h.pool.changes == [{"a", "b", "c"}]  # once the buckets were read, not channel by channel
        assert h.worker.ready() and h.asked_about == ["member-1"]  # owns read buckets: no need to ask
        h.pool.on_lines(
            [PRIVMSG.format(n=1, channel="a"), PRIVMSG.format(n=2, channel="c")], 1_700_000_000_500
        )
        await eventually(lambda: len(h.coverage()) == 3, 5, "coverage events of the confirmed channels")
        await eventually(lambda: h.last_beat().counts["events"] == 2, 5, "a heartbeat after the lines")
        assert h.last_beat().confirmed == ["a", "b", "c"] and h.last_beat().buckets == [3, 5]
        registry = h.metrics.registries[0]
        labels = {"worker": "w1", "replica": "2"}
        assert registry.get_sample_value("chatlog_ingest_events_produced_total", labels) == 2
        assert registry.get_sample_value("chatlog_ingest_channels_wanted", labels) == 3
        stop.set()

    assert drive(h, scenario) == 0
    events = [chat_event.decode(m.value() or b"") for m in h.kafka.sent_to("t.messages")]
    assert [(e.channel, e.message_id, e.ingester) for e in events] == [("a", "m1", "w1"), ("c", "m2", "w1")]
    assert [(e.channel, e.state, e.replica, e.worker) for e in h.coverage()[:3]] == [
        ("a", JOINED, 2, "w1"), ("b", JOINED, 2, "w1"), ("c", JOINED, 2, "w1"),
    ]  # fmt: skip
    beats = h.statuses()
    assert beats[-1] is None  # the tombstone, after a last "stopped" heartbeat
    last = beats[-2]
    assert last is not None and last.state == status.STOPPED and last.buckets == [3, 5]
    assert last.metrics_port == 9999 and last.counts["events"] == 2
    assert all(m.key() == b"r2/w1" for m in h.kafka.sent_to("t.status"))
    assert h.watch.started and h.watch.closed and h.metrics.stopped
    assert h.kafka.delivered == h.kafka.produced  # flushed at exit


def test_a_revoked_bucket_is_logged_until_the_new_owner_confirms_each_channel(harness: Harness) -> None:
    h = harness

    async def scenario(stop: asyncio.Event) -> None:
        h.load({3: ["a", "b"], 5: ["c"]})
        await eventually(lambda: h.pool.wanted == {"a", "b", "c"}, 5, "the buckets' channels")
        h.group.revoke(CHANNELS, [3])
        await eventually(lambda: h.worker.snapshot.overlap == (3,), 5, "the revocation")
        await asyncio.sleep(0.3)
        assert h.pool.wanted == {"a", "b", "c"}, "revoked channels must stay joined until confirmed"
        h.worker.membership.confirm({"a"})  # what the confirmation watch does for another worker's JOIN
        await eventually(lambda: h.pool.wanted == {"b", "c"}, 5, "the confirmed channel parted")
        h.worker.membership.confirm({"b", "zzz"})
        await eventually(lambda: h.pool.wanted == {"c"}, 5, "the second confirmed channel parted")
        await eventually(lambda: len(h.coverage()) == 5, 5, "the hand-offs on the coverage topic")
        stop.set()

    assert drive(h, scenario) == 0
    assert h.pool.changes[:3] == [{"a", "b", "c"}, {"b", "c"}, {"c"}]
    left = [(e.channel, e.reason) for e in h.coverage() if e.state == LEFT]
    assert left[:2] == [("a", "handed-off"), ("b", "handed-off")]


def test_on_stop_it_leaves_the_group_and_parts_once_the_new_owners_confirm() -> None:
    h = make_harness(drain_s=30)
    took: list[float] = []

    async def scenario(stop: asyncio.Event) -> None:
        h.load({1: ["a", "b"]})
        await eventually(lambda: h.pool.wanted == {"a", "b"}, 5, "the bucket's channels")
        await eventually(lambda: len(h.coverage()) == 2, 5, "the joins on the coverage topic")
        stop.set()
        started = time.monotonic()
        membership = h.worker.membership
        await eventually(lambda: membership.handoff_state()[0] == 2, 5, "the group left, channels kept")
        assert h.pool.closed_with_part is None and h.pool.wanted == {"a", "b"}
        membership.confirm({"a", "b"})
        await eventually(lambda: h.pool.closed_with_part is not None, 5, "the pool closed")
        took.append(time.monotonic() - started)

    assert drive(h, scenario) == 0
    assert took[0] < h.settings.ingest_shutdown_drain_s / 2  # did not wait for the drain limit
    assert h.group.closed and h.group.assignment == set()
    assert h.pool.closed_with_part is True and h.pool.changes[-1] == frozenset()
    assert [(e.channel, e.state, e.reason) for e in h.coverage()] == [
        ("a", JOINED, ""), ("b", JOINED, ""), ("a", LEFT, "stopped"), ("b", LEFT, "stopped"),
    ]  # fmt: skip


def test_on_stop_without_an_irc_connection_it_does_not_wait_for_the_drain_limit() -> None:
    h = make_harness(drain_s=30)
    h.pool.server_up = False  # the IRC server is down: nothing is joined, nothing is logged here
    took: list[float] = []

    async def scenario(stop: asyncio.Event) -> None:
        h.load({1: ["a", "b"]})
        await eventually(lambda: h.pool.wanted == {"a", "b"}, 5, "the bucket's channels")
        stop.set()
        started = time.monotonic()
        await eventually(lambda: h.pool.closed_with_part is not None, 10, "the pool closed")
        took.append(time.monotonic() - started)

    assert drive(h, scenario) == 0
    assert took[0] < 5  # not the 30 s drain: no successor's confirmation keeps anything logged here


def test_a_fatal_producer_error_ends_the_run_with_exit_code_1_without_parting(harness: Harness) -> None:
    h = harness

    async def scenario(stop: asyncio.Event) -> None:
        h.load({0: ["a"]})
        await eventually(lambda: h.pool.wanted == {"a"}, 5, "the bucket's channel")
        h.worker.producer.fatal = "Fatal error: broker fenced the producer"

    assert drive(h, scenario) == 1
    assert h.pool.closed_with_part is False
    assert h.statuses()[-1] is None and h.group.closed
