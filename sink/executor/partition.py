"""The executor side of the write step: one partition of a micro-batch into Cassandra and the dead letters.

:func:`write_partition` runs in a Spark Python worker (or in any process, e.g. the benchmark's raw
insert): valid events become table rows (:mod:`sink.executor.rows`) written through
:mod:`sink.executor.cassandra`;
records that fail the contract's validation (:mod:`schemas.chat_event`, every field bounded) become
dead letters, and so do the records whose write Cassandra rejects as invalid (never retried: the same
record would fail again after every restart). :func:`sink.driver.write.write_dataframe` runs
:func:`partition_task` over every partition of a micro-batch (or of a backfill) and adds up what each
partition did. Nothing is acknowledged before every write of the partition succeeded or was
dead-lettered, so a failure fails the batch, and the batch is re-run.
"""

from __future__ import annotations

import struct
import threading
import time
from collections import Counter
from collections.abc import Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from schemas.chat_event import InvalidEvent, decode
from sink.executor.cassandra import (
    BatchLimits,
    ConcurrentExecutor,
    Item,
    one_line,
    plan_batches,
    retry_failed,
    worker_session,
)
from sink.executor.worker_setup import freeze_heap

if TYPE_CHECKING:
    from sink.executor.deadletter import DeadLetters
    from sink.settings import SinkSettings

CHUNK_ROWS = 4000
UNWRITABLE = (struct.error, OverflowError, ValueError)
"""What serializing a record's cells or routing key raises for a value Cassandra cannot hold (a key part
past 64 KiB, a timestamp past 64 bits...): that record is dead-lettered, the others are written."""
"""Statements planned into batches at a time (bounds the memory of a task)."""
INDEX_ROW_BYTES = 64


@dataclass
class WriteStats:
    """What writing one partition, batch or backfill did."""

    events: int = 0
    rows: Counter[str] = field(default_factory=Counter)
    deadletters: int = 0
    requests: int = 0
    retries: int = 0

    @property
    def rows_total(self) -> int:
        return sum(self.rows.values())

    def add(self, other: WriteStats) -> None:
        self.events += other.events
        self.rows.update(other.rows)
        self.deadletters += other.deadletters
        self.requests += other.requests
        self.retries += other.retries

    def to_dict(self) -> dict[str, Any]:
        return {
            "events": self.events,
            "rows": dict(self.rows),
            "deadletters": self.deadletters,
            "requests": self.requests,
            "retries": self.retries,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WriteStats:
        return cls(
            events=data["events"],
            rows=Counter(data["rows"]),
            deadletters=data["deadletters"],
            requests=data["requests"],
            retries=data["retries"],
        )


_DEADLETTERS: dict[str, DeadLetters] = {}
_DEADLETTERS_LOCK = threading.Lock()


def _dead_letters(settings: SinkSettings) -> DeadLetters:
    from sink.executor.deadletter import DeadLetters

    key = f"{settings.kafka_bootstrap_servers}|{settings.topic_deadletter}"
    with _DEADLETTERS_LOCK:
        if key not in _DEADLETTERS:
            _DEADLETTERS[key] = DeadLetters(settings)
        return _DEADLETTERS[key]


class IndexCache:
    """Index rows (``channel_buckets``) this process wrote lately, so a busy channel's bucket is
    written about once per ``refresh_s`` instead of once per task.

    An entry is added only after the write that carried it succeeded. The index rows get a TTL of
    ``refresh_s`` more than the data rows: every data row is written at most ``refresh_s`` after its
    index row was (re)written, so the index never expires before the rows it points to.
    """

    def __init__(self, refresh_s: float = 300.0, max_entries: int = 500_000) -> None:
        self.refresh_s = refresh_s
        self._max = max_entries
        self._written: dict[Hashable, float] = {}

    def fresh(self, key: Hashable, now: float) -> bool:
        written = self._written.get(key)
        return written is not None and now - written < self.refresh_s

    def add(self, keys: Iterable[Hashable], when: float) -> None:
        if len(self._written) > self._max:
            self._written.clear()
        self._written.update(dict.fromkeys(keys, when))

    def ttl(self, ttl_s: int) -> int:
        return ttl_s + int(self.refresh_s) if ttl_s else 0


INDEX_CACHE = IndexCache()


def write_partition(
    records: Iterable[Any],
    settings: SinkSettings,
    *,
    dead_letters: bool = True,
    index_cache: IndexCache = INDEX_CACHE,
) -> WriteStats:
    """Write ``records`` (value, Kafka partition, offset) and return what was done; raise if it could not.

    Every value is validated with the contract's decoder; an invalid one is sent to the dead-letter
    topic with the reason and its Kafka position (only counted with ``dead_letters=False``).
    """
    stats = WriteStats()
    session = worker_session(settings)
    keyspace = settings.cassandra_keyspace
    prepared = session.keyspace(keyspace, settings.sink_write_consistency, settings.sink_cassandra_retry_s)
    freeze_heap()
    executor = ConcurrentExecutor(
        session.session, settings.sink_write_concurrency, settings.sink_cassandra_timeout_s
    )
    limits = BatchLimits(
        settings.sink_batch_max_rows, settings.sink_batch_max_partitions, settings.sink_batch_max_bytes
    )
    data_ttl = prepared.ttl(settings.cassandra_ttl_s)
    index_ttl = prepared.ttl(index_cache.ttl(settings.cassandra_ttl_s))
    started = time.monotonic()
    dead: DeadLetters | None = None
    new_index: dict[Hashable, None] = {}
    items: list[Item] = []

    def submit(chunk: list[Item]) -> None:
        if limits.max_rows == 1:
            for item in chunk:
                executor.submit(item.statement, (item,))
            return
        from cassandra.query import BatchStatement, BatchType

        for batch in plan_batches(chunk, limits):
            if len(batch) == 1:
                executor.submit(batch[0].statement, batch)
                continue
            statement = BatchStatement(
                batch_type=BatchType.UNLOGGED, consistency_level=prepared.consistency_level
            )
            for item in batch:
                statement.add(item.statement)
            statement.is_idempotent = True
            executor.submit(statement, batch)

    def dead_letter(value: Any, partition: Any, offset: Any, reason: str) -> None:
        nonlocal dead
        stats.deadletters += 1
        if dead_letters:
            if dead is None:
                dead = _dead_letters(settings)
            source = f"{settings.topic_messages}/{partition}/{offset}" if partition is not None else "unknown"
            dead.send(None if value is None else bytes(value), reason, source)

    rejected: dict[int, tuple[Any, str]] = {}

    def reject(failed: Sequence[Item], exc: BaseException) -> None:
        """Cassandra rejected these rows as invalid: their records become dead letters (once each)."""
        for item in failed:
            stats.rows[item.partition[0]] -= 1
            rejected.setdefault(id(item.origin), (item.origin, f"Cassandra rejected it: {one_line(exc)}"))

    for record in records:
        value, partition, offset = record
        try:
            if value is None:
                raise InvalidEvent("empty record (no value)")
            data = bytes(value)
            event = decode(data)
        except InvalidEvent as exc:
            dead_letter(value, partition, offset, str(exc))
            continue
        mark = len(items)
        try:
            cells = prepared.cells(event)
            for table in prepared.tables:
                rows = table.rows
                if not rows.accepts(event):
                    continue
                row = rows.pick(cells)
                if rows.is_index:
                    key = (keyspace, rows.table, row)
                    if key in new_index or index_cache.fresh(key, started):
                        continue
                    new_index[key] = None
                    bound = table.bind(row, index_ttl)
                    size = INDEX_ROW_BYTES
                else:
                    bound = table.bind(row, data_ttl)
                    size = len(data)
                routing_key = bound.routing_key  # the driver packs each key part in 16 bits
                items.append(
                    Item(
                        session.replicas(keyspace, routing_key),
                        (rows.table, routing_key),
                        size,
                        bound,
                        record,
                    )
                )
                stats.rows[rows.table] += 1
        except UNWRITABLE as exc:  # only past the contract's bounds (a record it did not check)
            for item in items[mark:]:
                stats.rows[item.partition[0]] -= 1
            del items[mark:]
            dead_letter(value, partition, offset, f"cannot be written to Cassandra: {one_line(exc)}")
            continue
        stats.events += 1
        if len(items) >= CHUNK_ROWS:
            submit(items)
            items = []
    submit(items)
    stats.retries = retry_failed(executor, executor.drain(), settings.sink_cassandra_retry_s, reject=reject)
    stats.requests = executor.requests
    for (value, partition, offset), reason in rejected.values():
        stats.events -= 1  # the rows Cassandra did take stay (idempotent), the record is a dead letter
        dead_letter(value, partition, offset, reason)
    if dead is not None:
        dead.flush()
    index_cache.add(new_index, started)
    return stats


def partition_task(settings: SinkSettings, dead_letters: bool) -> Any:
    """The function Spark runs on each partition of framed records (:mod:`sink.executor.unframe`): the
    executor side's one entry point, called on the driver to build it."""

    def task(records: Iterator[bytes]) -> Iterator[dict[str, Any]]:
        from sink.executor.unframe import unframe
        from sink.executor.worker_setup import prepare

        prepare()
        yield write_partition(map(unframe, records), settings, dead_letters=dead_letters).to_dict()

    return task
