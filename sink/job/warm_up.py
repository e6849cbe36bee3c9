"""Executors made ready while the driver starts the query, on a cluster.

On a Spark master that is not ``local``, a sink that starts (or restarts after a crash, on its checkpoint)
gets new executors, and their Python workers start in the first micro-batch: each starts Python, imports the
writer, opens its Cassandra session and prepares the inserts, in the batch that after a restart also holds
the backlog of the outage (boot, imports and session took 7-9 s of a 17-21 s first batch after a driver's
kill -9 on the multi-node stack). :func:`warm_executors` runs that set-up
(:func:`sink.writer.partition.warm_up_task`) as a Spark job of its own, in a thread, as soon as the session
exists: the executors do it while the driver starts its opt-out follower, its ledger and the query, and
the Python workers Spark keeps (``spark.python.worker.reuse``) are ready when the first batch's tasks come.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

from core.errors import one_line
from sink.writer.partition import warm_up_task

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from sink.settings import SinkSettings

log = logging.getLogger(__name__)


def warm_executors(spark: SparkSession, settings: SinkSettings) -> threading.Thread | None:
    """Start warming the executors' Python workers (one task per task slot the application has, at least
    two) in a daemon thread, and return it; None on a local master (its workers start with the JVM's
    first tasks either way). A failure is logged and changes nothing: the first batch then sets the
    workers up itself."""
    sc = spark.sparkContext
    if (sc.master or "").startswith("local"):
        return None
    tasks = max(2, sc.defaultParallelism)
    task = warm_up_task(settings)

    def run() -> None:
        t0 = time.monotonic()
        try:
            sc.setJobDescription("chatlog sink: warm up the executors' Python workers")
            ready = sc.parallelize(range(tasks), tasks).mapPartitions(task).sum()
        except Exception as exc:  # a sink stopped early, Cassandra unreachable: the batches will tell
            log.warning("warming up the executors failed: %s", one_line(exc, 300))
            return
        log.info(
            "executors warmed up in %.1fs: %d tasks, each in a Python worker with its Cassandra session",
            time.monotonic() - t0,
            ready,
        )

    thread = threading.Thread(target=run, name="sink-warm-up", daemon=True)
    thread.start()
    return thread
