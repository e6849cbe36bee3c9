"""store/requests.py: batch planning, the concurrent window and the retry bound (over a session double), and
what Cassandra rejects as invalid handed back with its items instead of retried."""

from __future__ import annotations

from typing import Any

import pytest
from cassandra import InvalidRequest

from core.testing_cassandra import Call, FakeSession, fails_first
from store.requests import (
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


def _flaky(failures: int) -> FakeSession:
    """Fails each statement ``failures`` times (the driver's NoHostAvailable), then lets it succeed."""
    return FakeSession(fail=fails_first(failures, lambda: RuntimeError("NoHostAvailable")))


def test_executor_collects_failures_and_drains() -> None:
    session = _flaky(1)
    executor = ConcurrentExecutor(session, concurrency=4, timeout_s=1)
    for i in range(20):
        executor.submit(i)
    failed = executor.drain()
    assert sorted(s for s, _, _ in failed) == list(range(20))
    assert executor.drain() == []


def test_failed_writes_are_retried_with_backoff_until_they_succeed() -> None:
    session = _flaky(3)
    executor = ConcurrentExecutor(session, concurrency=8, timeout_s=1)
    for i in range(10):
        executor.submit(i)
    sleeps: list[float] = []
    retries = retry_failed(executor, executor.drain(), retry_s=60, sleep=sleeps.append)
    assert retries == 30
    assert len(session.attempts) == 10 and all(n == 4 for n in session.attempts.values())
    assert sleeps == [0.25, 0.5, 1.0]


def test_retrying_stops_loudly_after_the_bound() -> None:
    session = _flaky(10**9)
    executor = ConcurrentExecutor(session, concurrency=2, timeout_s=1)
    executor.submit("s")
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    with pytest.raises(CassandraWriteError, match=r"still failing after 5s.*NoHostAvailable"):
        retry_failed(executor, executor.drain(), retry_s=5, sleep=sleep, clock=lambda: now[0])
    assert now[0] == pytest.approx(5.0)


# -- requests Cassandra rejects as invalid: never retried, their records handed back -----------------------


class _Batch:
    """A stand-in for a BatchStatement of some items."""

    def __init__(self, items: list[Item]) -> None:
        self.items = items


def _invalid(statement: Any, message: str) -> InvalidRequest | None:
    """Cassandra's InvalidRequest (code 0x2200) for a statement named ``bad*`` or a batch holding one."""
    names = [i.statement for i in statement.items] if isinstance(statement, _Batch) else [statement]
    if any(str(n).startswith("bad") for n in names):
        return InvalidRequest(f"Error from server: code=2200 [Invalid query] message={message!r}")
    return None


def _rejecting(
    message: str = "Key length of 102400 is longer than maximum of 65535", flaky: int = 0
) -> FakeSession:
    """Rejects as invalid every statement named ``bad*`` and every batch holding one (``message``: the
    server's reason); fails a statement named ``flaky`` its first ``flaky`` times (OperationTimedOut)."""

    def fail(call: Call) -> BaseException | None:
        if call.statement == "flaky" and call.attempt <= flaky:
            return RuntimeError("OperationTimedOut")
        return _invalid(call.statement, message)

    return FakeSession(fail=fail)


def _write(session: Any, batches: list[list[Item]], reject: Any, sleep: Any = None) -> int:
    executor = ConcurrentExecutor(session, concurrency=4, timeout_s=1)
    for batch in batches:
        executor.submit(_Batch(batch) if len(batch) > 1 else batch[0].statement, batch)

    def no_sleep(seconds: float) -> None:
        raise AssertionError(f"an invalid request was retried (slept {seconds}s)")

    return retry_failed(executor, executor.drain(), retry_s=120, reject=reject, sleep=sleep or no_sleep)


def test_a_batch_rejected_as_invalid_is_split_and_only_the_bad_row_is_rejected_without_retry() -> None:
    good = [Item("r", ("t", b"p"), 10, f"good{i}", origins=(("value", 0, i),)) for i in range(3)]
    bad = Item("r", ("t", b"q"), 10, "bad", origins=(("huge", 0, 99),))
    session = _rejecting()
    rejected: list[tuple[list[Item], BaseException]] = []

    retries = _write(
        session, [[*good, bad], [good[0]]], lambda items, exc: rejected.append((list(items), exc))
    )

    assert retries == 0
    assert [(items, type(exc)) for items, exc in rejected] == [([bad], InvalidRequest)]
    assert "Key length" in str(rejected[0][1])
    singles = [s for s in session.statements if not isinstance(s, _Batch)]
    assert sorted(singles) == ["bad", "good0", "good0", "good1", "good2"]  # each sent alone once, no retry


def test_a_single_statement_rejected_as_invalid_goes_straight_to_reject() -> None:
    bad = Item("r", ("channel_blocks", b"q"), 10, "bad", origins=(("huge", 3, 7),))
    rejected: list[Item] = []
    assert _write(_rejecting(), [[bad]], lambda items, _exc: rejected.extend(items)) == 0
    assert rejected == [bad]


def test_a_rejection_of_the_schema_fails_loudly_instead_of_dead_lettering() -> None:
    bad = Item("r", ("channel_blocks", b"q"), 10, "bad", origins=(("v", 0, 1),))
    session = _rejecting("unconfigured table channel_blocks")
    with pytest.raises(
        CassandraWriteError, match=r"rejected a write to channel_blocks as invalid.*unconfigured"
    ):
        _write(session, [[bad]], lambda _items, _exc: None)


def test_without_a_reject_an_invalid_request_fails_loudly_and_at_once() -> None:
    executor = ConcurrentExecutor(_rejecting(), concurrency=2, timeout_s=1)
    executor.submit("bad")
    with pytest.raises(CassandraWriteError, match="as invalid"):
        retry_failed(executor, executor.drain(), retry_s=120, sleep=lambda s: pytest.fail(f"slept {s}"))


def test_other_failures_are_still_retried_next_to_a_rejected_one() -> None:
    session = _rejecting(flaky=2)
    sleeps: list[float] = []
    rejected: list[Item] = []
    items = [
        Item("r", ("t", bytes([i])), 1, name, origins=(name,)) for i, name in enumerate(("bad", "flaky"))
    ]
    retries = _write(session, [[items[0]], [items[1]]], lambda it, _e: rejected.extend(it), sleeps.append)
    assert (retries, sleeps, rejected) == (2, [0.25, 0.5], [items[0]])
    assert session.statements.count("bad") == 1
