"""Set-up the sink's code does in each Spark Python worker process (once; every call after is cheap).

pyspark's worker calls ``importlib.invalidate_caches()`` before every task. On CPython 3.10 and 3.11,
every ``zipimporter`` then re-reads its archive's whole directory (CPython gh-103200; 3.12 reads it
lazily). A worker holds ~15 of them: one per package directory imported from ``pyspark.zip``, the
py4j zip and the ``spark-core`` jar that Spark puts on the workers' ``PYTHONPATH``. That was 0.12 s
of CPU per task on the local stack, two tasks per micro-batch: the largest cost of a small batch,
and so of the sink's latency. :func:`prepare` makes a ``zipimporter`` re-read its archive only when
the file changed (size or modification time), which keeps what the invalidation is for.
"""

from __future__ import annotations

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
