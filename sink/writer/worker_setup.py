"""Set-up the sink's code does in each Spark Python worker process (once; every call after is cheap).

Zip imports. pyspark's worker calls ``importlib.invalidate_caches()`` before every task. On CPython
3.10 and 3.11, every ``zipimporter`` then re-reads its archive's whole directory (CPython gh-103200;
3.12 reads it lazily). A worker holds ~15 of them: one per package directory imported from
``pyspark.zip``, the py4j zip and the ``spark-core`` jar that Spark puts on the workers'
``PYTHONPATH``. That is CPU paid by every task, two tasks per micro-batch: the largest cost of a small
batch, and so of the sink's latency. :func:`prepare` makes a ``zipimporter`` re-read its archive only
when the file changed (size or modification time), which keeps what the invalidation is for. It patches
CPython's ``zipimporter``, so it is fenced with the private Spark APIs
(:func:`sink.spark_private.lazy_zip_invalidation`).

The cyclic garbage collector. A writer allocates a few dozen containers per event (cells, bound
statements, batches, the driver's futures), so CPython's collector runs often, and every full
collection walks every tracked object of the process, including the imported modules and the
driver's cluster metadata, which outlive every task. :func:`freeze_heap` moves what exists once the
Cassandra session is ready into the collector's permanent generation (``gc.freeze``), so that later
collections walk only what tasks allocate: less CPU per event in the Python workers (``chatlog bench
sink`` reports it, results/bench_sink*.json ``python_workers``).
"""

from __future__ import annotations

import gc

from sink.spark_private import lazy_zip_invalidation


def prepare() -> None:
    """Set up this worker process (idempotent): the lazy zip-directory invalidation."""
    lazy_zip_invalidation()


_frozen = False


def freeze_heap() -> None:
    """Collect, then exempt every object alive now from later collections (once per process).

    Call it when the long-lived state is built (modules imported, sessions open): what is frozen is
    still freed by reference counting, only reference cycles among frozen objects are never reclaimed.
    """
    global _frozen
    if _frozen:
        return
    gc.collect()
    gc.freeze()
    _frozen = True
