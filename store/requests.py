"""Requests to Cassandra from a writer: a bounded window of concurrent requests, token-aware unlogged batches,
retries with backoff, and what Cassandra rejects as invalid handed back instead of retried.

* Token-aware unlogged batches (:func:`plan_batches`): statements are grouped by the replicas that own their
  partition, then packed: at most ``max_partitions`` partitions and about ``max_bytes`` per batch. A batch
  is routed (TokenAwarePolicy) to a replica that owns every partition in it, so Cassandra does the work of
  many single inserts for the price of one request.
* A bounded window of concurrent requests (:class:`ConcurrentExecutor`), and failed requests retried with
  exponential backoff until ``retry_s`` has passed since the first failure; then
  :class:`CassandraWriteError`, which fails the micro-batch and so the query, loudly. Every write is
  idempotent (a block's key is its lines' ids), so retrying and re-running a batch is safe.
* A request Cassandra rejects as invalid (``InvalidRequest``, code 0x2200: a key past 64 KiB, a batch too
  large, ...) is never retried: it would fail the same way, fail the query, and the restarted query would
  replay the same record: a crash loop. A rejected batch is split into its statements, re-sent one by one,
  and a statement rejected on its own goes to the caller's ``reject`` with its items (the sink
  dead-letters their records). A rejection that names the schema is no record's fault: it fails loudly.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from core.cql import CassandraLoginError
from core.errors import one_line

log = logging.getLogger(__name__)


class CassandraWriteError(RuntimeError):
    """Cassandra kept failing for longer than the retry bound."""


@dataclass(frozen=True)
class BatchLimits:
    max_rows: int = 100
    max_partitions: int = 60
    max_bytes: int = 48 * 1024


@dataclass(slots=True)
class Item:
    """One statement to write: ``replicas`` owning ``partition`` (table, routing key), approximate
    payload ``size``, and the ``origins`` it came from (what to dead-letter if Cassandra rejects it)."""

    replicas: Hashable
    partition: tuple[str, bytes]
    size: int
    statement: Any
    origins: Sequence[Any] = ()


Failure = tuple[Any, BaseException, Sequence[Item]]
"""A failed request: the statement, the error, and the items it carried."""
Reject = Callable[[Sequence[Item], BaseException], None]
_SCHEMA_ERRORS = ("does not exist", "unconfigured table", "undefined column", "unknown identifier")


def is_invalid(exc: BaseException) -> bool:
    """Whether Cassandra rejected the request as invalid (``InvalidRequest``, code 0x2200)."""
    from cassandra import InvalidRequest

    return isinstance(exc, InvalidRequest)


def plan_batches(items: Sequence[Item], limits: BatchLimits) -> list[list[Item]]:
    """Pack ``items`` into batches that each go to one replica set, within ``limits``."""
    groups: dict[Hashable, list[Item]] = {}
    for item in items:
        groups.setdefault(item.replicas, []).append(item)
    batches: list[list[Item]] = []
    for group in groups.values():
        group.sort(key=lambda i: i.partition)
        current: list[Item] = []
        size = 0
        partitions = 0
        for item in group:
            new_partition = not current or current[-1].partition != item.partition
            if current and (
                len(current) >= limits.max_rows
                or size + item.size > limits.max_bytes
                or (new_partition and partitions >= limits.max_partitions)
            ):
                batches.append(current)
                current, size, partitions = [], 0, 0
                new_partition = True
            current.append(item)
            size += item.size
            partitions += new_partition
        if current:
            batches.append(current)
    return batches


class ConcurrentExecutor:
    """Runs statements with at most ``concurrency`` in flight; collects the ones that failed."""

    def __init__(self, session: Any, concurrency: int, timeout_s: float) -> None:
        self._session = session
        self._timeout_s = timeout_s
        self._window = threading.BoundedSemaphore(concurrency)
        self._cond = threading.Condition()
        self._in_flight = 0
        self._failed: list[Failure] = []
        self.requests = 0

    def submit(self, statement: Any, items: Sequence[Item] = ()) -> None:
        """Send ``statement`` (carrying ``items``, handed back if it fails)."""
        self._window.acquire()
        with self._cond:
            self._in_flight += 1
        self.requests += 1
        try:
            future = self._session.execute_async(statement, timeout=self._timeout_s)
        except Exception as exc:
            self._on_error(exc, statement, items)
            return
        future.add_callbacks(self._on_done, self._on_error, errback_args=(statement, items))

    def _on_done(self, _result: Any) -> None:
        self._finish()

    def _on_error(self, exc: BaseException, statement: Any, items: Sequence[Item]) -> None:
        with self._cond:
            self._failed.append((statement, exc, items))
        self._finish()

    def _finish(self) -> None:
        self._window.release()
        with self._cond:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._cond.notify_all()

    def drain(self) -> list[Failure]:
        """Wait for every request in flight; return (and forget) the failed ones."""
        with self._cond:
            while self._in_flight:
                self._cond.wait()
            failed, self._failed = self._failed, []
        return failed


def settle_invalid(
    executor: ConcurrentExecutor, failed: list[Failure], reject: Reject | None
) -> list[Failure]:
    """Take the requests Cassandra rejected as invalid out of ``failed``, never to be retried: a batch
    is split and its statements re-sent at once, one by one; a statement rejected on its own goes to
    ``reject`` with its items. Returns the other failures (to retry). Raises
    :class:`CassandraWriteError` for a rejection of the schema, or when there is no ``reject``."""
    while True:
        invalid = [f for f in failed if is_invalid(f[1])]
        if not invalid:
            return failed
        failed = [f for f in failed if not is_invalid(f[1])]
        split = False
        for _statement, exc, items in invalid:
            reason = one_line(exc, 300, typed=True)
            if len(items) > 1:
                log.warning(
                    "Cassandra rejected a batch of %d as invalid (%s): writing each alone", len(items), reason
                )
                for item in items:
                    executor.submit(item.statement, (item,))
                split = True
            elif reject is None or not items or any(e in reason.lower() for e in _SCHEMA_ERRORS):
                where = f" to {items[0].partition[0]}" if items else ""
                raise CassandraWriteError(f"Cassandra rejected a write{where} as invalid: {reason}")
            else:
                reject(items, exc)
        if not split:
            return failed
        failed += executor.drain()


def retry_failed(
    executor: ConcurrentExecutor,
    failed: list[Failure],
    retry_s: float,
    *,
    reject: Reject | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Re-run ``failed`` statements with exponential backoff until they succeed; returns how many
    re-tries it took. Raises :class:`CassandraWriteError` once ``retry_s`` has passed. What Cassandra
    rejects as invalid is not retried (:func:`settle_invalid`)."""
    start = clock()
    delay = 0.25
    retries = 0
    while failed:
        failed = settle_invalid(executor, failed, reject)
        if not failed:
            break
        elapsed = clock() - start
        if elapsed >= retry_s:
            raise CassandraWriteError(
                f"{len(failed)} Cassandra write(s) still failing after {retry_s:g}s of retries "
                f"(CHATLOG_SINK_CASSANDRA_RETRY_S); last error: {one_line(failed[-1][1], 300, typed=True)}"
            )
        log.warning(
            "%d Cassandra write(s) failed (%s); retrying in %.2fs",
            len(failed),
            one_line(failed[-1][1], 300, typed=True),
            delay,
        )
        sleep(min(delay, retry_s - elapsed))
        delay = min(delay * 2, 8.0)
        retries += len(failed)
        for statement, _exc, items in failed:
            executor.submit(statement, items)
        failed = executor.drain()
    return retries


def with_retry(
    what: str,
    retry_s: float,
    attempt: Callable[[], Any],
    *,
    fatal: tuple[type[BaseException], ...] = (),
    setting: str = "CHATLOG_SINK_CASSANDRA_RETRY_S",
) -> Any:
    """``attempt()`` until it succeeds, with exponential backoff, for at most ``retry_s`` (``setting``: what
    sets it, named in the error); a refused login and the ``fatal`` errors are raised at once (retrying does
    not make them better)."""
    start = time.monotonic()
    delay = 0.25
    while True:
        try:
            return attempt()
        except CassandraLoginError:
            raise
        except Exception as exc:
            if isinstance(exc, fatal):
                raise
            elapsed = time.monotonic() - start
            if elapsed >= retry_s:
                named = f" ({setting})" if setting else ""
                raise CassandraWriteError(
                    f"{what} still failing after {retry_s:g}s{named}: {one_line(exc, 300, typed=True)}"
                ) from None
            log.warning("%s failed (%s); retrying in %.2fs", what, one_line(exc, 300, typed=True), delay)
            time.sleep(min(delay, retry_s - elapsed))
            delay = min(delay * 2, 8.0)
