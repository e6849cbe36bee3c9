"""Every private Spark API the sink uses, fenced in this one module:

- the FileSystem-based checkpoint manager for a local checkpoint (renames in Java, where the default
  FileContext one starts a ``readlink`` process per file): ``org.apache.spark.sql.execution.streaming``
  up to Spark 4.0, its ``checkpointing`` sub-package since 4.1 (sink/job/session.py);
- ``SparkSession._jvm`` and ``DataFrame._jdf``: a ``Dataset[Array[Byte]]`` handed to the Python workers
  as raw bytes, without pickling (:func:`bytes_rdd`, sink/framing.py);
- ``StreamingQuery._jsq.recentProgress()``: the JVM's progress updates, read one ``json()`` each
  (:func:`recent_progress`, sink/job/stream.py);
- a patch of CPython's ``zipimporter.invalidate_caches`` in Spark's Python workers, which pyspark's
  worker invalidates before every task (:func:`lazy_zip_invalidation`, sink/writer/worker_setup.py);
- the executor's socket behind the records pyspark hands a task, peeked at once they are taken: whether
  they ended at Spark's end of data or were cut short (:func:`input_cut`, sink/writer/partition.py).

:func:`check` verifies them once when a stream or a backfill starts and fails in one line naming what
is missing (then pin the pyspark release this chatlog names in pyproject.toml).

This module imports only the standard library at import time: the executors import it too.
tests/unit/sink/test_spark_private.py fails when a Spark release moves one of these.
"""

from __future__ import annotations

import os
import sys
import threading
import zipimport
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final

from core.errors import ChatlogError

if TYPE_CHECKING:
    from pyspark.rdd import RDD
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

CHECKPOINT_MANAGER_CONF: Final = "spark.sql.streaming.checkpointFileManagerClass"
_CHECKPOINT_MANAGER: Final = "FileSystemBasedCheckpointFileManager"
_CHECKPOINT_PACKAGES: Final = (
    ((4, 1), "org.apache.spark.sql.execution.streaming.checkpointing"),
    ((0, 0), "org.apache.spark.sql.execution.streaming"),
)
DATASET_CLASSES: Final = ("org.apache.spark.sql.classic.Dataset", "org.apache.spark.sql.Dataset")
_ZIP_MARK: Final = "_chatlog_lazy"


class PrivateApiMissing(ChatlogError):
    """The installed Spark (or Python) lacks a private API the sink was told to use."""


def spark_version() -> tuple[int, int]:
    import pyspark

    major, minor = str(pyspark.__version__).split(".")[:2]
    return int(major), int(minor)


def missing(what: str) -> PrivateApiMissing:
    """The one-line error for a private API this Spark lacks."""
    import pyspark

    return PrivateApiMissing(
        f"Spark {pyspark.__version__} lacks {what}, a private Spark API the sink uses: install the pyspark "
        "release chatlog's pyproject.toml names"
    )


def checkpoint_manager_class(version: tuple[int, int] | None = None) -> str:
    """The FileSystem-based checkpoint manager's class name in Spark ``version`` (default: installed)."""
    v = version or spark_version()
    package = next(p for since, p in _CHECKPOINT_PACKAGES if v >= since)
    return f"{package}.{_CHECKPOINT_MANAGER}"


def check(spark: SparkSession) -> None:
    """Fail now, in one line (:func:`missing`), if ``spark`` lacks a private API the sink would use.

    Called once when a stream or a backfill starts, after the session is made (``_jsq`` is checked on
    the started query, by :func:`recent_progress`'s first call, see :func:`check_query`).
    """
    jvm = getattr(spark, "_jvm", None)  # None or absent on a Spark Connect session
    if jvm is None:
        raise missing("SparkSession._jvm (a classic Py4J session)")
    try:
        spark.range(1)._jdf  # noqa: B018 - the attribute is what is checked
    except AttributeError:
        raise missing("DataFrame._jdf") from None
    manager = spark.conf.get(CHECKPOINT_MANAGER_CONF, None)
    if manager:
        try:
            jvm.java.lang.Class.forName(manager)
        except Exception:
            raise missing(f"the checkpoint manager {manager}") from None
    if sys.version_info < (3, 12) and not callable(getattr(zipimport.zipimporter, "invalidate_caches", None)):
        raise missing("zipimport.zipimporter.invalidate_caches (Python's, patched in the workers)")


def check_query(query: StreamingQuery) -> None:
    """Fail in one line if ``query`` has no JVM query (``_jsq``) to read the progress from."""
    if getattr(query, "_jsq", None) is None:
        raise missing("StreamingQuery._jsq")


# -- the private APIs themselves -------------------------------------------------------------------------


def bytes_rdd(binary: DataFrame) -> tuple[RDD[bytes], Any]:
    """``binary`` (one binary column) as an RDD of its values handed to Python as raw bytes (no
    pickling), and the JVM Dataset it runs."""
    from pyspark.rdd import RDD
    from pyspark.serializers import NoOpSerializer

    spark = binary.sparkSession
    encoder = spark._jvm.org.apache.spark.sql.Encoders.BINARY()  # type: ignore[union-attr]
    dataset = getattr(binary._jdf, "as")(encoder)
    return RDD(dataset.javaRDD(), spark.sparkContext, NoOpSerializer()), dataset


def recent_progress(query: StreamingQuery) -> Sequence[Any]:
    """The JVM's retained progress updates of ``query``, oldest first; each one's ``json()`` is one
    Py4J round trip (pyspark's ``recentProgress`` converts every field of every update)."""
    return query._jsq.recentProgress()  # type: ignore[no-any-return]


def lazy_zip_invalidation() -> None:
    """Make every ``zipimporter`` re-read its archive's directory only when the file changed (size or
    modification time), in this process (idempotent; nothing to do on CPython 3.12+, which reads it
    lazily). See sink/writer/worker_setup.py for why."""
    original = zipimport.zipimporter.invalidate_caches
    if sys.version_info >= (3, 12) or getattr(original, _ZIP_MARK, False):
        return

    def invalidate_caches(self: Any) -> None:
        try:
            st = os.stat(self.archive)
        except (OSError, AttributeError):
            original(self)
            return
        stamp = (st.st_mtime_ns, st.st_size)
        if getattr(self, "_chatlog_stamp", None) != stamp:
            original(self)
            self._chatlog_stamp = stamp

    setattr(invalidate_caches, _ZIP_MARK, True)
    zipimport.zipimporter.invalidate_caches = invalidate_caches  # type: ignore[method-assign]


END_OF_STREAM_WAIT_S: Final = 10.0
"""How long :func:`input_cut`'s check waits for the executor's next bytes (there at once after a whole input,
in the same flush as the end of data); past it the input counts as whole, as before the check."""


def input_cut(records: Iterator[Any]) -> Callable[[], bool]:
    """For the records pyspark hands a task (its serializer's generator over the executor's socket): a check,
    to make once they are all taken, of whether the input was cut short.

    pyspark's serializers take the socket's end as the end of the input (``EOFError`` ends their stream), so
    when the executor fails while it feeds a task (a Kafka read that fails in the middle of a partition, as a
    broker's failover does; Spark then runs the task again) the task sees a shorter input that looks whole.
    After a whole input the executor has also sent its end-of-stream marker (read by the worker after the
    task); after a cut one the socket is at its end. The check peeks at the next bytes without reading
    them. Records of another source (a list: a test, a raw writer) are never cut."""
    frame = getattr(records, "gi_frame", None)
    stream = frame.f_locals.get("stream") if frame is not None else None
    peek = getattr(stream, "peek", None)
    if not callable(peek):
        return lambda: False

    def cut() -> bool:
        seen: list[bytes] = []
        # a thread: a later Spark that sent nothing more until the task's results came would never answer
        waiter = threading.Thread(target=lambda: seen.append(bytes(peek(4)[:4])), daemon=True)
        waiter.start()
        waiter.join(END_OF_STREAM_WAIT_S)
        return bool(seen) and not seen[0]

    return cut
