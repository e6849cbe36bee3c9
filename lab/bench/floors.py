"""The floors of the pipeline's servers, measured on the records and rows of a run, in the same run.

* Kafka: the run's records (the same values, keys and so partitions) produced again into a scratch topic by
  a raw librdkafka producer in large batches (the ingesters' compression, ``linger.ms`` 1 s), then read back
  by a raw consumer: the broker's CPU per record for both, what no client of the same records goes much
  below.
* Cassandra: the run's blocks (the rows the sink wrote, frames and all) read back and written again into a
  scratch keyspace by the raw driver (one prepared insert, 64 in flight): Cassandra's CPU per row.

Each is compared with what the part spent per record (per row) in the run's steps (:mod:`lab.bench.capacity`).
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Final

from core.settings import StackSettings
from lab.bench.loading import produce
from lab.demo import process_cpu

RECORDS: Final = 200_000
ROWS: Final = 50_000


def _cpu(component: str) -> float:
    """CPU seconds so far of the stack's ``component`` (``kafka`` or ``cassandra``)."""
    snap = process_cpu.snapshot()
    return sum(p.seconds for p in snap.values() if p.component == component)


def kafka_floor(settings: StackSettings, topic: str, records: int = RECORDS) -> dict[str, Any]:
    """The broker's CPU per record producing and consuming up to ``records`` of ``topic``'s records again."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    source = Consumer(
        {
            **settings.kafka_client_config(),
            "group.id": f"floor-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
        }
    )
    parts = source.list_topics(topic, timeout=10).topics[topic].partitions
    source.assign([TopicPartition(topic, p, 0) for p in parts])
    taken: list[tuple[bytes | None, bytes | None]] = []
    idle = 0
    while len(taken) < records and idle < 5:
        batch = source.consume(10_000, timeout=1.0)
        idle = 0 if batch else idle + 1
        taken += [(m.key(), m.value()) for m in batch if m.error() is None]
    source.close()
    taken = taken[:records]
    scratch = f"floor.{uuid.uuid4().hex[:8]}"
    admin = AdminClient(settings.kafka_client_config())
    admin.create_topics([NewTopic(scratch, num_partitions=len(parts), replication_factor=1)])[scratch].result(
        30
    )
    try:
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
            produce(producer, scratch, value, key)
        producer.flush(120)
        produced = _cpu("kafka") - before
        consumer = Consumer(
            {
                **settings.kafka_client_config(),
                "group.id": f"floor-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
            }
        )
        consumer.assign([TopicPartition(scratch, p, 0) for p in range(len(parts))])
        before = _cpu("kafka")
        read = idle = 0
        while read < len(taken) and idle < 5:
            batch = consumer.consume(10_000, timeout=1.0)
            idle = 0 if batch else idle + 1
            read += sum(1 for m in batch if m.error() is None)
        consumed = _cpu("kafka") - before
        consumer.close()
    finally:
        admin.delete_topics([scratch])
    n = max(len(taken), 1)
    return {
        "records": len(taken),
        "produce_us_per_record": round(produced / n * 1e6, 2),
        "consume_us_per_record": round(consumed / n * 1e6, 2),
        "us_per_record": round((produced + consumed) / n * 1e6, 2),
    }


def rows_written(settings: StackSettings, keyspace: str) -> dict[str, int]:
    """How many block rows each block table of ``keyspace`` holds (a scan of their keys)."""
    from cassandra.query import SimpleStatement

    from core.cql import connect
    from store.write import BLOCK_TABLES

    cluster, session = connect(settings, timeout=60)
    try:
        out = {}
        for table in BLOCK_TABLES.values():
            query = SimpleStatement(f"SELECT block FROM {keyspace}.{table}", fetch_size=5000)
            out[table] = sum(1 for _ in session.execute(query, timeout=300))
        return out
    finally:
        cluster.shutdown()


def cassandra_floor(settings: StackSettings, keyspace: str, rows: int = ROWS) -> dict[str, Any]:
    """Cassandra's CPU per row writing up to ``rows`` of ``keyspace``'s channel blocks again, raw."""
    from cassandra.concurrent import execute_concurrent_with_args
    from cassandra.query import SimpleStatement

    from core.cql import connect
    from store.blocks import CHANNEL
    from store.schema import create
    from store.write import BLOCK_TABLES

    table = BLOCK_TABLES[CHANNEL]
    cluster, session = connect(settings, timeout=60, protocol_version=4)
    scratch = f"floor_{uuid.uuid4().hex[:8]}"
    try:
        found = []
        query = SimpleStatement(
            f"SELECT channel_key, day, part, first_at, block, last_at, lines, frame FROM {keyspace}.{table}",
            fetch_size=500,
        )
        for row in session.execute(query, timeout=120):
            found.append(tuple(row))
            if len(found) >= rows:
                break
        create(session, scratch, settings.cassandra_replication)
        insert = session.prepare(
            f"INSERT INTO {scratch}.{table} (channel_key, day, part, first_at, block, last_at, lines, frame) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        )
        time.sleep(2)  # the schema's own work out of the way
        before = _cpu("cassandra")
        for ok, result in execute_concurrent_with_args(session, insert, found, concurrency=64):
            if not ok:
                raise result
        spent = _cpu("cassandra") - before
        frame_bytes = sum(len(r[7]) for r in found)
    finally:
        session.execute(f"DROP KEYSPACE IF EXISTS {scratch}", timeout=120)
        cluster.shutdown()
    n = max(len(found), 1)
    return {
        "rows": len(found),
        "mean_frame_bytes": round(frame_bytes / n, 1),
        "us_per_row": round(spent / n * 1e6, 2),
        "note": "the insert CPU only (memtable, commit log); flushes and compactions come later and are "
        "counted in the run's figures, not here",
    }
