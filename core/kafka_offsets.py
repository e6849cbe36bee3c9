"""A topic's partition offsets, asked of Kafka in one ListOffsets request for all the partitions at once
(``Consumer.offsets_for_times`` at a time, at ``OFFSET_BEGINNING`` or at ``OFFSET_END``).

librdkafka's ``get_watermark_offsets`` makes two requests for each partition, one after the other: 128
round trips for the 64 buckets of the channels topic (on the local broker 37.6-42.4 ms against 2.4-7.7 ms
for the two requests of :func:`bounds`, the same offsets)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable
from typing import Any, Final

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, KafkaError, KafkaException, TopicPartition
from prometheus_client import Counter

LEADER_MOVING: Final = frozenset(
    {
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.FENCED_LEADER_EPOCH,
        KafkaError.UNKNOWN_LEADER_EPOCH,
        KafkaError.OFFSET_NOT_AVAILABLE,
        KafkaError.REPLICA_NOT_AVAILABLE,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError._TIMED_OUT,
        KafkaError._TRANSPORT,
        KafkaError._DESTROY_BROKER,
        KafkaError._NODE_UPDATE,
    }
)
"""A partition's answer while its leadership moves (a broker died, hung or came back): the client's idea of
the leader or its epoch is stale, or the new leader does not know its high watermark yet. Asked again a
moment later, the partition answers; librdkafka hands these to the caller of ``offsets_for_times`` as they
are (a member's rebalance failed on ``FENCED_LEADER_EPOCH`` right after a broker's hang). A request sent to
a broker the client then drops from its metadata (a broker killed leaves the cluster's metadata until it
is back) fails with ``_DESTROY_BROKER`` (a member's rebalance failed so after a leader's kill -9, and its
ingester stopped); one whose broker changed address with ``_NODE_UPDATE``."""
RETRY_PAUSE_S: Final = 0.2
"""The pause before a partition refused while its leader moves is asked again."""
ASKED_AGAIN: Final = Counter(
    "chatlog_kafka_offsets_asked_again",
    "Offsets requests (or their partitions) asked again after an error of a leadership that moves "
    "(core.kafka_offsets.LEADER_MOVING), by the error: a member's assignment that met a broker's fault.",
    ["error"],
)
"""Each ask-again of :func:`offsets_at`, by the error that caused it (one of :data:`LEADER_MOVING`'s: a few
values), on the process's default registry (an ingester's ``/metrics`` shows it): a run can tell whether
its members' offsets requests met a fault and were asked again, which no log line says (a line per retry
would be up to 300 a minute during a broker's fault)."""
ATTEMPT_S: Final = 2.0
"""How long one request may wait for its answer within the caller's timeout: a leader that hangs keeps its
connection open and never answers, and the client keeps asking it until it learns of the new leader (a
member's request waited out its 10 s on a hung broker the controller had fenced seconds before)."""


def offsets_at(
    consumer: Any, topic: str, partitions: Iterable[int], at: int, timeout: float
) -> dict[int, int]:
    """Each partition's offset at ``at``: a time in ms (the first record of that time or later; -1 when
    there is none), ``OFFSET_BEGINNING`` (its first offset) or ``OFFSET_END`` (its end). A partition answered
    with an error of :data:`LEADER_MOVING` (or a request that failed so, or found no answer within
    :data:`ATTEMPT_S`) is asked again until ``timeout`` has passed. Raises ``KafkaException`` for any
    other error, or for that one at the end of ``timeout``."""
    deadline = time.monotonic() + timeout
    left = list(partitions)
    found: dict[int, int] = {}
    while left:
        try:
            answers = consumer.offsets_for_times(
                [TopicPartition(topic, p, at) for p in left],
                timeout=max(0.1, min(ATTEMPT_S, deadline - time.monotonic())),
            )
        except KafkaException as exc:
            _pause_or_raise(consumer, topic, exc, deadline)
            continue
        failed = [tp for tp in answers if tp.error is not None]
        found.update((tp.partition, tp.offset) for tp in answers if tp.error is None)
        for tp in failed:  # one the leader's move does not explain first: it is the one to report
            if tp.error.code() not in LEADER_MOVING:
                raise KafkaException(tp.error)
        if failed:
            _pause_or_raise(consumer, topic, KafkaException(failed[0].error), deadline)
        left = [tp.partition for tp in failed]
    return found


def _pause_or_raise(consumer: Any, topic: str, exc: KafkaException, deadline: float) -> None:
    """When ``exc`` is an error of :data:`LEADER_MOVING` and there is time left to ask again: pause, and
    have the client learn the topic's leaders anew (its cached ones are what the broker refused). Else
    raise ``exc``."""
    err = exc.args[0] if exc.args else None
    if not isinstance(err, KafkaError) or err.code() not in LEADER_MOVING:
        raise exc
    if time.monotonic() + RETRY_PAUSE_S >= deadline:
        raise exc
    ASKED_AGAIN.labels(err.name()).inc()
    time.sleep(RETRY_PAUSE_S)
    with contextlib.suppress(KafkaException):  # no answer now: the next ask fails and says so
        consumer.list_topics(topic, timeout=max(0.1, min(1.0, deadline - time.monotonic())))


def ends(consumer: Any, topic: str, partitions: Iterable[int], timeout: float) -> dict[int, int]:
    """Each partition's end offset now (the offset its next record gets)."""
    return offsets_at(consumer, topic, partitions, OFFSET_END, timeout)


def bounds(
    consumer: Any, topic: str, partitions: Iterable[int], timeout: float
) -> dict[int, tuple[int, int]]:
    """Each partition's first and end offsets now, in two requests, both within ``timeout``."""
    wanted = list(partitions)
    deadline = time.monotonic() + timeout
    low = offsets_at(consumer, topic, wanted, OFFSET_BEGINNING, timeout)
    high = ends(consumer, topic, wanted, max(0.1, deadline - time.monotonic()))
    return {p: (low[p], high[p]) for p in high}
