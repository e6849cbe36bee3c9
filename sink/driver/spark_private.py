"""The private Spark classes and methods the sink relies on, fenced in one place and checked against the
installed Spark's jars (tests/unit/sink/test_spark_private.py fails when a release moves one).

- the FileSystem-based checkpoint manager (renames in Java, where the default FileContext one starts a
  ``readlink`` process per file): ``org.apache.spark.sql.execution.streaming`` up to Spark 4.0, moved to
  its ``checkpointing`` sub-package in 4.1;
- ``Dataset.rddQueryExecution`` (sink/driver/handover.py): the RDD of a Dataset without a second plan run.
"""

from __future__ import annotations

from typing import Final

_CHECKPOINT_MANAGER: Final = "FileSystemBasedCheckpointFileManager"
_CHECKPOINT_PACKAGES: Final = (
    ((4, 1), "org.apache.spark.sql.execution.streaming.checkpointing"),
    ((0, 0), "org.apache.spark.sql.execution.streaming"),
)
DATASET_CLASSES: Final = ("org.apache.spark.sql.classic.Dataset", "org.apache.spark.sql.Dataset")
RDD_QUERY_EXECUTION: Final = "rddQueryExecution"


def spark_version() -> tuple[int, int]:
    import pyspark

    major, minor = str(pyspark.__version__).split(".")[:2]
    return int(major), int(minor)


def checkpoint_manager_class(version: tuple[int, int] | None = None) -> str:
    """The FileSystem-based checkpoint manager's class name in Spark ``version`` (default: installed)."""
    v = version or spark_version()
    package = next(p for since, p in _CHECKPOINT_PACKAGES if v >= since)
    return f"{package}.{_CHECKPOINT_MANAGER}"
