"""The driver side of the write step: run the executors' partition task over a micro-batch.

The rows are handed over as framed bytes (:mod:`sink.framing`); each partition is written by
:func:`sink.writer.partition.partition_task`, and what each did is added up here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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
    """Run the partition task over every partition of ``rows`` (columns value, partition, offset), handed
    over as bytes (:mod:`sink.framing`); the events of ``optouts`` are not written; ``recent``: the ids
    the last batches wrote (the writers drop copies of them, :mod:`sink.dedup`)."""
    from sink.framing import records

    framed, _dataset = records(rows)
    total = WriteStats()
    for part in framed.mapPartitions(partition_task(settings, dead_letters, optouts, recent)).collect():
        total.add(WriteStats.from_dict(part))
    return total
