"""How a newly assigned bucket is read: the loader reads it from its beginning to the end offset it had at
assignment, the member follows it from there, and what the member reads before the loader is done waits."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any, cast

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError

from core.testing import FakeConsumer, FakeMessage
from ingest.membership import Membership, Snapshot

TOPIC = "chan"


def _record(partition: int, offset: int, login: str, present: bool = True) -> FakeMessage:
    return FakeMessage(TOPIC, b"{}" if present else None, login.encode(), partition=partition, offset=offset)


class Loader(FakeConsumer):
    """The loader's consumer: what it was assigned from which offset."""

    def __init__(self, conf: dict[str, Any] | None = None) -> None:
        super().__init__(conf)
        self.starts: list[tuple[int, int]] = []

    def incremental_assign(self, partitions: list[Any]) -> None:
        self.starts += [(p.partition, p.offset) for p in partitions]
        super().incremental_assign(partitions)


class Assigning(FakeConsumer):
    """The member's consumer: the offsets it was told to follow each bucket from."""

    def __init__(self) -> None:
        super().__init__()
        self.starts: dict[int, int] = {}

    def incremental_assign(self, partitions: list[Any]) -> None:
        self.starts.update({p.partition: p.offset for p in partitions})
        super().incremental_assign(partitions)


@pytest.fixture
def pair() -> Iterator[tuple[Membership, Assigning, Loader, list[Snapshot]]]:
    member, loader = Assigning(), Loader()
    made = iter([member, loader])
    snaps: list[Snapshot] = []
    m = Membership(
        {},
        TOPIC,
        loader_conf={},
        handoff_timeout_s=10,
        consumer_factory=lambda _c: cast(Consumer, next(made)),
    )
    m.start(snaps.append)
    yield m, member, loader, snaps
    m.close(timeout=5)


def _until(what: str, check: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_the_loader_reads_to_the_end_and_the_members_records_wait_for_it(
    pair: tuple[Membership, Assigning, Loader, list[Snapshot]],
) -> None:
    m, member, loader, _snaps = pair
    loader.watermarks = {1: (0, 3), 2: (4, 4)}
    member.assign(TOPIC, [1, 2])
    _until("the assignment", lambda: m.snapshot().owned == (1, 2))
    assert member.starts == {1: 3, 2: 4}, "the member follows each bucket from its end at assignment"
    assert loader.starts == [(1, OFFSET_BEGINNING)], "the empty bucket needs no loading"
    assert m.snapshot().loading == (1,)
    member.feed(_record(1, 3, "c"), _record(1, 4, "b", present=False))  # newer than what the loader reads
    _until("the member's records taken", lambda: member.pending() == 0)
    loader.feed(_record(1, 0, "a"), _record(1, 1, "b"))
    _until("the loader's records taken", lambda: loader.pending() == 0)
    time.sleep(0.1)
    assert m.snapshot().loading == (1,) and m.snapshot().wanted == frozenset()
    loader.feed(_record(1, 2, "d"), _record(1, 3, "late"))  # offset 3 is the member's: ignored here
    _until("loaded", lambda: m.snapshot().loading == ())
    assert m.snapshot().wanted == {"a", "c", "d"}  # b: added by the loader, removed by the member after
    assert loader.assignment == set(), "a loaded bucket is left to the member"
    member.feed(_record(1, 5, "e"))
    _until("a record after loading", lambda: "e" in m.snapshot().wanted)


def test_an_end_left_by_compaction_is_seen_at_the_partition_end_event(
    pair: tuple[Membership, Assigning, Loader, list[Snapshot]],
) -> None:
    m, member, loader, _snaps = pair
    loader.watermarks = {0: (0, 6)}
    member.assign(TOPIC, [0])
    _until("the assignment", lambda: m.snapshot().loading == (0,))
    loader.feed(_record(0, 1, "a"), _record(0, 3, "b"))  # 4 and 5 compacted away
    loader.feed(FakeMessage(TOPIC, partition=0, offset=6, error=KafkaError(KafkaError._PARTITION_EOF)))
    _until("loaded", lambda: m.snapshot().loading == ())
    assert m.snapshot().wanted == {"a", "b"} and m.stats.consumer_errors == 0


def test_a_bucket_revoked_while_loading_is_dropped_by_the_loader(
    pair: tuple[Membership, Assigning, Loader, list[Snapshot]],
) -> None:
    m, member, loader, _snaps = pair
    loader.watermarks = {5: (0, 10)}
    member.assign(TOPIC, [5])
    _until("the loader assigned", lambda: loader.assignment == {(TOPIC, 5)})
    member.feed(_record(5, 10, "x"))
    member.revoke(TOPIC, [5])
    _until("the loader unassigned", lambda: loader.assignment == set())
    assert m.snapshot().owned == () and m.snapshot().wanted == frozenset()
    member.assign(TOPIC, [5])  # owned again: loaded from the beginning again, nothing of before kept
    _until(
        "reloading", lambda: loader.starts[-1:] == [(5, OFFSET_BEGINNING)] and m.snapshot().loading == (5,)
    )
    loader.feed(_record(5, 9, "z"))
    _until("loaded", lambda: m.snapshot().loading == ())
    assert m.snapshot().wanted == {"z"}
