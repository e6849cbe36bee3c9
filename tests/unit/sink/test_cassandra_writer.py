"""Batch planning, the concurrent window and the retry bound (with a stand-in session)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from sink.cassandra_writer import (
    BatchLimits,
    CassandraWriteError,
    ConcurrentExecutor,
    Item,
    plan_batches,
    retry_failed,
)


def _item(replicas: str, partition: str, size: int = 100) -> Item:
    return Item(replicas, ("t", partition.encode()), size, f"{replicas}/{partition}")


def test_rows_of_one_partition_share_a_batch_up_to_the_row_limit() -> None:
    items = [_item("r1", "p") for _ in range(25)]
    batches = plan_batches(items, BatchLimits(max_rows=10, max_partitions=10, max_bytes=10**6))
    assert [len(b) for b in batches] == [10, 10, 5]


def test_batches_never_mix_replica_sets_and_respect_partition_and_byte_limits() -> None:
    items = [_item(f"r{i % 2}", f"p{i}") for i in range(40)]
    batches = plan_batches(items, BatchLimits(max_rows=100, max_partitions=5, max_bytes=10**6))
    for batch in batches:
        assert len({i.replicas for i in batch}) == 1
        assert len({i.partition for i in batch}) <= 5
    assert sum(len(b) for b in batches) == 40
    by_bytes = plan_batches([_item("r", f"p{i}", 400) for i in range(10)], BatchLimits(100, 100, 1000))
    assert [len(b) for b in by_bytes] == [2, 2, 2, 2, 2]


def test_an_oversized_row_still_goes_out_alone() -> None:
    assert [len(b) for b in plan_batches([_item("r", "p", 10**6)], BatchLimits())] == [1]


class _Future:
    def __init__(self, error: BaseException | None) -> None:
        self.error = error

    def add_callbacks(self, callback: Any, errback: Any, errback_args: tuple[Any, ...] = ()) -> None:
        def finish() -> None:
            if self.error is None:
                callback(None)
            else:
                errback(self.error, *errback_args)

        threading.Timer(0.001, finish).start()


class _Session:
    """Fails each statement ``failures`` times, then succeeds; tracks the requests in flight."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.seen: dict[Any, int] = {}
        self.max_in_flight = 0
        self._in_flight = 0
        self._lock = threading.Lock()

    def execute_async(self, statement: Any, timeout: float) -> _Future:
        del timeout
        with self._lock:
            self.seen[statement] = self.seen.get(statement, 0) + 1
            fail = self.seen[statement] <= self.failures
        return _Future(RuntimeError("NoHostAvailable") if fail else None)


def test_executor_collects_failures_and_drains() -> None:
    session = _Session(failures=1)
    executor = ConcurrentExecutor(session, concurrency=4, timeout_s=1)
    for i in range(20):
        executor.submit(i)
    failed = executor.drain()
    assert sorted(s for s, _ in failed) == list(range(20))
    assert executor.drain() == []


def test_failed_writes_are_retried_with_backoff_until_they_succeed() -> None:
    session = _Session(failures=3)
    executor = ConcurrentExecutor(session, concurrency=8, timeout_s=1)
    for i in range(10):
        executor.submit(i)
    sleeps: list[float] = []
    retries = retry_failed(executor, executor.drain(), retry_s=60, sleep=sleeps.append)
    assert retries == 30
    assert all(n == 4 for n in session.seen.values())
    assert sleeps == [0.25, 0.5, 1.0]


def test_retrying_stops_loudly_after_the_bound() -> None:
    session = _Session(failures=10**9)
    executor = ConcurrentExecutor(session, concurrency=2, timeout_s=1)
    executor.submit("s")
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    with pytest.raises(CassandraWriteError, match=r"still failing after 5s.*NoHostAvailable"):
        retry_failed(executor, executor.drain(), retry_s=5, sleep=sleep, clock=lambda: now[0])
    assert now[0] == pytest.approx(5.0)
