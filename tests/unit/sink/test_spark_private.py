"""The private Spark classes and methods the sink uses exist in the installed Spark's jars.

A Spark upgrade that moves one fails here, in one line naming it, instead of in a running sink."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pyspark
import pytest

from sink.driver.session import HDFS_PROVIDER, ROCKSDB_PROVIDER
from sink.driver.spark_private import (
    DATASET_CLASSES,
    RDD_QUERY_EXECUTION,
    checkpoint_manager_class,
    spark_version,
)

JARS = Path(pyspark.__file__).parent / "jars"


def _class_bytes(name: str) -> bytes | None:
    entry = name.replace(".", "/") + ".class"
    for jar in JARS.glob("spark-sql_*.jar"):
        with zipfile.ZipFile(jar) as z:
            if entry in z.namelist():
                return z.read(entry)
    return None


@pytest.mark.parametrize("name", [checkpoint_manager_class(), ROCKSDB_PROVIDER, HDFS_PROVIDER])
def test_the_configured_spark_classes_exist_in_the_installed_spark(name: str) -> None:
    assert _class_bytes(name) is not None, f"{name} is not in Spark {pyspark.__version__}'s spark-sql jar"


def test_the_dataset_still_has_rdd_query_execution() -> None:
    found = [
        c for c in DATASET_CLASSES if (b := _class_bytes(c)) is not None and RDD_QUERY_EXECUTION.encode() in b
    ]
    assert found, f"no Dataset class of Spark {pyspark.__version__} has {RDD_QUERY_EXECUTION}"


def test_the_checkpoint_manager_moved_in_spark_4_1() -> None:
    assert checkpoint_manager_class((4, 0)).endswith("streaming.FileSystemBasedCheckpointFileManager")
    assert checkpoint_manager_class((4, 2)).endswith(
        "streaming.checkpointing.FileSystemBasedCheckpointFileManager"
    )
    assert spark_version() >= (4, 0)
