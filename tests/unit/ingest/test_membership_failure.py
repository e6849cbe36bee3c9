"""A failed rebalance callback stops the member and, with it, the worker (issue 13, item 9).

librdkafka goes on with its own idea of the assignment when a callback fails (confluent-kafka even
assigns by itself when the callback did not), so a swallowed error leaves buckets owned and unlogged.
"""

from __future__ import annotations

import asyncio
import logging
import time
from types import SimpleNamespace
from typing import Any, cast

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from core.testing import FakeConsumer
from ingest.membership import Membership, RebalanceFailed
from ingest.worker import Worker


class FailingAssignConsumer(FakeConsumer):
    """A consumer whose incremental_assign fails (librdkafka's "Erroneous state")."""

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        raise KafkaException(KafkaError(KafkaError._STATE, "Erroneous state"))


class RefusingConsumer(FakeConsumer):
    """A loader whose broker answers one partition's offsets with ``error``, ``times`` times (or always)."""

    def __init__(self, error: KafkaError, times: int | None = None) -> None:
        super().__init__()
        self.error = error
        self.times = times

    def offsets_for_times(
        self, partitions: list[TopicPartition], timeout: float | None = None
    ) -> list[TopicPartition]:
        out = super().offsets_for_times(partitions, timeout)
        if self.times is not None:
            if self.times == 0:
                return out
            self.times -= 1
        failed = SimpleNamespace(  # a TopicPartition's error is set by the client only
            topic=out[-1].topic, partition=out[-1].partition, offset=-1, error=self.error
        )
        return [*out[:-1], cast(TopicPartition, failed)]


def _wait_until_dead(member: Membership, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while member.alive and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_failed_incremental_assign_stops_the_member_with_the_reason() -> None:
    consumers: list[FailingAssignConsumer] = []

    def factory(conf: dict[str, Any]) -> Consumer:
        consumers.append(FailingAssignConsumer(conf))
        consumers[-1].assign("chan", [3, 7])  # the first consume() runs on_assign
        return cast(Consumer, consumers[-1])

    member = Membership({}, "chan", loader_conf={}, handoff_timeout_s=10, consumer_factory=factory)
    member.start(lambda _snap: None)
    _wait_until_dead(member)
    assert not member.alive, "the member must stop, not go on polling with buckets it does not log"
    assert isinstance(member.failure, RebalanceFailed)
    assert "on_assign" in str(member.failure) and "[3, 7]" in str(member.failure)
    assert "Erroneous state" in str(member.failure) and "\n" not in str(member.failure)
    assert member.stats.callback_errors == 1
    assert consumers[0].closed and consumers[0].polls == 1
    assert member.snapshot().owned == ()


def _member_with(loader: FakeConsumer) -> tuple[Membership, FakeConsumer]:
    member_consumer = FakeConsumer()
    made = iter([member_consumer, loader])
    member = Membership(
        {},
        "chan",
        loader_conf={},
        handoff_timeout_s=10,
        consumer_factory=lambda _c: cast(Consumer, next(made)),
    )
    member_consumer.assign("chan", [1, 2])
    member.start(lambda _snap: None)
    return member, member_consumer


def test_a_bucket_whose_end_cannot_be_read_stops_the_member() -> None:
    refused = KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed")
    member, member_consumer = _member_with(RefusingConsumer(refused))
    _wait_until_dead(member)
    assert isinstance(member.failure, RebalanceFailed) and "Topic authorization failed" in str(member.failure)
    assert member_consumer.assignment == set() and member.snapshot().owned == ()


def test_a_bucket_whose_leader_moves_is_asked_again_and_the_member_goes_on() -> None:
    """A member that rejoins after its broker hung asks while leaderships move (FENCED_LEADER_EPOCH once
    stopped an ingester in make chaos-cluster): it asks again, and owns the buckets."""
    loader = RefusingConsumer(KafkaError(KafkaError.FENCED_LEADER_EPOCH), times=2)
    member, member_consumer = _member_with(loader)
    deadline = time.monotonic() + 5
    while member.snapshot().owned != (1, 2) and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        assert member.alive and member.failure is None
        assert member.snapshot().owned == (1, 2) and member_consumer.assignment == {("chan", 1), ("chan", 2)}
        assert loader.times == 0 and loader.metadata_asked == 2  # the leaders learnt anew before each ask
    finally:
        member.close(timeout=5)


def test_the_worker_stops_on_a_failed_member_with_one_error_line(caplog: pytest.LogCaptureFixture) -> None:
    """``Worker._watch`` ends (so ``Worker.run`` returns exit code 1) and says why in one line."""
    failure = RebalanceFailed("rebalance callback on_assign failed for buckets [3]: KafkaException: x")
    worker = SimpleNamespace(
        membership=SimpleNamespace(alive=False, failure=failure), producer=SimpleNamespace(fatal=None)
    )
    with caplog.at_level(logging.ERROR, logger="ingest.worker"):
        asyncio.run(asyncio.wait_for(Worker._watch(cast(Worker, worker)), timeout=5))
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [f"the membership consumer stopped: {failure}"]
