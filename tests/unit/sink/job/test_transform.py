"""The sink's transformations on a small local Spark session: the streaming query's rows (every record, to the
writers, which drop copies: Spark keeps no dedup state), a backfill's exact dedup by message id (every record
Spark cannot key kept), and the read tasks."""

from __future__ import annotations

import json
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
    (json.dumps({k: v for k, v in GOOD.items() if k != "sent_at"}).encode(), True),  # only its id is read
    (json.dumps({**GOOD, "sent_at": "1700000000000"}).encode(), True),
    (b"not json", False),
    (b"\xff\xfe{}", False),
    (b"[1, 2]", False),
    (b'"a string"', False),
    (json.dumps({k: v for k, v in GOOD.items() if k != "message_id"}).encode(), False),
    (json.dumps({**GOOD, "message_id": ""}).encode(), False),
    (json.dumps({**GOOD, "message_id": None}).encode(), False),
    (None, False),
]


def _kafka_df(spark: Any, values: list[bytes | None], topic: str = "t") -> Any:
    rows = [(v, topic, 0, i) for i, v in enumerate(values)]
    return spark.createDataFrame(rows, "value binary, topic string, partition int, offset long")


def test_records_are_keyed_by_message_id_or_by_their_own_position(spark: Any) -> None:
    rows = transform.keyed(_kafka_df(spark, [v for v, _ in CASES])).collect()
    for row, (value, by_id) in zip(sorted(rows, key=lambda r: r.offset), CASES, strict=True):
        if by_id:
            assert row.message_id == "m1", value
        else:
            assert row.message_id == f"{transform.INVALID_KEY_PREFIX}0/{row.offset}", value
        assert (row.value, row.partition) == (value, 0)


def test_every_event_msgspec_accepts_is_keyed_by_its_id(spark: Any) -> None:
    rows = transform.keyed(_kafka_df(spark, [v for v, _ in CASES])).collect()
    for row in rows:
        try:
            event = chat_event.decode(bytes(row.value))
        except (chat_event.InvalidEvent, TypeError):
            continue
        assert row.message_id == event.message_id


def test_spark_reads_only_the_message_id_of_the_contract_schema(spark: Any) -> None:
    plan = transform.keyed(_kafka_df(spark, [json.dumps(GOOD).encode()]))._jdf.queryExecution()
    text = plan.optimizedPlan().toString()
    assert "message_id" in text and "sent_at" not in text
    assert "raw" not in text.replace("rawValue", "") and "display_name" not in text


def test_unkeyed_records_get_keys_that_never_collide(spark: Any) -> None:
    values: list[bytes | None] = [json.dumps(GOOD).encode(), b"junk", b"junk"]
    keys = [r.message_id for r in transform.keyed(_kafka_df(spark, values)).collect()]
    assert keys[0] == "m1"
    assert keys[1] != keys[2] and all(k.startswith(transform.INVALID_KEY_PREFIX) for k in keys[1:])


def test_a_backfill_keeps_one_row_per_message_id_and_every_unkeyed_record(spark: Any) -> None:
    a = json.dumps(GOOD).encode()
    b = json.dumps({**GOOD, "message_id": "m2", "ingester": "replica-2"}).encode()
    rows = transform.deduplicated(_kafka_df(spark, [a, a, b, a, b"x", b"x"])).collect()
    assert list(rows[0].asDict()) == list(transform.SINK_COLUMNS)
    good = sorted(json.loads(bytes(r.value))["message_id"] for r in rows if r.value != b"x")
    assert good == ["m1", "m2"]
    assert sorted((r.partition, r.offset) for r in rows if r.value == b"x") == [(0, 4), (0, 5)]


def test_the_streaming_rows_are_every_record_and_are_counted(spark: Any) -> None:
    """Copies and invalid records alike reach the writers (which drop the copies and dead-letter the rest);
    the records read are counted under the observation."""
    from pyspark.sql import Observation

    a = json.dumps(GOOD).encode()
    values: list[bytes | None] = [a, a, b"x", None, a]
    observation = Observation("sink_rows_test")
    rows = transform.sink_rows(_kafka_df(spark, values), observation=observation).collect()
    assert list(rows[0].asDict()) == list(transform.SINK_COLUMNS)
    assert sorted((r.offset, r.value) for r in rows) == [(i, v) for i, v in enumerate(values)]
    assert observation.get == {"read": len(values)}
    assert transform.sink_rows(_kafka_df(spark, values)).count() == len(values)  # unobserved: the same rows


def test_kafka_partitions_are_coalesced_into_the_read_tasks_without_losing_a_record(spark: Any) -> None:
    values: list[bytes | None] = [json.dumps({**GOOD, "message_id": f"m{i}"}).encode() for i in range(60)]
    kafka = _kafka_df(spark, values).repartition(12)
    assert kafka.rdd.getNumPartitions() == 12
    two = transform.coalesced(kafka, 2)
    assert two.rdd.getNumPartitions() == 2
    assert sorted(r.offset for r in two.collect()) == list(range(60))
    assert transform.coalesced(kafka, 0).rdd.getNumPartitions() == 12  # 0: one task per partition
    assert transform.coalesced(kafka, 50).rdd.getNumPartitions() == 12  # never more than partitions
