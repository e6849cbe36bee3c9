"""The executor side of the write step: one partition of a micro-batch into Cassandra and the dead letters.

:func:`write_partition` runs in a Spark Python worker (or in any process, e.g. the benchmark's raw
insert): valid events become table rows (:mod:`sink.executor.rows`) written through the Cassandra
writer (:func:`sink.executor.cassandra.writer`); records that fail the contract's validation
(:mod:`schemas.chat_event`, every field bounded) become dead letters, and so do the records whose write
Cassandra rejects as invalid (never retried: the same record would fail again after every restart).
Events with Twitch ids also keep the name history (user id <-> login, channel id <-> login, with first
and last seen: :data:`sink.executor.rows.NAME_TABLES`), written at most once per name per hour of event
time per process (:class:`NameCache`), so it costs a dictionary look-up per event, not a write.
The writer and the dead-letter sink are passed in (:class:`Collaborators`); :func:`production` makes
the real ones, and :func:`partition_task`, the function Spark runs on each partition, is where they
are wired. :func:`sink.driver.write.write_dataframe` runs the partition task over every partition of a
micro-batch (or of a backfill) and adds up what each partition did. Nothing is acknowledged before
every write of the partition succeeded or was dead-lettered, so a failure fails the batch, and the
batch is re-run.
"""

from __future__ import annotations

import struct
import time
from collections import Counter
from collections.abc import Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from core.errors import one_line
from schemas.chat_event import InvalidEvent, decode
from sink.executor.cassandra import Item, Reject
from sink.executor.dedup import id_of, id_set
from sink.executor.rows import HOUR_MS, channel_name, channel_name_rows, user_name, user_name_rows

if TYPE_CHECKING:
    from consent.rule import OptOutSet
    from schemas.chat_event import ChatEvent
    from sink.executor.rows import NameWrite, TableRows
    from sink.settings import SinkSettings

CHUNK_ROWS = 4000
"""Statements planned into batches at a time (bounds the memory of a task)."""
UNWRITABLE = (struct.error, OverflowError, ValueError)
"""What serializing a record's cells or routing key raises for a value Cassandra cannot hold (a key part
past 64 KiB, a timestamp past 64 bits...): that record is dead-lettered, the others are written."""
INDEX_ROW_BYTES = 64


@dataclass
class WriteStats:
    """What writing one partition, batch or backfill did."""

    events: int = 0
    rows: Counter[str] = field(default_factory=Counter)
    deadletters: int = 0
    requests: int = 0
    retries: int = 0
    optout_dropped: int = 0
    """Valid events not written because their user or channel opted out (:mod:`consent.rule`)."""
    optout_logins: dict[str, str] = field(default_factory=dict)
    """Login -> user id of the dropped events of opted-out users (the driver matches later events that
    name a user by login only against these logins)."""
    duplicates: int = 0
    """Copies the writer dropped (``recent`` given to :func:`write_partition`: ``sink_dedup=writer``)."""
    written_ids: bytes = b""
    """The dedup ids (:mod:`sink.executor.dedup`) of the events written, when the writer deduplicates."""

    @property
    def rows_total(self) -> int:
        return sum(self.rows.values())

    def add(self, other: WriteStats) -> None:
        self.events += other.events
        self.rows.update(other.rows)
        self.deadletters += other.deadletters
        self.requests += other.requests
        self.retries += other.retries
        self.optout_dropped += other.optout_dropped
        self.optout_logins.update(other.optout_logins)
        self.duplicates += other.duplicates
        self.written_ids += other.written_ids

    def to_dict(self) -> dict[str, Any]:
        return {
            "events": self.events,
            "rows": dict(self.rows),
            "deadletters": self.deadletters,
            "requests": self.requests,
            "retries": self.retries,
            "optout_dropped": self.optout_dropped,
            "optout_logins": dict(self.optout_logins),
            "duplicates": self.duplicates,
            "written_ids": self.written_ids,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WriteStats:
        return cls(
            events=data["events"],
            rows=Counter(data["rows"]),
            deadletters=data["deadletters"],
            requests=data["requests"],
            retries=data["retries"],
            optout_dropped=data.get("optout_dropped", 0),
            optout_logins=dict(data.get("optout_logins", {})),
            duplicates=data.get("duplicates", 0),
            written_ids=data.get("written_ids", b""),
        )


class TableTarget(Protocol):
    """One table of the writer: how its row is taken from an event, and its bound insert."""

    @property
    def rows(self) -> TableRows: ...

    def bind(self, cells: Sequence[Any], ttl: bytes) -> Any:
        """A statement inserting ``cells`` (with a ``routing_key``)."""
        ...


class NameTarget(Protocol):
    """The name history's inserts (:class:`sink.executor.cassandra.PreparedNames`)."""

    def bind(self, table: str, key: Sequence[str], sent_at: int, ttl: bytes) -> tuple[Any, Any]:
        """The ``first_seen`` and ``last_seen`` inserts of one row (each with a ``routing_key``)."""
        ...


class CassandraTarget(Protocol):
    """What :func:`write_partition` needs of the Cassandra writer
    (:class:`sink.executor.cassandra.CassandraWriter`)."""

    keyspace: str

    @property
    def tables(self) -> Sequence[TableTarget]: ...

    @property
    def names(self) -> NameTarget: ...

    def cells(self, event: ChatEvent) -> list[Any]: ...

    def ttl(self, seconds: int) -> bytes: ...

    def replicas(self, routing_key: bytes) -> Hashable: ...

    def submit(self, chunk: Sequence[Item]) -> None: ...

    def finish(self, reject: Reject) -> tuple[int, int]:
        """Wait for every write, retry what failed; returns (re-tries, requests)."""
        ...


class DeadLetterSink(Protocol):
    """Where dead letters go (:class:`sink.executor.deadletter.DeadLetters`)."""

    def send(self, value: bytes | None, reason: str, source: str) -> None: ...

    def flush(self) -> None:
        """Wait until every dead letter sent is acknowledged; raise if one was not."""
        ...


@dataclass(frozen=True)
class Collaborators:
    """What a partition is written with: the Cassandra writer, and the dead-letter sink (None: invalid
    records are only counted, as a backfill does unless told to send them again)."""

    cassandra: CassandraTarget
    dead_letters: DeadLetterSink | None


def production(settings: SinkSettings, *, dead_letters: bool = True) -> Collaborators:
    """The real collaborators, wired here only: this process's Cassandra session writing to the keyspace
    of ``settings`` (connected and prepared on first use), and its dead-letter producer."""
    from sink.executor.cassandra import writer
    from sink.executor.deadletter import dead_letters_for
    from sink.executor.worker_setup import freeze_heap

    cassandra = writer(settings)
    freeze_heap()  # the long-lived state (modules, session, prepared statements) now exists
    return Collaborators(cassandra, dead_letters_for(settings) if dead_letters else None)


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

HourSpan = tuple[int, int]
"""The first and last hour (epoch ms // :data:`HOUR_MS`, event time) a name was written for."""


class NameCache:
    """Names (a user id with its login and display name, a channel id with its login) this process
    wrote, with the span of hours of event time it wrote them for, so that each is written at most once
    per hour instead of once per event.

    An event of hour ``h`` needs no write when the name was written for an hour ``<= h`` and for an hour
    ``>= h``: the earliest and latest writes already lie in ``h`` or beyond it, and ``first_seen`` /
    ``last_seen`` keep the earliest and latest time written, so each stays in the hour of the true first
    (last) event. That is the precision of the name history: an hour. A replay of hours already written
    writes nothing; a stream writes each active name once per hour (the first event of the hour).
    Entries are added only after the writes that carried them succeeded. When the cache holds more than
    ``max_entries`` names it starts over (those names are written once more, nothing is lost).
    """

    def __init__(self, max_entries: int = 300_000) -> None:
        self._max = max_entries
        self._spans: dict[Hashable, HourSpan] = {}

    def get(self, key: Hashable) -> HourSpan | None:
        return self._spans.get(key)

    def add(self, written: dict[Hashable, HourSpan]) -> None:
        if len(self._spans) > self._max:
            self._spans.clear()
        spans = self._spans
        for key, (lo, hi) in written.items():
            old = spans.get(key)
            spans[key] = (lo, hi) if old is None else (min(lo, old[0]), max(hi, old[1]))

    @staticmethod
    def ttl(ttl_s: int) -> int:
        """A name row outlives the data rows of the events that wrote it by an hour (0: no expiry)."""
        return ttl_s + HOUR_MS // 1000 if ttl_s else 0


NAME_CACHE = NameCache()


def write_partition(
    records: Iterable[Any],
    settings: SinkSettings,
    collaborators: Collaborators | None = None,
    *,
    index_cache: IndexCache = INDEX_CACHE,
    name_cache: NameCache = NAME_CACHE,
    optouts: OptOutSet | None = None,
    recent: bytes | None = None,
) -> WriteStats:
    """Write ``records`` (value, Kafka partition, offset) and return what was done; raise if it could not.

    Every value is validated with the contract's decoder; an invalid one is sent to the dead-letter
    sink with the reason and its Kafka position (only counted without a sink). ``collaborators``: the
    Cassandra writer and the dead-letter sink; default :func:`production`'s. ``optouts``: the events of
    these opted-out users and channels are counted in ``optout_dropped`` and not written (no row of
    any table, the name history included). ``recent``: the writer deduplicates (:mod:`sink.executor.dedup`):
    an event whose id is in ``recent`` or earlier in ``records`` is counted in ``duplicates``, not
    written, and the ids written are returned in ``written_ids``; None: every event is written.
    """
    drops = optouts.drops if optouts else None
    seen = id_set(recent) if recent is not None else None
    written_ids = bytearray()
    opted_out_users = optouts.users if optouts else frozenset()
    wiring = collaborators if collaborators is not None else production(settings)
    cassandra, letters = wiring.cassandra, wiring.dead_letters
    stats = WriteStats()
    keyspace = cassandra.keyspace
    tables = cassandra.tables
    cells_of, replicas, submit = cassandra.cells, cassandra.replicas, cassandra.submit
    data_ttl = cassandra.ttl(settings.cassandra_ttl_s)
    index_ttl = cassandra.ttl(index_cache.ttl(settings.cassandra_ttl_s))
    names, names_ttl = cassandra.names, cassandra.ttl(name_cache.ttl(settings.cassandra_ttl_s))
    cached_names = name_cache.get
    started = time.monotonic()
    sent = False
    new_index: dict[Hashable, None] = {}
    new_names: dict[Hashable, HourSpan] = {}
    items: list[Item] = []

    def dead_letter(value: Any, partition: Any, offset: Any, reason: str) -> None:
        nonlocal sent
        stats.deadletters += 1
        if letters is not None:
            source = f"{settings.topic_messages}/{partition}/{offset}" if partition is not None else "unknown"
            letters.send(None if value is None else bytes(value), reason, source)
            sent = True

    rejected: dict[int, tuple[Any, str]] = {}

    def reject(failed: Sequence[Item], exc: BaseException) -> None:
        """Cassandra rejected these rows as invalid: their records become dead letters (once each)."""
        for item in failed:
            stats.rows[item.partition[0]] -= 1
            rejected.setdefault(
                id(item.origin), (item.origin, f"Cassandra rejected it: {one_line(exc, 300, typed=True)}")
            )

    def queue_names(key: Hashable, writes: tuple[NameWrite, NameWrite], sent_at: int, record: Any) -> bool:
        """Queue the rows of a name unless this task already queued it for the hour; whether it did."""
        hour = sent_at // HOUR_MS
        span = new_names.get(key)
        if span is not None and span[0] <= hour <= span[1]:
            return False
        for table, values in writes:
            for bound in names.bind(table, values, sent_at, names_ttl):
                routing_key = bound.routing_key
                items.append(
                    Item(replicas(routing_key), (table, routing_key), INDEX_ROW_BYTES, bound, record)
                )
                stats.rows[table] += 1
        return True

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
        if drops is not None and drops(event):
            stats.optout_dropped += 1
            if event.user_login is not None and event.user_id in opted_out_users:
                stats.optout_logins[event.user_login] = event.user_id
            continue
        dedup_id: bytes | None = None
        if seen is not None:
            try:
                dedup_id = id_of(event.message_id)
            except ValueError:  # an id with no uuid (a lone surrogate): cells_of dead-letters the event
                dedup_id = None
            if dedup_id is not None:
                if dedup_id in seen:
                    stats.duplicates += 1
                    continue
                seen.add(dedup_id)
        mark = len(items)
        try:
            cells = cells_of(event)
            for table in tables:
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
                        replicas(routing_key),
                        (rows.table, routing_key),
                        size,
                        bound,
                        record,
                    )
                )
                stats.rows[rows.table] += 1
            hour = event.sent_at // HOUR_MS
            user, channel = user_name(event), channel_name(event)
            queued: list[Hashable] = []
            if user is not None:
                name_key: Hashable = (keyspace, user)
                span = cached_names(name_key)
                if (span is None or not span[0] <= hour <= span[1]) and queue_names(
                    name_key, user_name_rows(user), event.sent_at, record
                ):
                    queued.append(name_key)
            if channel is not None:
                name_key = (keyspace, channel)
                span = cached_names(name_key)
                if (span is None or not span[0] <= hour <= span[1]) and queue_names(
                    name_key, channel_name_rows(channel), event.sent_at, record
                ):
                    queued.append(name_key)
            for name_key in queued:  # marked only once every row of the event is queued
                span = new_names.get(name_key)
                new_names[name_key] = (
                    (hour, hour) if span is None else (min(hour, span[0]), max(hour, span[1]))
                )
        except UNWRITABLE as exc:  # only past the contract's bounds (a record it did not check)
            for item in items[mark:]:
                stats.rows[item.partition[0]] -= 1
            del items[mark:]
            dead_letter(
                value, partition, offset, f"cannot be written to Cassandra: {one_line(exc, 300, typed=True)}"
            )
            continue
        stats.events += 1
        if dedup_id is not None:
            written_ids += dedup_id
        if len(items) >= CHUNK_ROWS:
            submit(items)
            items = []
    submit(items)
    stats.retries, stats.requests = cassandra.finish(reject)
    for (value, partition, offset), reason in rejected.values():
        stats.events -= 1  # the rows Cassandra did take stay (idempotent), the record is a dead letter
        dead_letter(value, partition, offset, reason)
    if sent and letters is not None:
        letters.flush()
    index_cache.add(new_index, started)
    name_cache.add(new_names)
    stats.written_ids = bytes(written_ids)
    return stats


def partition_task(
    settings: SinkSettings, dead_letters: bool, optouts: OptOutSet | None = None, recent: bytes | None = None
) -> Any:
    """The function Spark runs on each partition of framed records (:mod:`sink.executor.unframe`): the
    executor side's one entry point, called on the driver to build it, and where the production
    collaborators are wired (:func:`production`). ``optouts``: the driver's opt-outs at the start of
    the batch, shipped with the task; ``recent``: the ids the last batches wrote (the writer
    deduplicates), shipped with the task."""
    private = settings.sink_spark_private_api

    def task(records: Iterator[bytes]) -> Iterator[dict[str, Any]]:
        from sink.executor.unframe import unframe
        from sink.executor.worker_setup import prepare

        prepare(private)
        wiring = production(settings, dead_letters=dead_letters)
        yield write_partition(
            map(unframe, records), settings, wiring, optouts=optouts, recent=recent
        ).to_dict()

    return task
