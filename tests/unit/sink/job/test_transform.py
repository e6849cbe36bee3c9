"""The sink's transformations on a small local Spark session: keys, event time, dedup."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from schemas import chat_event
from sink.job import transform

pytestmark = pytest.mark.spark

GOOD = {
    "message_id": "m1",
    "kind": "PRIVMSG",
    "channel": "chan",
    "sent_at": 1_700_000_000_000,
    "received_at": 1_700_000_000_050,
    "raw": "PRIVMSG #chan :hi",
}

# (record, whether Spark keys it by its message_id); msgspec may still reject a keyed record (the
# writer dead-letters it), but every record msgspec accepts is keyed
CASES: list[tuple[bytes | None, bool]] = [
    (json.dumps(GOOD).encode(), True),
    (json.dumps({**GOOD, "tags": {"id": "m1"}, "is_action": True, "text": None}).encode(), True),
    (json.dumps({**GOOD, "unknown_field": [1, 2]}).encode(), True),
    (json.dumps({**GOOD, "tags": {"a": 1}}).encode(), True),
    (json.dumps({**GOOD, "kind": None}).encode(), True),
    (b"not json", False),
    (b"\xff\xfe{}", False),
    (b"[1, 2]", False),
    (b'"a string"', False),
    (json.dumps({k: v for k, v in GOOD.items() if k != "message_id"}).encode(), False),
    (json.dumps({**GOOD, "message_id": ""}).encode(), False),
    (json.dumps({**GOOD, "message_id": None}).encode(), False),
    (json.dumps({k: v for k, v in GOOD.items() if k != "sent_at"}).encode(), False),
    (json.dumps({**GOOD, "sent_at": "1700000000000"}).encode(), False),
    (json.dumps({**GOOD, "sent_at": 1.5}).encode(), False),
    (None, False),
]


def _kafka_df(spark: Any, values: list[bytes | None], topic: str = "t") -> Any:
    rows = [(v, topic, 0, i) for i, v in enumerate(values)]
    return spark.createDataFrame(rows, "value binary, topic string, partition int, offset long")


def test_records_are_keyed_by_message_id_or_by_their_own_position(spark: Any) -> None:
    rows = transform.keyed(_kafka_df(spark, [v for v, _ in CASES])).collect()
    for row, (value, by_id) in zip(sorted(rows, key=lambda r: r.offset), CASES, strict=True):
        if by_id:
            assert (row.message_id, row.sent_at) == ("m1", GOOD["sent_at"]), value
        else:
            assert row.message_id == f"{transform.INVALID_KEY_PREFIX}0/{row.offset}", value
            assert row.sent_at is None


def test_every_event_msgspec_accepts_is_keyed_by_its_id(spark: Any) -> None:
    rows = transform.keyed(_kafka_df(spark, [v for v, _ in CASES])).collect()
    for row in rows:
        try:
            event = chat_event.decode(bytes(row.value))
        except (chat_event.InvalidEvent, TypeError):
            continue
        assert row.message_id == event.message_id and row.sent_at == event.sent_at


def test_spark_reads_only_the_dedup_fields_of_the_contract_schema(spark: Any) -> None:
    plan = transform.keyed(_kafka_df(spark, [json.dumps(GOOD).encode()]))._jdf.queryExecution()
    text = plan.optimizedPlan().toString()
    assert "message_id" in text and "sent_at" in text
    assert "raw" not in text.replace("rawValue", "") and "display_name" not in text


def test_unkeyed_records_get_keys_that_never_collide(spark: Any) -> None:
    values: list[bytes | None] = [json.dumps(GOOD).encode(), b"junk", b"junk"]
    keys = [r.message_id for r in transform.keyed(_kafka_df(spark, values)).collect()]
    assert keys[0] == "m1"
    assert keys[1] != keys[2] and all(k.startswith(transform.INVALID_KEY_PREFIX) for k in keys[1:])


def test_event_time_is_sent_at_when_recent_and_clamped_otherwise(spark: Any) -> None:
    from pyspark.sql import functions as F

    watermark = 600_000
    now = int(time.time() * 1000)
    df = spark.createDataFrame(
        [(now - 5_000,), (now - 86_400_000,), (now + 3_600_000,), (None,)], "sent_at long"
    )
    out = (
        transform.with_event_time(df, watermark)
        .select(
            "sent_at", F.unix_millis("event_time").alias("t"), F.unix_millis(F.current_timestamp()).alias("n")
        )
        .collect()
    )
    recent, old, future, missing = out
    assert recent.t == recent.sent_at
    assert old.t == old.n - watermark // 2
    assert future.t == future.n
    assert missing.t == missing.n - watermark // 2


def test_bounded_dedup_keeps_one_row_per_message_id_and_every_unkeyed_record(spark: Any) -> None:
    a = json.dumps(GOOD).encode()
    b = json.dumps({**GOOD, "message_id": "m2", "ingester": "replica-2"}).encode()
    rows = transform.sink_rows(_kafka_df(spark, [a, a, b, a, b"x", b"x"]), 600_000).collect()
    assert list(rows[0].asDict()) == list(transform.SINK_COLUMNS)
    good = sorted(json.loads(bytes(r.value))["message_id"] for r in rows if r.value != b"x")
    assert good == ["m1", "m2"]
    assert sorted((r.partition, r.offset) for r in rows if r.value == b"x") == [(0, 4), (0, 5)]


def test_streaming_dedup_spans_micro_batches_and_never_drops_old_events(spark: Any, tmp_path: Path) -> None:
    """Two runs over one checkpoint: a copy in the second batch is dropped; an event far older than
    the watermark (a replay) is still written, not dropped as late."""
    from pyspark.sql import functions as F

    source, checkpoint = tmp_path / "in", tmp_path / "ckpt"
    source.mkdir()
    now = int(time.time() * 1000)
    fresh = {**GOOD, "sent_at": now}
    out: list[tuple[str | None, str | None]] = []

    def run(lines: list[str], name: str) -> None:
        (source / name).write_text("\n".join(lines) + "\n")
        kafka_like = (
            spark.readStream.format("text")
            .load(str(source))
            .select(
                F.col("value").cast("binary").alias("value"),
                F.lit("t").alias("topic"),
                F.lit(0).alias("partition"),
                F.xxhash64("value", F.input_file_name()).alias("offset"),
            )
        )
        rows = transform.sink_rows(kafka_like, 600_000)

        def collect(batch: Any, _batch_id: int) -> None:
            for r in batch.collect():
                try:
                    out.append((chat_event.decode(bytes(r.value)).message_id, None))
                except chat_event.InvalidEvent as exc:
                    out.append((None, str(exc)))

        query = (
            rows.writeStream.foreachBatch(collect)
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(120)
        assert query.exception() is None

    run([json.dumps({**fresh, "message_id": "a"}), json.dumps({**fresh, "message_id": "b"})], "1.json")
    old = {**GOOD, "message_id": "old", "sent_at": now - 7 * 86_400_000}
    run([json.dumps({**fresh, "message_id": "a"}), json.dumps(old), "{broken"], "2.json")
    ids = sorted(m for m, reason in out if reason is None and m is not None)
    assert ids == ["a", "b", "old"]
    reasons = [reason for _m, reason in out if reason is not None]
    assert len(reasons) == 1 and reasons[0].startswith("not JSON")


def test_kafka_partitions_are_coalesced_into_the_read_tasks_without_losing_a_record(spark: Any) -> None:
    values: list[bytes | None] = [json.dumps({**GOOD, "message_id": f"m{i}"}).encode() for i in range(60)]
    kafka = _kafka_df(spark, values).repartition(12)
    assert kafka.rdd.getNumPartitions() == 12
    two = transform.coalesced(kafka, 2)
    assert two.rdd.getNumPartitions() == 2
    assert sorted(r.offset for r in two.collect()) == list(range(60))
    assert transform.coalesced(kafka, 0).rdd.getNumPartitions() == 12  # 0: one task per partition
    assert transform.coalesced(kafka, 50).rdd.getNumPartitions() == 12  # never more than partitions
