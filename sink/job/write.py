"""The driver side of the write step: run the executors' partition task over a micro-batch or a backfill.

The rows are handed over as framed bytes (:mod:`sink.framing`); each partition is written by
:func:`sink.writer.partition.partition_task`, and what each did is added up here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sink import spark_private
from sink.writer.partition import partition_task
from sink.writer.stats import WriteStats

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from consent.rule import OptOutSet
    from sink.settings import SinkSettings


def write_dataframe(
    rows: DataFrame,
    settings: SinkSettings,
    *,
    dead_letters: bool = True,
    optouts: OptOutSet | None = None,
    recent: bytes | None = None,
) -> WriteStats:
    """Run the partition task over every partition of ``rows`` (columns value, partition, offset),
    handed over as bytes (:mod:`sink.framing`); the events of ``optouts`` are not written;
    ``recent``: the writer deduplicates, against these ids (:mod:`sink.dedup`)."""
    return write_dataframe_observed(
        rows, settings, dead_letters=dead_letters, optouts=optouts, recent=recent
    )[0]


def write_dataframe_observed(
    rows: DataFrame,
    settings: SinkSettings,
    observation: str | None = None,
    *,
    dead_letters: bool = True,
    optouts: OptOutSet | None = None,
    recent: bytes | None = None,
) -> tuple[WriteStats, dict[str, Any]]:
    """:func:`write_dataframe`, plus the metrics ``rows`` observed under ``observation`` (a bounded
    read: ``DataFrame.observe``). The write runs as an RDD action, which Spark's ``Observation``
    does not wait for, so the values are read from the executed plan
    (:func:`observed`, a private Spark API)."""
    from sink.framing import records

    framed, dataset = records(rows)
    total = WriteStats()
    for part in framed.mapPartitions(partition_task(settings, dead_letters, optouts, recent)).collect():
        total.add(WriteStats.from_dict(part))
    return total, (observed(dataset, observation) if observation is not None else {})


def observed(dataset: Any, name: str) -> dict[str, Any]:
    """The metrics the run of ``dataset``'s RDD (:func:`sink.framing.records`, private) observed under
    ``name``."""
    return spark_private.rdd_observed_metrics(dataset, name)
