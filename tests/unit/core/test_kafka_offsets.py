"""Offsets asked again while a partition's leadership moves (:func:`core.kafka_offsets.offsets_at`): the
answers of a consumer double stand in for the broker's (the real requests: tests/integration/core)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from prometheus_client import REGISTRY

from core import kafka_offsets

TOPIC = "t"


class Broker:
    """``offsets_for_times`` answers from a script: per call, the partitions to fail and with what (an
    int code), or an exception for the whole request; then each partition's offset is 10 x its number."""

    def __init__(self, script: list[dict[int, int] | KafkaException]) -> None:
        self.script: Iterator[dict[int, int] | KafkaException] = iter(script)
        self.asked: list[list[int]] = []
        self.timeouts: list[float] = []
        self.refreshed = 0

    def offsets_for_times(self, asked: list[TopicPartition], timeout: float) -> list[Any]:
        assert timeout > 0
        self.timeouts.append(timeout)
        self.asked.append([tp.partition for tp in asked])
        step = next(self.script, {})
        if isinstance(step, KafkaException):
            raise step
        out: list[Any] = []
        for tp in asked:
            code = step.get(tp.partition)
            if code is None:
                out.append(TopicPartition(TOPIC, tp.partition, 10 * tp.partition))
            else:  # a TopicPartition's error is set by the client only
                out.append(SimpleNamespace(partition=tp.partition, offset=-1, error=KafkaError(code)))
        return out

    def list_topics(self, topic: str, timeout: float) -> Any:
        assert topic == TOPIC
        self.refreshed += 1
        return None


@pytest.fixture(autouse=True)
def _short_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kafka_offsets, "RETRY_PAUSE_S", 0.01)


def test_a_partition_whose_leader_moved_is_asked_again_alone_after_the_client_learns_the_leaders() -> None:
    broker = Broker([{1: KafkaError.FENCED_LEADER_EPOCH, 2: KafkaError.NOT_LEADER_FOR_PARTITION}, {2: 78}])
    assert kafka_offsets.offsets_at(broker, TOPIC, [0, 1, 2, 3], -1, 5.0) == {0: 0, 1: 10, 2: 20, 3: 30}
    assert broker.asked == [[0, 1, 2, 3], [1, 2], [2]]
    assert broker.refreshed == 2


def test_a_request_waits_a_short_while_and_one_that_timed_out_is_sent_again() -> None:
    broker = Broker([KafkaException(KafkaError(KafkaError._TIMED_OUT)), {}])
    assert kafka_offsets.bounds(broker, TOPIC, [4, 5], 30.0) == {4: (40, 40), 5: (50, 50)}
    assert broker.asked == [[4, 5], [4, 5], [4, 5]]
    assert max(broker.timeouts) <= kafka_offsets.ATTEMPT_S < 30.0  # not 30 s on a leader that hangs


def _asked_again(name: str) -> float:
    value = REGISTRY.get_sample_value("chatlog_kafka_offsets_asked_again_total", {"error": name})
    return value or 0.0


@pytest.mark.parametrize("code", [KafkaError._DESTROY_BROKER, KafkaError._NODE_UPDATE, KafkaError._TRANSPORT])
def test_a_request_to_a_broker_the_client_dropped_or_lost_is_sent_again_and_counted(code: int) -> None:
    name = KafkaError(code).name()
    before = _asked_again(name)
    broker = Broker([KafkaException(KafkaError(code, "Failed to get offsets")), {}])
    assert kafka_offsets.bounds(broker, TOPIC, [0, 1], 30.0) == {0: (0, 0), 1: (10, 10)}
    assert broker.asked == [[0, 1], [0, 1], [0, 1]]
    assert broker.refreshed == 1
    assert _asked_again(name) == before + 1


def test_an_error_the_move_does_not_explain_is_raised_at_once_and_not_counted() -> None:
    before = _asked_again("FENCED_LEADER_EPOCH")
    broker = Broker([{0: KafkaError.FENCED_LEADER_EPOCH, 1: KafkaError._UNKNOWN_PARTITION}])
    with pytest.raises(KafkaException) as raised:
        kafka_offsets.offsets_at(broker, TOPIC, [0, 1], -1, 5.0)
    assert raised.value.args[0].code() == KafkaError._UNKNOWN_PARTITION
    assert broker.asked == [[0, 1]]
    broker = Broker([KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))])
    with pytest.raises(KafkaException):
        kafka_offsets.ends(broker, TOPIC, [0], 5.0)
    assert broker.asked == [[0]]
    assert _asked_again("FENCED_LEADER_EPOCH") == before  # raised before any ask-again


def test_a_leader_that_never_settles_fails_with_its_error_when_the_time_is_up() -> None:
    broker = Broker([{0: KafkaError.FENCED_LEADER_EPOCH}] * 1000)
    t0 = time.monotonic()
    with pytest.raises(KafkaException) as raised:
        kafka_offsets.offsets_at(broker, TOPIC, [0, 1], -1, 0.3)
    assert raised.value.args[0].code() == KafkaError.FENCED_LEADER_EPOCH
    assert 0.2 <= time.monotonic() - t0 < 2.0
    assert len(broker.asked) > 3
    assert all(asked == [0] for asked in broker.asked[1:])


def test_both_offsets_of_bounds_are_asked_within_the_one_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kafka_offsets, "RETRY_PAUSE_S", 0.2)
    leader_moving = {0: KafkaError.LEADER_NOT_AVAILABLE}
    broker = Broker([leader_moving, leader_moving, {}, {}])  # the first offsets take two pauses (0.4 s)
    assert kafka_offsets.bounds(broker, TOPIC, [0], 1.0) == {0: (0, 0)}
    assert len(broker.timeouts) == 4
    assert broker.timeouts[-1] <= 0.65  # the end offsets get what is left of the 1 s, not 1 s again
