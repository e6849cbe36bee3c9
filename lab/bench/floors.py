"""The floors of the pipeline's servers, measured on the records and rows of a run, in the same run.

Two kinds, each on the run's own data after its steps (the stack's servers still up, the run's clients
gone):

* **at a step's rate** (what each step is compared with): the same work a step gave the server, done by
  the raw library at the same rate for :data:`AT_RATE_S` seconds, the server's whole CPU over that time
  (its idle work included, as in the step; its JIT compilers left out, as a step counts them apart) in
  :data:`WINDOWS` windows, per record or row by the median window (a flush, compaction or collection of
  what was written before the floor falls in one window and does not move it).

  - Kafka: the run's records (the same values and keys, so the same partitions) produced again into a
    scratch topic of as many partitions, two records per message sent (R = 2), by as many raw librdkafka
    producers as the run had ingesters with the ingesters' own producer settings (``linger.ms``,
    compression, acks), and read as they come by one raw consumer, as the sink reads them.
  - Cassandra, once no compaction has run for a few seconds (:func:`quiet`; the run's own settle after
    its last step): the block rows the sink wrote in the step (both block tables, frames and all, found by
    their write times) and the index rows it wrote with them (:func:`with_index_rows`) written again into
    a scratch keyspace by the raw driver in the rounds the sink wrote them, one round every trigger
    interval, each round's rows in unlogged batches cut as the sink cuts them (by partition; at most
    :data:`BATCH_ROWS` rows, :data:`BATCH_PARTITIONS` partitions, :data:`BATCH_BYTES`); meanwhile
    ``chatlog serve`` on the run's keyspace answers the step's reads again (:func:`serve_polls`: the e2e
    probe's polls, each reading what it read at that moment of the step). The sink's name rows (a name at
    most once an hour) are not in it.

* **in bulk**: the same records produced at once (``linger.ms`` 1 s) and read back, a sample of the block
  rows inserted one statement each, 64 in flight: the marginal cost of a record or row to the server,
  which no client reaches at a few thousand messages a second.
"""

from __future__ import annotations

import contextlib
import itertools
import statistics
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Final

from core.settings import StackSettings
from lab.bench.loading import produce
from lab.bench.scratch import scratch_keyspaces, scratch_topics
from lab.demo import process_cpu
from lab.demo.e2e import POLL_S
from store.requests import BatchLimits
from store.write import INDEX_ROW_BYTES, IndexCache

RECORDS: Final = 200_000
AT_RATE_S: Final = 40.0
"""Seconds each floor at a step's rate is measured over (after :data:`AT_RATE_WARM_S` to connect)."""
AT_RATE_WARM_S: Final = 5.0
QUIET_TIMEOUT_S: Final = 180.0
"""The longest a Cassandra floor waits for the server's compactions to end before it measures."""
WINDOWS: Final = 4
"""The windows a floor at a rate is measured in; its figure is the median window's."""
PRODUCERS: Final = 4
"""Raw producers of the Kafka floor at a rate: the run's ingesters (two replica groups of two)."""


Record = tuple[bytes | None, bytes | None]
"""A Kafka record's key and value."""


def _cpu(component: str) -> float:
    """CPU seconds so far of the stack's ``component`` (``kafka`` or ``cassandra``), its JIT compilers'
    left out as a step leaves them out (``jvm_jit``)."""
    snap = process_cpu.snapshot()
    return sum(p.seconds - p.jit_since(None) for p in snap.values() if p.component == component)


def paced(per_s: float, seconds: float, send: Callable[[int], None], slice_s: float = 0.01) -> int:
    """Call ``send(i)`` for i = 0, 1, ... at ``per_s`` a second, evenly over ``seconds`` (in slices of
    ``slice_s``; a slow ``send`` catches up in the next slices); returns how many were sent."""
    start = time.monotonic()
    sent = 0
    while True:
        elapsed = time.monotonic() - start
        due = min(int(elapsed * per_s), int(seconds * per_s))
        while sent < due:
            send(sent)
            sent += 1
        if elapsed >= seconds:
            return sent
        time.sleep(slice_s)


@dataclass(frozen=True, slots=True)
class Windows:
    """A server's CPU over the windows of a floor at a rate: CPU seconds per second of each."""

    cores: tuple[float, ...]
    window_s: float

    @property
    def median(self) -> float:
        """The median window's CPU seconds per second: a compaction, flush or collection of data written
        before the floor, in one window, does not move it."""
        return statistics.median(self.cores) if self.cores else 0.0

    def us_per(self, per_s: float) -> float:
        """µs of CPU per unit of work at ``per_s`` units a second, by the median window."""
        return round(self.median / max(per_s, 1e-9) * 1e6, 2)


def _measured(component: str, seconds: float, work: Callable[[float], int]) -> tuple[int, Windows]:
    """Run ``work(AT_RATE_WARM_S + seconds)``; returns what it counts and ``component``'s CPU over its last
    ``seconds`` in :data:`WINDOWS` windows (its first :data:`AT_RATE_WARM_S` connect and warm up)."""
    window_s = seconds / WINDOWS
    marks: list[float] = []

    def mark() -> None:
        start = time.monotonic() + AT_RATE_WARM_S
        for i in range(WINDOWS + 1):
            time.sleep(max(0.0, start + i * window_s - time.monotonic()))
            marks.append(_cpu(component))

    marker = threading.Thread(target=mark, daemon=True)
    marker.start()
    done = work(AT_RATE_WARM_S + seconds)
    marker.join()
    cores = tuple((b - a) / window_s for a, b in itertools.pairwise(marks))
    return done, Windows(tuple(round(c, 5) for c in cores), window_s)


def _consumer(settings: StackSettings) -> Any:
    """A raw consumer of its own throw-away group that commits nothing."""
    from confluent_kafka import Consumer

    return Consumer(
        {
            **settings.kafka_client_config(),
            "group.id": f"floor-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
        }
    )


def taken_records(settings: StackSettings, topic: str, records: int = RECORDS) -> tuple[list[Record], int]:
    """Up to ``records`` of ``topic``'s records from its start, and how many partitions it has."""
    from confluent_kafka import TopicPartition

    source = _consumer(settings)
    parts = source.list_topics(topic, timeout=10).topics[topic].partitions
    source.assign([TopicPartition(topic, p, 0) for p in parts])
    taken: list[Record] = []
    idle = 0
    while len(taken) < records and idle < 5:
        batch = source.consume(10_000, timeout=1.0)
        idle = 0 if batch else idle + 1
        taken += [(m.key(), m.value()) for m in batch if m.error() is None]
    source.close()
    return taken[:records], len(parts)


def _scratch(settings: StackSettings, partitions: int) -> AbstractContextManager[StackSettings]:
    """Scratch topics for a floor, their messages topic of ``partitions``, deleted after it."""
    return scratch_topics(settings, f"floor{uuid.uuid4().hex[:8]}", messages_partitions=partitions)


def _reader(settings: StackSettings, offset: int) -> Any:
    """A raw consumer of every partition of ``settings``' messages topic from ``offset``."""
    from confluent_kafka import TopicPartition

    consumer = _consumer(settings)
    topic = settings.topic_messages
    consumer.assign([TopicPartition(topic, p, offset) for p in range(settings.messages_partitions)])
    return consumer


def kafka_floor(settings: StackSettings, taken: list[Record], partitions: int) -> dict[str, Any]:
    """The broker's CPU per record producing ``taken`` at once into a topic of ``partitions`` and reading
    them back (the bulk floor)."""
    from confluent_kafka import Producer

    with _scratch(settings, partitions) as scratch:
        producer = Producer(
            {
                **settings.kafka_client_config(),
                **settings.producer_guarantees(),
                "compression.type": "zstd",
                "linger.ms": 1000,
                "batch.size": 1_000_000,
                "partitioner": "murmur2_random",
            }
        )
        before = _cpu("kafka")
        for key, value in taken:
            produce(producer, scratch.topic_messages, value, key)
        producer.flush(120)
        produced = _cpu("kafka") - before
        consumer = _reader(scratch, 0)
        before = _cpu("kafka")
        read = idle = 0
        while read < len(taken) and idle < 5:
            batch = consumer.consume(10_000, timeout=1.0)
            idle = 0 if batch else idle + 1
            read += sum(1 for m in batch if m.error() is None)
        consumed = _cpu("kafka") - before
        consumer.close()
    n = max(len(taken), 1)
    return {
        "records": len(taken),
        "produce_us_per_record": round(produced / n * 1e6, 2),
        "consume_us_per_record": round(consumed / n * 1e6, 2),
        "us_per_record": round((produced + consumed) / n * 1e6, 2),
    }


def kafka_floor_at(
    settings: StackSettings,
    taken: list[Record],
    partitions: int,
    records_per_s: float,
    seconds: float = AT_RATE_S,
) -> dict[str, Any]:
    """The broker's whole CPU per record while :data:`PRODUCERS` raw producers with the ingesters' settings
    send ``records_per_s`` of ``taken`` (cycled) into a topic of ``partitions`` and one raw consumer reads
    them as they come, over ``seconds``."""
    from confluent_kafka import OFFSET_END, Producer

    from core.settings import load
    from ingest.producer import producer_config
    from ingest.settings import IngestSettings

    ingest = load(IngestSettings)
    with _scratch(settings, partitions) as scratch:
        producers = [Producer(producer_config(ingest, f"floor-{i}")) for i in range(PRODUCERS)]
        consumer = _reader(scratch, OFFSET_END)
        stop = threading.Event()
        read = [0]

        def consume() -> None:
            while not stop.is_set():
                read[0] += sum(1 for m in consumer.consume(10_000, timeout=0.2) if m.error() is None)

        reading = threading.Thread(target=consume, daemon=True)
        reading.start()

        def send(i: int) -> None:
            key, value = taken[i % len(taken)]
            producer = producers[zlib.crc32(key or b"") % PRODUCERS]
            produce(producer, scratch.topic_messages, value, key)
            if i % 500 == 0:
                for each in producers:
                    each.poll(0)

        def work(total_s: float) -> int:
            n = paced(records_per_s, total_s, send)
            for producer in producers:
                producer.flush(30)
            return n

        sent, cpu = _measured("kafka", seconds, work)
        stop.set()
        reading.join()
        consumer.close()
    return {
        "records_per_s": records_per_s,
        "seconds": seconds,
        "read": read[0],
        "sent": sent,
        "cores_by_window": list(cpu.cores),
        "us_per_record": cpu.us_per(records_per_s),
    }


_COLUMNS: Final[dict[str, str]] = {
    "channel_blocks": "channel_key, day, part, first_at, block, last_at, lines, frame",
    "user_blocks": "channel_key, user_key, month, part, first_at, block, last_at, lines, frame",
}
"""The cells of a block row of each block table, in the order a :class:`Written` holds them."""
BLOCK_TABLES: Final = tuple(_COLUMNS)
_INDEX_COLUMNS: Final[dict[str, str]] = {
    "channel_days": "channel_key, day, part",
    "user_months": "channel_key, user_key, month, part",
    "channel_users": "channel_key, user_key",
}
"""The cells of an index row of each index table: the first cells of the block row it indexes."""
_INDEXES: Final[dict[str, tuple[str, ...]]] = {
    "channel_blocks": ("channel_days",),
    "user_blocks": ("user_months", "channel_users"),
}
"""The index rows the sink writes beside a block row of each block table (``store.write``)."""
BULK_ROWS: Final = 50_000
"""Most rows of the bulk floor (a sample of the run's, spread over it)."""
_PARTITION: Final[dict[str, int]] = {
    "channel_blocks": 3,
    "user_blocks": 4,
    "channel_days": 1,
    "user_months": 2,
    "channel_users": 1,
}
"""How many of a row's first cells are its partition key."""
BATCH_ROWS: Final = BatchLimits().max_rows
BATCH_PARTITIONS: Final = BatchLimits().max_partitions
BATCH_BYTES: Final = BatchLimits().max_bytes
"""The cuts of a floor's unlogged batches: the sink's defaults (``sink_batch_max_*``)."""


@dataclass(frozen=True, slots=True)
class Written:
    """A row a run wrote: its table, its cells (:data:`_COLUMNS`, :data:`_INDEX_COLUMNS`) and its write
    time (epoch s)."""

    table: str
    cells: tuple[Any, ...]
    at: float

    @property
    def partition(self) -> tuple[Any, ...]:
        return (self.table, *self.cells[: _PARTITION[self.table]])


def written_rows(settings: StackSettings, keyspace: str) -> list[Written]:
    """Every block row of ``keyspace`` (both block tables) with its write time, oldest first."""
    from cassandra.query import SimpleStatement

    from core.cql import connect

    cluster, session = connect(settings, timeout=60, protocol_version=4)
    try:
        out = []
        for table, columns in _COLUMNS.items():
            query = SimpleStatement(
                f"SELECT {columns}, writetime(frame) FROM {keyspace}.{table}", fetch_size=1000
            )
            rows = session.execute(query, timeout=300)
            out += [Written(table, tuple(row[:-1]), row[-1] / 1e6) for row in rows]
        return sorted(out, key=lambda w: w.at)
    finally:
        cluster.shutdown()


def with_index_rows(rows: Sequence[Written], refresh_s: float = IndexCache().refresh_s) -> list[Written]:
    """``rows`` (block rows, oldest first) with the index rows the sink writes beside them, each after its
    block row: an index key when first seen and again ``refresh_s`` after it was last written, as one
    sink process's :class:`store.write.IndexCache` (the sink's processes each keep their own, so it may
    write some more: these are the fewest it writes)."""
    last: dict[tuple[str, tuple[Any, ...]], float] = {}
    out: list[Written] = []
    for row in rows:
        out.append(row)
        for index in _INDEXES[row.table]:
            cells = row.cells[: len(_INDEX_COLUMNS[index].split(","))]
            seen = last.get((index, cells))
            if seen is None or row.at - seen >= refresh_s:
                last[index, cells] = row.at
                out.append(Written(index, cells, row.at))
    return out


def rounds_of(rows: Sequence[Written], lo: float, hi: float, gap_s: float) -> list[list[Written]]:
    """The rows written in ``[lo, hi)`` (epoch s; ``rows`` oldest first) in the rounds they were written
    in: a round ends where no row was written for ``gap_s``."""
    out: list[list[Written]] = []
    last = -float("inf")
    for row in rows:
        if not lo <= row.at < hi:
            continue
        if row.at - last > gap_s:
            out.append([])
        out[-1].append(row)
        last = row.at
    return out


def batched(rows: Sequence[Written]) -> list[list[Written]]:
    """``rows`` in unlogged batches cut as the sink cuts them (:func:`store.requests.plan_batches` with the
    sink's default limits; on one node every partition has the same replica), by partition."""
    from store.requests import Item, plan_batches

    items = [Item(None, (row.table, repr(row.partition).encode()), _size(row), row) for row in rows]
    return [[item.statement for item in batch] for batch in plan_batches(items, BatchLimits())]


def quiet(session: Any, timeout_s: float = QUIET_TIMEOUT_S, quiet_s: float = 5.0) -> float:
    """Wait until Cassandra has run no compaction (of any keyspace: the run's own are still settling after
    its last step) for ``quiet_s``, at most ``timeout_s``; the seconds waited."""
    from lab.bench.keyspace_disk import compacting

    t0 = time.monotonic()
    since = t0
    while time.monotonic() - t0 < timeout_s:
        if compacting(session, None):
            since = time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            break
        time.sleep(1.0)
    return round(time.monotonic() - t0, 1)


def _size(row: Written) -> int:
    """The bytes the sink counts for ``row`` in a batch (``store.write``: a block's frame and 64, an index
    row 64)."""
    return len(row.cells[-1]) + INDEX_ROW_BYTES if row.table in _COLUMNS else INDEX_ROW_BYTES


def _inserting(settings: StackSettings, write: Callable[[Any, dict[str, Any]], int]) -> float:
    """``write(session, inserts)`` (a prepared INSERT per block and index table) into a scratch keyspace of
    the product's schema, dropped after, once no compaction runs (:func:`quiet`); returns the seconds it
    waited for that."""
    from core.cql import connect
    from store.schema import create

    with scratch_keyspaces(settings, f"floor_{uuid.uuid4().hex[:8]}") as (scratch,):
        cluster, session = connect(settings, timeout=60, protocol_version=4)
        try:
            create(session, scratch, settings.cassandra_replication)
            inserts = {
                table: session.prepare(
                    f"INSERT INTO {scratch}.{table} ({columns}) "
                    f"VALUES ({', '.join('?' * len(columns.split(',')))})"
                )
                for table, columns in {**_COLUMNS, **_INDEX_COLUMNS}.items()
            }
            time.sleep(2)  # the schema's own work out of the way
            waited = quiet(session)
            write(session, inserts)
            return waited
        finally:
            cluster.shutdown()


def cassandra_floor(settings: StackSettings, rows: Sequence[Written]) -> dict[str, Any]:
    """Cassandra's CPU per row inserting ``rows`` raw, one statement each, 64 in flight (the bulk floor)."""
    from cassandra.concurrent import execute_concurrent

    spent = [0.0]

    def write(session: Any, inserts: dict[str, Any]) -> int:
        before = _cpu("cassandra")
        statements = [(inserts[row.table], row.cells) for row in rows]
        for ok, result in execute_concurrent(session, statements, concurrency=64):
            if not ok:
                raise result
        spent[0] = _cpu("cassandra") - before
        return len(rows)

    _inserting(settings, write)
    n = max(len(rows), 1)
    return {
        "rows": len(rows),
        "mean_frame_bytes": round(sum(len(row.cells[-1]) for row in rows) / n, 1),
        "us_per_row": round(spent[0] / n * 1e6, 2),
        "note": "the insert CPU only (memtable, commit log); flushes and compactions come later and are "
        "counted in the run's figures, not here",
    }


ReadLoad = Callable[[threading.Event], None]
"""Reads made beside a floor's writes until the event is set (:func:`serve_polls`)."""
PROBE_LOOKBACK_MS: Final = 1000


def serve_polls(
    base: str, channels: Sequence[str], lo: float, hi: float, every_s: float = POLL_S
) -> ReadLoad:
    """The e2e probe's polls of a step again, to ``chatlog serve`` at ``base`` on the run's keyspace: each
    of ``channels`` asked for its recent messages every ``every_s``, ``before`` a moment t that sweeps the
    step's window ``[lo, hi)`` (epoch s) at the clock's pace and ``after`` :data:`PROBE_LOOKBACK_MS` before
    it, so that each poll reads the blocks the step's poll at t read (the probe asked after its newest
    unseen line, with no ``before``)."""
    import httpx

    def polls(stop: threading.Event) -> None:
        start = time.monotonic()
        with httpx.Client(base_url=base, timeout=10) as client:
            while not stop.is_set():
                began = time.monotonic()
                t_ms = int((lo + (began - start) % max(hi - lo, 0.001)) * 1000)
                for channel in channels:
                    params = {"after": t_ms - PROBE_LOOKBACK_MS, "before": t_ms}
                    with contextlib.suppress(httpx.HTTPError):
                        client.get(f"/api/v2/recent-messages/{channel}", params=params)
                stop.wait(max(0.0, every_s - (time.monotonic() - began)))

    return polls


def cassandra_floor_at(
    settings: StackSettings,
    rounds: Sequence[Sequence[Written]],
    every_s: float,
    seconds: float = AT_RATE_S,
    reads: ReadLoad | None = None,
) -> dict[str, Any]:
    """Cassandra's whole CPU per row while the raw driver writes a step's ``rounds`` again (cycled) at the
    step's cadence, one round every ``every_s`` (the sink's trigger interval), each round's rows in
    unlogged batches cut as the sink cuts them (:func:`batched`), 64 in flight, over ``seconds``; and
    ``reads`` made meanwhile (the step's reads by ``chatlog serve``, :func:`serve_polls`)."""
    from cassandra.concurrent import execute_concurrent
    from cassandra.query import BatchStatement, BatchType

    if not rounds:
        return {"rows_per_s": 0.0, "seconds": seconds, "round_s": every_s, "sent": 0, "us_per_row": None}
    sent = [0]
    measured: list[Windows] = []

    def write(session: Any, inserts: dict[str, Any]) -> int:
        def send(i: int) -> None:
            statements = []
            for rows in batched(rounds[i % len(rounds)]):
                batch = BatchStatement(batch_type=BatchType.UNLOGGED)
                for row in rows:
                    batch.add(inserts[row.table], row.cells)
                statements.append((batch, ()))
            for ok, result in execute_concurrent(session, statements, concurrency=64):
                if not ok:
                    raise result
            sent[0] += len(rounds[i % len(rounds)])

        def work(total_s: float) -> int:
            return paced(1 / every_s, total_s, send)

        stop = threading.Event()
        reader = threading.Thread(target=reads, args=(stop,), daemon=True) if reads is not None else None
        if reader is not None:
            reader.start()
        try:
            _done, cpu = _measured("cassandra", seconds, work)
        finally:
            stop.set()
            if reader is not None:
                reader.join()
        measured.append(cpu)
        return sent[0]

    waited = _inserting(settings, write)
    rows_per_s = sum(len(r) for r in rounds) / len(rounds) / every_s
    return {
        "rows_per_s": round(rows_per_s, 1),
        "seconds": seconds,
        "round_s": every_s,
        "rounds": len(rounds),
        "sent": sent[0],
        "quiet_after_s": waited,
        "with_reads": reads is not None,
        "cores_by_window": list(measured[0].cores),
        "us_per_row": measured[0].us_per(rows_per_s),
    }
