"""Replay / backfill: the sink's transformation as a bounded job over a time range of the topic.

The events of opted-out users and channels are not written (the opt-outs the registry holds when the
backfill starts, :mod:`sink.side.optout_follower`), so a replay of the retained topic cannot bring erased rows
back; an opt-out that arrives while the backfill runs is erased from its keyspace when it ends (unless
it keeps the history, or ``sink_optout_erase`` is off).

The range is by Kafka record time (when the ingester produced the event): ``--from`` inclusive,
``--to`` exclusive (default: everything there is now). Within the range the deduplication is exact
(a batch ``dropDuplicates`` over the whole range). Rows go to the configured keyspace (created if
missing), so a fresh keyspace can be loaded or the tables rebuilt; writes are idempotent, so running a
backfill over rows that exist changes nothing. Invalid records are counted; they were dead-lettered by
the streaming sink when it first read them, and are sent again only with ``deadletter=True``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from core.errors import ChatlogError
from core.times import format_time
from sink import spark_private
from sink.job import offsets, transform
from sink.job.session import get_session, kafka_options
from sink.job.stream import ensure_schema, failure_message
from sink.side.optout_follower import follower
from sink.writer.stats import WriteStats

OBSERVED = "backfill"

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from consent.rule import OptOutSet
    from sink.settings import SinkSettings


@dataclass
class BackfillResult:
    """What a backfill read, dropped and wrote."""

    keyspace: str
    start_ms: int
    end_ms: int | None
    read: int = 0
    invalid: int = 0
    duplicates: int = 0
    opted_out: int = 0
    """Events not written because their user or channel opted out."""
    written: WriteStats = field(default_factory=WriteStats)
    seconds: float = 0.0
    resent: bool = False
    """Whether the invalid records were sent to the dead-letter topic again."""

    def summary(self) -> str:
        end = format_time(self.end_ms) if self.end_ms is not None else "now"
        tables = ", ".join(f"{t} {n}" for t, n in sorted(self.written.rows.items()))
        dead = f", {self.invalid} sent to the dead-letter topic" if self.invalid and self.resent else ""
        optouts = f" and {self.opted_out} of opted-out users or channels" if self.opted_out else ""
        return (
            f"backfill {format_time(self.start_ms)} .. {end} into keyspace {self.keyspace}: "
            f"read {self.read} events ({self.invalid} invalid{dead}), dropped {self.duplicates} duplicates"
            f"{optouts}, "
            f"wrote {self.written.events} events as {self.written.rows_total} rows"
            f"{f' ({tables})' if tables else ''} in {self.seconds:.1f}s"
        )


def run(
    settings: SinkSettings, start_ms: int, end_ms: int | None = None, *, deadletter: bool = False
) -> BackfillResult:
    """Replay ``[start_ms, end_ms)`` of the message topic into ``settings.cassandra_keyspace``."""
    if end_ms is not None and end_ms <= start_ms:
        raise ChatlogError(f"--to ({format_time(end_ms)}) must be after --from ({format_time(start_ms)})")
    started = time.monotonic()
    span = offsets.time_range(settings, start_ms, end_ms)
    ensure_schema(settings)
    result = BackfillResult(settings.cassandra_keyspace, start_ms, end_ms, resent=deadletter)
    if span.records == 0:  # nothing in the range: no Spark job to run
        result.seconds = time.monotonic() - started
        return result
    spark = get_session(settings)
    spark_private.check(spark)
    kafka = (
        spark.read.format("kafka")
        .options(**kafka_options(settings))
        .options(**span.spark_options())
        .option("failOnDataLoss", str(settings.sink_fail_on_data_loss).lower())
        .load()
    )
    from pyspark.sql import Observation

    observation = Observation(OBSERVED)
    rows = transform.deduplicated(transform.counted(kafka, observation))
    optouts = follower(settings, erase=settings.sink_optout_erase, catch_up=False)
    try:
        optouts.start()
        if optouts.current().users:
            optouts.learn(logins_in(kafka, optouts.current().users))
        with optouts.batch() as current:
            written = write_periods(rows, settings, dead_letters=deadletter, optouts=current)
        read = int(observation.get.get("read", 0))
    except ChatlogError:
        raise
    except Exception as exc:
        raise ChatlogError(f"backfill failed: {failure_message(exc, settings)}") from None
    finally:
        optouts.close()  # erases what opted out while the backfill wrote
    result.written = written
    result.read = read
    result.invalid = written.deadletters
    result.opted_out = written.optout_dropped
    result.duplicates = result.read - written.events - written.deadletters - written.optout_dropped
    result.seconds = time.monotonic() - started
    return result


def write_periods(
    rows: DataFrame, settings: SinkSettings, *, dead_letters: bool, optouts: OptOutSet | None
) -> WriteStats:
    """The deduplicated records written as whole periods: framed and keyed by partition
    (:func:`sink.writer.backfill.frame_task`), sorted by partition and line order across the job (Spark's
    shuffle, spilled to disk as it must), written as blocks (:func:`sink.writer.backfill.block_task`)."""
    from pyspark.sql import functions as F

    from sink.writer.backfill import LINES_SCHEMA, STATS_SCHEMA, block_task, frame_task

    tasks = max(1, settings.spark_shuffle_partitions)
    lines = rows.mapInArrow(frame_task(settings, dead_letters, optouts), LINES_SCHEMA)
    ordered = lines.repartition(tasks, "kind", "key").sortWithinPartitions("kind", "key", "order")
    total = WriteStats()
    for row in ordered.mapInArrow(block_task(settings), STATS_SCHEMA).select(F.col("stats")).collect():
        found = json.loads(row["stats"])
        if "blocks" in found:
            total.rows.update(found["blocks"])
        else:
            part = WriteStats.from_dict(found | {"written_ids": b""})
            part.rows.clear()  # the name rows: counted with the blocks' tables below
            total.add(part)
            total.rows.update(found.get("rows", {}))
    return total


def logins_in(kafka: DataFrame, users: frozenset[str]) -> dict[str, str]:
    """Login -> user id of every event of ``users`` in ``kafka`` (Spark's Kafka source rows): a pass of
    its own over a backfill's range, in the JVM (JSON paths), before the write, so that the range's
    deleted messages (CLEARMSG names its author by login only) of those users are dropped wherever they
    fall. Its cost: the range read once more; only run when someone opted out."""
    from pyspark.sql import functions as F

    text = F.col("value").cast("string")
    pairs = kafka.select(
        F.get_json_object(text, "$.user_id").alias("user_id"),
        F.get_json_object(text, "$.user_login").alias("login"),
    )
    found = pairs.where(F.col("user_id").isin(sorted(users)) & F.col("login").isNotNull()).distinct()
    return {str(row["login"]): str(row["user_id"]) for row in found.collect()}
