"""The sink's transformations: pure DataFrame -> DataFrame functions, no I/O.

The same functions serve the streaming query and the bounded backfill (where ``withWatermark`` is a
no-op and the deduplication is exact over the whole range)::

    Kafka rows --parse--> value, source, event, reason
        --keyed--> message_id (invalid records: a key of their own), sent_at, value, reason, source
        --deduplicate--> one row per message_id within the watermark (withWatermark + dropDuplicates...)
        --sink_rows--> value, reason, source   (reason null: write the event; else dead-letter it)

Event time. The watermark runs on ``sent_at``, clamped into ``[batch time - watermark/2, batch time]``
(the batch time is Spark's ``current_timestamp()``, fixed per micro-batch and recorded in the
checkpoint, so a re-run batch computes the same values). Live events are unchanged by the clamp. Old
events (a replay, an import of old logs, partitions read unevenly while catching up) and events with
a clock in the future would otherwise be *late* for Spark, and Spark's deduplication silently drops
late rows; with the clamp no row is ever late, so no event can be lost. Correctness never rests on the
deduplication anyway: every table's primary key contains ``message_id``, so a copy that slips through
overwrites its own row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sink.validation import validate

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Observation

SINK_COLUMNS = ("value", "reason", "source")
"""Columns handed to the writer, in this order."""
INVALID_KEY_PREFIX = "\x00invalid:"


def parse(kafka: DataFrame) -> DataFrame:
    """Kafka source rows -> ``value`` (bytes), ``source`` (``topic/partition/offset``), ``event``
    (struct of :func:`schemas.spark.chat_event_schema`), ``reason`` (null when the event is valid)."""
    from pyspark.sql import functions as F

    records = kafka.select("value", F.concat_ws("/", "topic", "partition", "offset").alias("source"))
    return validate(records, "value")


def keyed(parsed: DataFrame) -> DataFrame:
    """Every record with a deduplication key: ``message_id``, ``sent_at``, ``value``, ``reason``, ``source``.

    A valid event is keyed by its ``message_id``; an invalid record by its Kafka position under a prefix
    no IRC-derived id can have (IRC lines never contain NUL), so bad records never suppress a good one
    and travel through the same single pass (one Kafka read, one JSON parse per record).
    """
    from pyspark.sql import functions as F

    ok = F.col("reason").isNull()
    return parsed.select(
        F.when(ok, F.col("event.message_id"))
        .otherwise(F.concat(F.lit(INVALID_KEY_PREFIX), F.col("source")))
        .alias("message_id"),
        F.when(ok, F.col("event.sent_at")).alias("sent_at"),
        *SINK_COLUMNS,
    )


def valid(parsed: DataFrame) -> DataFrame:
    """Only the valid events of :func:`parse`, with their ``message_id`` and ``sent_at``."""
    from pyspark.sql import functions as F

    return keyed(parsed).where(F.col("reason").isNull())


def invalid(parsed: DataFrame) -> DataFrame:
    """Only the records of :func:`parse` that are not valid chat events, in the writer's shape."""
    from pyspark.sql import functions as F

    return parsed.where(F.col("reason").isNotNull()).select(*SINK_COLUMNS)


def with_event_time(events: DataFrame, watermark_ms: int) -> DataFrame:
    """Adds ``event_time``: ``sent_at`` clamped so that no event is ever late (see module doc).

    A record without ``sent_at`` (an invalid one) gets the lower bound.
    """
    from pyspark.sql import functions as F

    now = F.unix_millis(F.current_timestamp())
    clamped = F.least(F.greatest(F.col("sent_at"), now - F.lit(watermark_ms // 2)), now)
    return events.withColumn("event_time", F.timestamp_millis(clamped))


def deduplicate(events: DataFrame, watermark_ms: int) -> DataFrame:
    """One row per ``message_id`` among rows whose event times lie within the watermark.

    On a bounded (batch) DataFrame, where Spark has no watermark, this is an exact ``dropDuplicates``.
    """
    timed = with_event_time(events, watermark_ms)
    if not events.isStreaming:
        return timed.dropDuplicates(["message_id"])
    return timed.withWatermark("event_time", f"{watermark_ms} milliseconds").dropDuplicatesWithinWatermark(
        ["message_id"]
    )


def counted(parsed: DataFrame, observation: str | Observation) -> DataFrame:
    """``parsed`` observed under ``observation``: ``read``, ``valid`` and ``invalid`` record counts
    (per micro-batch in the streaming progress' ``observedMetrics``; once for a bounded read)."""
    from pyspark.sql import functions as F

    bad = F.col("reason").isNotNull()
    return parsed.observe(
        observation,
        F.count(F.lit(1)).alias("read"),
        F.count_if(~bad).alias("valid"),
        F.count_if(bad).alias("invalid"),
    )


def sink_rows(
    kafka: DataFrame,
    watermark_ms: int,
    *,
    include_invalid: bool = True,
    observation: str | Observation | None = None,
) -> DataFrame:
    """The whole transformation: Kafka rows -> deduplicated valid values plus the invalid records."""
    from pyspark.sql import functions as F

    parsed = parse(kafka)
    if observation is not None:
        parsed = counted(parsed, observation)
    rows = keyed(parsed)
    if not include_invalid:
        rows = rows.where(rows.reason.isNull())
    deduped = deduplicate(rows, watermark_ms)
    # the writer needs the Kafka position of invalid records only: not shipping it for the rest saves
    # a string per event on the way to Python
    source = F.when(F.col("reason").isNotNull(), F.col("source")).alias("source")
    return deduped.select("value", "reason", source)
