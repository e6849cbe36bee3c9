"""The writer's task: one partition of a micro-batch into Cassandra and the dead letters.

:func:`write_partition` runs in a Spark Python worker (or in any process, e.g. the benchmark's raw
insert): valid events become table rows (:mod:`sink.writer.rows`) written through the Cassandra
writer (:func:`sink.writer.cassandra.writer`); records that fail the contract's validation
(:mod:`schemas.chat_event`, every field bounded) become dead letters, and so do the records whose write
Cassandra rejects as invalid (never retried: the same record would fail again after every restart).
Events with Twitch ids also keep the name history (user id <-> login, channel id <-> login, with first
and last seen: :data:`sink.writer.rows.NAME_TABLES`), written at most once per name per hour of event
time per process (:class:`sink.writer.caches.NameCache`), so it costs a dictionary look-up per event,
not a write. A user row under a ``login:`` key (a deleted message, a line without ids) comes with its row of
``user_login_keys`` (channel key, month, login key), queued with it as an index row: about once per key per
refresh per process, remembered only once written. The writer and the dead-letter sink are passed in
(:class:`sink.writer.collaborators.Collaborators`); :func:`partition_task`, the function Spark runs on
each partition, is where the production ones are wired. :func:`sink.job.write.write_dataframe` runs the
partition task over every partition of a micro-batch (or of a backfill) and adds up what each partition
did. Nothing is acknowledged before every write of the partition succeeded or was dead-lettered, so a
failure fails the batch, and the batch is re-run.

The steps, each a function below, in the order :func:`write_partition` takes them: per record,
:func:`_decoded` (validate, or dead-letter), :func:`_opted_out` (drop the events of opt-outs),
:func:`_is_copy` (drop the copies, when the writer deduplicates), :func:`_queue_event` (the event's table
rows and name history, or a dead letter when a value cannot be written), :func:`_submit_full_chunk`;
then for the partition, :func:`_finish_writes` (wait, retry, dead-letter what Cassandra rejected) and
:func:`_remember_written` (the caches and the written ids).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Hashable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from core.errors import one_line
from schemas.chat_event import InvalidEvent, decode
from sink.dedup import id_of, id_set
from sink.writer.caches import (
    INDEX_CACHE,
    NAME_CACHE,
    SPILL_GUARD,
    HourSpan,
    IndexCache,
    NameCache,
    SpillGuard,
)
from sink.writer.cassandra import Item
from sink.writer.collaborators import production
from sink.writer.rows import HOUR_MS, channel_name, channel_name_rows, user_name, user_name_rows
from sink.writer.stats import WriteStats

if TYPE_CHECKING:
    from consent.rule import OptOutSet
    from schemas.chat_event import ChatEvent
    from sink.settings import SinkSettings
    from sink.writer.collaborators import Collaborators
    from sink.writer.rows import NameWrite, TableRows

CHUNK_ROWS = 4000
"""Statements planned into batches at a time (bounds the memory of a task)."""
UNWRITABLE = (struct.error, OverflowError, ValueError)
"""What serializing a record's cells or routing key raises for a value Cassandra cannot hold (a key part
past 64 KiB, a timestamp past 64 bits...): that record is dead-lettered, the others are written."""
INDEX_ROW_BYTES = 64


def write_partition(
    records: Iterable[Any],
    settings: SinkSettings,
    collaborators: Collaborators | None = None,
    *,
    index_cache: IndexCache = INDEX_CACHE,
    name_cache: NameCache = NAME_CACHE,
    optouts: OptOutSet | None = None,
    recent: bytes | None = None,
    spill_guard: SpillGuard = SPILL_GUARD,
) -> WriteStats:
    """Write ``records`` (value, Kafka partition, offset) and return what was done; raise if it could not.

    Every value is validated with the contract's decoder; an invalid one is sent to the dead-letter
    sink with the reason and its Kafka position (only counted without a sink). ``collaborators``: the
    Cassandra writer and the dead-letter sink; default :func:`sink.writer.collaborators.production`'s.
    ``optouts``: the events of these opted-out users and channels are counted in ``optout_dropped`` and
    not written (no row of any table, the name history included). ``recent``: the writer deduplicates
    (:mod:`sink.dedup`): an event whose id is in ``recent`` or earlier in ``records`` is counted in
    ``duplicates``, not written, and the ids written are returned in ``written_ids``; None: every event
    is written.
    """
    task = _Task(settings, collaborators, index_cache, name_cache, optouts, recent, spill_guard)
    for record in records:
        event = _decoded(task, record)
        if event is None or _opted_out(task, event) or _is_copy(task, event):
            continue
        if _queue_event(task, event, record):
            _count_written(task)
            _submit_full_chunk(task)
    _finish_writes(task)
    _remember_written(task)
    return task.stats


class _Task:
    """One partition's write under way: its collaborators and settings, and what it queued and did."""

    __slots__ = (
        "cassandra",
        "data_ttl",
        "dedup_id",
        "index_cache",
        "index_ttl",
        "items",
        "letters",
        "name_cache",
        "names_ttl",
        "new_index",
        "new_names",
        "new_spills",
        "optouts",
        "rejected",
        "seen",
        "sent",
        "settings",
        "spill_guard",
        "spill_rows",
        "started",
        "stats",
        "written_ids",
    )

    def __init__(
        self,
        settings: SinkSettings,
        collaborators: Collaborators | None,
        index_cache: IndexCache,
        name_cache: NameCache,
        optouts: OptOutSet | None,
        recent: bytes | None,
        spill_guard: SpillGuard,
    ) -> None:
        wiring = collaborators if collaborators is not None else production(settings)
        cassandra = wiring.cassandra
        self.settings = settings
        self.cassandra = cassandra
        self.letters = wiring.dead_letters
        self.index_cache = index_cache
        self.name_cache = name_cache
        self.optouts = optouts
        self.seen = id_set(recent) if recent is not None else None
        """The dedup ids seen (given and written so far); None: the writer does not deduplicate."""
        self.dedup_id: bytes | None = None
        """The dedup id of the event being written (when the writer deduplicates and it has one)."""
        self.written_ids = bytearray()
        self.stats = WriteStats()
        self.data_ttl = cassandra.ttl(settings.cassandra_ttl_s)
        self.index_ttl = cassandra.ttl(index_cache.ttl(settings.cassandra_ttl_s))
        self.names_ttl = cassandra.ttl(name_cache.ttl(settings.cassandra_ttl_s))
        self.started = time.monotonic()
        self.sent = False
        """Whether a dead letter was sent (they are flushed at the end)."""
        self.new_index: dict[Hashable, None] = {}
        self.new_names: dict[Hashable, HourSpan] = {}
        self.spill_guard = spill_guard
        self.spill_rows = settings.sink_user_month_rows
        self.new_spills: dict[Hashable, None] = {}
        """The user-months this task flagged as spilled (remembered by the guard once written)."""
        self.items: list[Item] = []
        self.rejected: dict[int, tuple[Any, str]] = {}
        """The records whose rows Cassandra rejected as invalid, by record, with the reason."""


def _dead_letter(task: _Task, value: Any, partition: Any, offset: Any, reason: str) -> None:
    task.stats.deadletters += 1
    letters = task.letters
    if letters is not None:
        topic = task.settings.topic_messages
        source = f"{topic}/{partition}/{offset}" if partition is not None else "unknown"
        letters.send(None if value is None else bytes(value), reason, source)
        task.sent = True


def _decoded(task: _Task, record: Any) -> ChatEvent | None:
    """The record's chat event, validated by the contract's decoder; None when it is not one (then a
    dead letter, with the reason)."""
    value, partition, offset = record
    try:
        if value is None:
            raise InvalidEvent("empty record (no value)")
        return decode(bytes(value))
    except InvalidEvent as exc:
        _dead_letter(task, value, partition, offset, str(exc))
        return None


def _opted_out(task: _Task, event: ChatEvent) -> bool:
    """Whether the event is one of an opt-out's (counted, with the login its user sent it as)."""
    optouts = task.optouts
    if optouts is None or not optouts.drops(event):
        return False
    stats = task.stats
    stats.optout_dropped += 1
    if event.user_login is not None and event.user_id in optouts.users:
        stats.optout_logins[event.user_login] = event.user_id
    return True


def _is_copy(task: _Task, event: ChatEvent) -> bool:
    """Whether the writer deduplicates and has seen the event's id (counted); a first copy's id is seen
    from now on, and kept in ``task.dedup_id`` until the event is written."""
    seen = task.seen
    if seen is None:
        return False
    try:
        dedup_id: bytes | None = id_of(event.message_id)
    except ValueError:  # an id with no uuid (a lone surrogate): its cells dead-letter the event
        dedup_id = None
    task.dedup_id = dedup_id
    if dedup_id is None:
        return False
    if dedup_id in seen:
        task.stats.duplicates += 1
        return True
    seen.add(dedup_id)
    return False


def _queue_event(task: _Task, event: ChatEvent, record: Any) -> bool:
    """Queue every row of the event: its table rows, then its name history; whether it could be. A value
    Cassandra cannot hold (past the contract's bounds: a record it did not check) unqueues the event's
    rows and dead-letters its record."""
    items = task.items
    mark, spills = len(items), len(task.new_spills)
    try:
        _queue_table_rows(task, event, record)
        _queue_name_rows(task, event, record)
    except UNWRITABLE as exc:
        rows = task.stats.rows
        for item in items[mark:]:
            rows[item.partition[0]] -= 1
        del items[mark:]
        for key in list(task.new_spills)[spills:]:
            del task.new_spills[key]
        value, partition, offset = record
        reason = f"cannot be written to Cassandra: {one_line(exc, 300, typed=True)}"
        _dead_letter(task, value, partition, offset, reason)
        return False
    return True


def _queue_table_rows(task: _Task, event: ChatEvent, record: Any) -> None:
    """The event's row of each table that takes it; an index row only when neither this task nor this
    process wrote it lately (:class:`sink.writer.caches.IndexCache`)."""
    cassandra, items, counts = task.cassandra, task.items, task.stats.rows
    keyspace, replicas = cassandra.keyspace, cassandra.replicas
    new_index, index_cache, started = task.new_index, task.index_cache, task.started
    size_of_data = len(record[0])
    cells = cassandra.cells(event)
    for table in cassandra.tables:
        rows = table.rows
        if not rows.accepts(event):
            continue
        row = rows.pick(cells)
        if rows.is_index:
            key = (keyspace, rows.table, row)
            if key in new_index or index_cache.fresh(key, started):
                continue
            new_index[key] = None
            bound = table.bind(row, task.index_ttl)
            size = INDEX_ROW_BYTES
        else:
            if rows.month_key is not None:
                row = _month_or_half_day(task, rows, row, event, record)
            bound = table.bind(row, task.data_ttl)
            size = size_of_data
        routing_key = bound.routing_key  # the driver packs each key part in 16 bits
        items.append(Item(replicas(routing_key), (rows.table, routing_key), size, bound, record))
        counts[rows.table] += 1


def _month_or_half_day(
    task: _Task, rows: TableRows, row: tuple[Any, ...], event: ChatEvent, record: Any
) -> tuple[Any, ...]:
    """A user row in its month partition while this process has written fewer than the cap of that
    user-month (``CHATLOG_SINK_USER_MONTH_ROWS``), else in its half day, with the month partition's
    ``spilled`` flag queued once (schemas/cassandra.cql, :class:`sink.writer.caches.SpillGuard`)."""
    assert rows.month_key is not None and rows.period_at is not None
    month = rows.month_key(row)
    key = (task.cassandra.keyspace, month)
    guard = task.spill_guard
    if guard.count(key) < task.spill_rows:
        return row
    if key not in guard.spilled and key not in task.new_spills:
        task.new_spills[key] = None
        bound = task.cassandra.spill(month, task.data_ttl)
        routing_key = bound.routing_key
        where = task.cassandra.replicas(routing_key)
        task.items.append(Item(where, (rows.table, routing_key), INDEX_ROW_BYTES, bound, record))
        task.stats.rows[rows.table] += 1
    at = rows.period_at
    return (*row[:at], task.cassandra.half_day(event), *row[at + 1 :])


def _queue_name_rows(task: _Task, event: ChatEvent, record: Any) -> None:
    """The name history of the event's user and channel, unless this process wrote the name for the
    event's hour (:class:`sink.writer.caches.NameCache`) or this task queued it; the names are marked
    queued only once every row of the event is."""
    hour = event.sent_at // HOUR_MS
    keyspace, cached = task.cassandra.keyspace, task.name_cache.get
    user, channel = user_name(event), channel_name(event)
    queued: list[Hashable] = []
    if user is not None:
        name_key: Hashable = (keyspace, user)
        span = cached(name_key)
        if (span is None or not span[0] <= hour <= span[1]) and _queue_name(
            task, name_key, user_name_rows(user), event.sent_at, record
        ):
            queued.append(name_key)
    if channel is not None:
        name_key = (keyspace, channel)
        span = cached(name_key)
        if (span is None or not span[0] <= hour <= span[1]) and _queue_name(
            task, name_key, channel_name_rows(channel), event.sent_at, record
        ):
            queued.append(name_key)
    new_names = task.new_names
    for name_key in queued:
        span = new_names.get(name_key)
        new_names[name_key] = (hour, hour) if span is None else (min(hour, span[0]), max(hour, span[1]))


def _queue_name(
    task: _Task, key: Hashable, writes: tuple[NameWrite, NameWrite], sent_at: int, record: Any
) -> bool:
    """Queue the rows of a name unless this task already queued it for the hour; whether it did."""
    hour = sent_at // HOUR_MS
    span = task.new_names.get(key)
    if span is not None and span[0] <= hour <= span[1]:
        return False
    cassandra, items, counts, ttl = task.cassandra, task.items, task.stats.rows, task.names_ttl
    for table, values in writes:
        for bound in cassandra.names.bind(table, values, sent_at, ttl):
            routing_key = bound.routing_key
            items.append(
                Item(cassandra.replicas(routing_key), (table, routing_key), INDEX_ROW_BYTES, bound, record)
            )
            counts[table] += 1
    return True


def _count_written(task: _Task) -> None:
    """The event is queued: one more event, and its dedup id among the written ones."""
    task.stats.events += 1
    if task.dedup_id is not None:
        task.written_ids += task.dedup_id


def _submit_full_chunk(task: _Task) -> None:
    """Send what is queued once it is a chunk (:data:`CHUNK_ROWS`), so a task's memory stays bounded."""
    if len(task.items) >= CHUNK_ROWS:
        task.cassandra.submit(task.items)
        task.items = []


def _finish_writes(task: _Task) -> None:
    """Send the rest, wait for every write (retried while Cassandra fails), dead-letter the records whose
    rows Cassandra rejected as invalid, and wait until every dead letter is acknowledged."""
    stats, cassandra = task.stats, task.cassandra
    cassandra.submit(task.items)
    task.items = []
    rejected = task.rejected

    def reject(failed: Sequence[Item], exc: BaseException) -> None:
        """Cassandra rejected these rows as invalid: their records become dead letters (once each)."""
        for item in failed:
            stats.rows[item.partition[0]] -= 1
            rejected.setdefault(
                id(item.origin), (item.origin, f"Cassandra rejected it: {one_line(exc, 300, typed=True)}")
            )

    stats.retries, stats.requests = cassandra.finish(reject)
    for (value, partition, offset), reason in rejected.values():
        stats.events -= 1  # the rows Cassandra did take stay (idempotent), the record is a dead letter
        _dead_letter(task, value, partition, offset, reason)
    if task.sent and task.letters is not None:
        task.letters.flush()


def _remember_written(task: _Task) -> None:
    """What was written, for the tasks after this one: the index rows and names (this process's
    caches), and the dedup ids (the driver's, through ``written_ids``)."""
    task.index_cache.add(task.new_index, task.started)
    task.name_cache.add(task.new_names)
    task.spill_guard.spilled.update(task.new_spills)
    task.stats.written_ids = bytes(task.written_ids)


def partition_task(
    settings: SinkSettings, dead_letters: bool, optouts: OptOutSet | None = None, recent: bytes | None = None
) -> Any:
    """The function Spark runs on each partition of framed records (:mod:`sink.framing`): the writer's
    one entry point, called on the driver to build it, and where the production collaborators are
    wired (:func:`sink.writer.collaborators.production`). ``optouts``: the driver's opt-outs at the start
    of the batch, shipped with the task; ``recent``: the ids the last batches wrote (the writer
    deduplicates), shipped with the task."""
    private = settings.sink_spark_private_api

    def task(records: Iterator[bytes]) -> Iterator[dict[str, Any]]:
        from sink.framing import unframe

        wiring = _worker_wiring(settings, private, dead_letters)
        yield write_partition(
            map(unframe, records), settings, wiring, optouts=optouts, recent=recent
        ).to_dict()

    return task


def warm_up_task(settings: SinkSettings) -> Any:
    """A Spark task that only sets up the Python worker it runs in as :func:`partition_task` does (the
    worker's patches, the writer's imports, the Cassandra session with its prepared statements, the
    dead-letter producer) and yields 1: the workers Spark keeps (``spark.python.worker.reuse``) are then
    ready for the first micro-batch (:mod:`sink.job.warm_up`)."""
    private = settings.sink_spark_private_api

    def task(_items: Iterator[Any]) -> Iterator[int]:
        _worker_wiring(settings, private, dead_letters=True)
        yield 1

    return task


def _worker_wiring(settings: SinkSettings, private: bool, dead_letters: bool) -> Collaborators:
    from sink.writer.worker_setup import prepare

    prepare(private)
    return production(settings, dead_letters=dead_letters)
