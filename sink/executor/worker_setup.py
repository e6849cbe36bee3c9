"""Set-up the sink's code does in each Spark Python worker process (once; every call after is cheap).

Zip imports. pyspark's worker calls ``importlib.invalidate_caches()`` before every task. On CPython
3.10 and 3.11, every ``zipimporter`` then re-reads its archive's whole directory (CPython gh-103200;
3.12 reads it lazily). A worker holds ~15 of them: one per package directory imported from
``pyspark.zip``, the py4j zip and the ``spark-core`` jar that Spark puts on the workers'
``PYTHONPATH``. That was 0.12 s of CPU per task on the local stack, two tasks per micro-batch: the
largest cost of a small batch, and so of the sink's latency. :func:`prepare` makes a ``zipimporter``
re-read its archive only when the file changed (size or modification time), which keeps what the
invalidation is for.

The cyclic garbage collector. A writer allocates a few dozen containers per event (cells, bound
statements, batches, the driver's futures), so CPython's collector runs often, and every full
collection walks every tracked object of the process, including the imported modules and the
driver's cluster metadata, which outlive every task. :func:`freeze_heap` moves what exists once the
Cassandra session is ready into the collector's permanent generation (``gc.freeze``), so that later
collections walk only what tasks allocate. Python workers of a warm sink run (150k events, 2 runs
each way): 48.1-52.3 µs of CPU per event, against 55.2-56.4 before.
"""

from __future__ import annotations

import gc
import os
import sys
import zipimport
from typing import Any

_MARK = "_chatlog_lazy"


def prepare() -> None:
    """Install the lazy zip-directory invalidation in this process (idempotent; no-op on 3.12+)."""
    original = zipimport.zipimporter.invalidate_caches
    if sys.version_info >= (3, 12) or getattr(original, _MARK, False):
        return

    def invalidate_caches(self: Any) -> None:
        try:
            st = os.stat(self.archive)
        except OSError:
            original(self)
            return
        stamp = (st.st_mtime_ns, st.st_size)
        if getattr(self, "_chatlog_stamp", None) != stamp:
            original(self)
            self._chatlog_stamp = stamp

    setattr(invalidate_caches, _MARK, True)
    zipimport.zipimporter.invalidate_caches = invalidate_caches  # type: ignore[method-assign]


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
