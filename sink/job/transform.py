"""The sink's transformations: pure DataFrame -> DataFrame functions, no I/O.

The same functions serve the streaming query and the bounded backfill (where ``withWatermark`` is a
no-op and the deduplication is exact over the whole range)::

    Kafka rows --keyed--> message_id (or a key of its own), sent_at, value, partition, offset
        --deduplicate--> one row per message_id within the watermark (withWatermark + dropDuplicates...)
        --sink_rows--> value, partition, offset    (to the writer: an event, or a dead letter)

Division of labour. Spark parses each record with the chat event's Spark schema (derived from
``schemas/``), pruned to what deduplication needs: the ``message_id`` and the ``sent_at``. The writer
validates every record it is handed with the contract's own validator (msgspec,
:func:`schemas.chat_event.decode`) before it builds a row from it, so there is one validator and one set
of reasons; what fails goes to the dead-letter topic with the reason and its Kafka position. A record
Spark cannot key (not JSON, no id, no integer time) gets a key of its own, so it is never taken for a
copy of anything and always reaches the writer. Validating in Spark as well was the single largest JVM
CPU cost per record of the sink (a VARIANT parse and per-field type checks; ``chatlog bench sink``
reports the JVM's CPU per event, results/bench_sink*.json ``spark_jvm``); the copies of a message are
the same code's parse of the same IRC line by other ingesters, so either every copy is valid or none is.

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

from schemas.spark import chat_event_schema

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Observation

DEDUP_FIELDS = ("message_id", "sent_at")
"""The fields of the chat event Spark reads."""
SINK_COLUMNS = ("value", "partition", "offset")
"""Columns handed to the writer, in this order."""
INVALID_KEY_PREFIX = "\x00unkeyed:"


def coalesced(kafka: DataFrame, tasks: int) -> DataFrame:
    """``kafka`` read by at most ``tasks`` tasks (0: unchanged, one task per Kafka partition).

    A narrow coalesce: no shuffle, each task reads several Kafka partitions in turn. Every task costs
    the same few milliseconds of scheduling and consumer set-up whatever it reads, every micro-batch,
    so a small live batch read by one task per Kafka partition takes longer than one read by a task per
    core (``chatlog bench sink``'s latency run measures the batches, results/bench_sink*.json).
    """
    if tasks <= 0:
        return kafka
    return kafka.coalesce(tasks)


def keyed(kafka: DataFrame) -> DataFrame:
    """Kafka source rows -> ``message_id`` (the deduplication key), ``sent_at``, ``value``,
    ``partition``, ``offset``.

    A record with a non-empty ``message_id`` and an integer ``sent_at`` is keyed by its id; any
    other record by its Kafka position under a prefix no IRC-derived id can have (IRC lines never
    contain NUL), with a null ``sent_at``.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    schema = StructType([f for f in chat_event_schema().fields if f.name in DEDUP_FIELDS])
    event = F.from_json(F.col("value").cast("string"), schema)
    staged = kafka.select("value", "partition", "offset", event.alias("event"))
    message_id, sent_at = F.col("event.message_id"), F.col("event.sent_at")
    ok = (F.char_length(message_id) > 0) & sent_at.isNotNull()
    return staged.select(
        F.when(ok, message_id)
        .otherwise(F.concat(F.lit(INVALID_KEY_PREFIX), F.col("partition"), F.lit("/"), F.col("offset")))
        .alias("message_id"),
        F.when(ok, sent_at).alias("sent_at"),
        *SINK_COLUMNS,
    )


def with_event_time(events: DataFrame, watermark_ms: int) -> DataFrame:
    """Adds ``event_time``: ``sent_at`` clamped so that no event is ever late (see module doc).

    A record without ``sent_at`` (one Spark could not key) gets the lower bound.
    """
    from pyspark.sql import functions as F

    # Spark substitutes the batch time as a literal, which code generation inlines into the stage's
    # code: new code, a new compilation and new classes for the JIT every micro-batch. A higher-order
    # function is evaluated without code generation, which keeps the literal out of the code.
    now = F.element_at(F.transform(F.array(F.unix_millis(F.current_timestamp())), lambda t: t), 1)
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


def counted(kafka: DataFrame, observation: str | Observation) -> DataFrame:
    """``kafka`` observed under ``observation``: ``read``, the records read (per micro-batch in the
    streaming progress' ``observedMetrics``; once for a bounded read)."""
    from pyspark.sql import functions as F

    return kafka.observe(observation, F.count(F.lit(1)).alias("read"))


def sink_rows(
    kafka: DataFrame,
    watermark_ms: int,
    *,
    observation: str | Observation | None = None,
    deduplicated: bool = True,
) -> DataFrame:
    """The whole transformation: Kafka rows -> one row per message id, and every unkeyed record;
    without ``deduplicated``, every record (the writer drops the copies: ``sink_dedup=writer``), with
    neither a JSON parse nor a shuffle nor state in Spark."""
    if observation is not None:
        kafka = counted(kafka, observation)
    if not deduplicated:
        return kafka.select(*SINK_COLUMNS)
    return deduplicate(keyed(kafka), watermark_ms).select(*SINK_COLUMNS)
