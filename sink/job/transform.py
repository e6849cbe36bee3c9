"""The sink's transformations: pure DataFrame -> DataFrame functions, no I/O.

    Kafka rows --sink_rows--> value, partition, offset    (to the writer: an event, or a dead letter)

The streaming query hands every record to the writer tasks, which drop the copies of a message
(:mod:`sink.dedup`): no JSON parse, no shuffle and no state in Spark. A backfill deduplicates exactly over
its whole range (:func:`deduplicated`): Spark parses each record's ``message_id`` only (the writer validates
every record with the contract's own validator, :func:`schemas.chat_event.decode`, so there is one
validator and one set of reasons for a dead letter); a record Spark cannot key (not JSON, no id) gets a key
of its own, so it is never taken for a copy of anything and always reaches the writer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from schemas.spark import chat_event_schema

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Observation

SINK_COLUMNS = ("value", "partition", "offset")
"""Columns handed to the writer, in this order."""
INVALID_KEY_PREFIX = "\x00unkeyed:"


def coalesced(kafka: DataFrame, tasks: int) -> DataFrame:
    """``kafka`` read by at most ``tasks`` tasks (0: unchanged, one task per Kafka partition).

    A narrow coalesce: no shuffle, each task reads several Kafka partitions in turn. Every task costs the
    same few milliseconds of scheduling and consumer set-up whatever it reads, every micro-batch. All copies
    of a message stay in one task (they share a Kafka partition), which the writer's deduplication needs.
    """
    if tasks <= 0:
        return kafka
    return kafka.coalesce(tasks)


def keyed(kafka: DataFrame) -> DataFrame:
    """Kafka source rows -> ``message_id`` (the deduplication key), ``value``, ``partition``, ``offset``: a
    record with a non-empty ``message_id`` is keyed by it, any other by its Kafka position under a prefix no
    IRC-derived id can have (IRC lines never contain NUL)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    schema = StructType([f for f in chat_event_schema().fields if f.name == "message_id"])
    event = F.from_json(F.col("value").cast("string"), schema)
    staged = kafka.select("value", "partition", "offset", event.alias("event"))
    message_id = F.col("event.message_id")
    return staged.select(
        F.when(F.char_length(message_id) > 0, message_id)
        .otherwise(F.concat(F.lit(INVALID_KEY_PREFIX), F.col("partition"), F.lit("/"), F.col("offset")))
        .alias("message_id"),
        *SINK_COLUMNS,
    )


def deduplicated(kafka: DataFrame) -> DataFrame:
    """A bounded read's rows, one per ``message_id`` (exact), and every unkeyed record."""
    return keyed(kafka).dropDuplicates(["message_id"]).select(*SINK_COLUMNS)


def counted(kafka: DataFrame, observation: str | Observation) -> DataFrame:
    """``kafka`` observed under ``observation``: ``read``, the records read (per micro-batch in the
    streaming progress' ``observedMetrics``; once for a bounded read)."""
    from pyspark.sql import functions as F

    return kafka.observe(observation, F.count(F.lit(1)).alias("read"))


def sink_rows(kafka: DataFrame, *, observation: str | Observation | None = None) -> DataFrame:
    """The streaming query's rows: every record, counted under ``observation``."""
    if observation is not None:
        kafka = counted(kafka, observation)
    return kafka.select(*SINK_COLUMNS)
