"""The sink's transformations on a small local Spark session: validation, keys, event time, dedup."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from schemas import chat_event
from sink import transform
from sink.validation import field_rules

pytestmark = pytest.mark.spark

GOOD = {
    "message_id": "m1",
    "kind": "PRIVMSG",
    "channel": "chan",
    "sent_at": 1_700_000_000_000,
    "received_at": 1_700_000_000_050,
    "raw": "PRIVMSG #chan :hi",
}

# (record, expected reason or None); every one is also checked against msgspec's verdict
CASES: list[tuple[bytes | None, str | None]] = [
    (json.dumps(GOOD).encode(), None),
    (json.dumps({**GOOD, "tags": {"id": "m1"}, "is_action": True, "text": None}).encode(), None),
    (json.dumps({**GOOD, "unknown_field": [1, 2]}).encode(), None),
    (b"not json", "not JSON"),
    (b"\xff\xfe{}", "not UTF-8"),
    (b"[1, 2]", "not a JSON object"),
    (b'"a string"', "not a JSON object"),
    (json.dumps({k: v for k, v in GOOD.items() if k != "message_id"}).encode(), "missing field `message_id`"),
    (json.dumps({**GOOD, "message_id": ""}).encode(), "field `message_id`: shorter than 1"),
    (json.dumps({**GOOD, "message_id": 17}).encode(), "field `message_id`: expected string, got bigint"),
    (
        json.dumps({**GOOD, "sent_at": "1700000000000"}).encode(),
        "field `sent_at`: expected integer, got string",
    ),
    (json.dumps({**GOOD, "sent_at": 1.5}).encode(), "field `sent_at`: expected integer, got decimal(2,1)"),
    (json.dumps({**GOOD, "sent_at": -1}).encode(), "field `sent_at`: less than 0"),
    (json.dumps({**GOOD, "kind": None}).encode(), "field `kind` is null"),
    (json.dumps({**GOOD, "is_action": "yes"}).encode(), "field `is_action`: expected boolean, got string"),
    (json.dumps({**GOOD, "is_action": None}).encode(), "field `is_action` is null"),
    (json.dumps({**GOOD, "tags": {"a": 1}}).encode(), "field `tags`: expected an object of strings"),
    (json.dumps({**GOOD, "tags": ["a"]}).encode(), "field `tags`: expected an object of strings"),
    (json.dumps({**GOOD, "user_login": 5}).encode(), "field `user_login`: expected string, got bigint"),
    (None, "empty record (no value)"),
]


def _kafka_df(spark: Any, values: list[bytes | None], topic: str = "t") -> Any:
    rows = [(v, topic, 0, i) for i, v in enumerate(values)]
    return spark.createDataFrame(rows, "value binary, topic string, partition int, offset long")


def test_parse_gives_each_bad_record_its_reason(spark: Any) -> None:
    parsed = transform.parse(_kafka_df(spark, [v for v, _ in CASES])).collect()
    got = {row.source: row.reason for row in parsed}
    assert got == {f"t/0/{i}": reason for i, (_, reason) in enumerate(CASES)}


def test_spark_validation_agrees_with_msgspec_decode(spark: Any) -> None:
    parsed = transform.parse(_kafka_df(spark, [v for v, _ in CASES if v is not None])).collect()
    for row in parsed:
        try:
            chat_event.decode(bytes(row.value))
            msgspec_ok = True
        except chat_event.InvalidEvent:
            msgspec_ok = False
        assert msgspec_ok == (row.reason is None), (bytes(row.value), row.reason)


def test_parse_fills_defaults_and_types_from_the_contract(spark: Any) -> None:
    row = transform.parse(_kafka_df(spark, [json.dumps(GOOD).encode()])).collect()[0]
    event = row.event.asDict()
    assert list(event) == list(chat_event.FIELD_NAMES)
    assert event["is_action"] is False and event["tags"] == {}
    assert event["sent_at"] == GOOD["sent_at"] and event["channel_id"] is None


def test_rules_are_derived_from_the_model() -> None:
    rules = {r.name: r for r in field_rules()}
    assert tuple(rules) == chat_event.FIELD_NAMES
    assert {n for n, r in rules.items() if r.required} == set(chat_event.REQUIRED_FIELDS)
    assert rules["message_id"].min_length == 1 and rules["sent_at"].ge == 0
    assert rules["user_login"].nullable and not rules["is_action"].nullable


def test_invalid_records_get_keys_that_never_collide_with_an_event(spark: Any) -> None:
    values = [json.dumps(GOOD).encode(), b"junk", b"junk"]
    keyed = transform.keyed(transform.parse(_kafka_df(spark, values))).collect()
    keys = [r.message_id for r in keyed]
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


def test_bounded_dedup_keeps_one_row_per_message_id_and_every_invalid_record(spark: Any) -> None:
    a = json.dumps(GOOD).encode()
    b = json.dumps({**GOOD, "message_id": "m2", "ingester": "replica-2"}).encode()
    rows = transform.sink_rows(_kafka_df(spark, [a, a, b, a, b"x", b"x"]), 600_000).collect()
    good = sorted(json.loads(bytes(r.value))["message_id"] for r in rows if r.reason is None)
    assert good == ["m1", "m2"]
    assert sorted(r.source for r in rows if r.reason is not None) == ["t/0/4", "t/0/5"]


def test_sink_rows_without_invalid_records(spark: Any) -> None:
    rows = transform.sink_rows(
        _kafka_df(spark, [json.dumps(GOOD).encode(), b"x"]), 1000, include_invalid=False
    )
    assert [r.reason for r in rows.collect()] == [None]


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
                out.append((json.loads(bytes(r.value))["message_id"] if r.reason is None else None, r.reason))

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
    assert [reason for _m, reason in out if reason is not None] == ["not JSON"]
