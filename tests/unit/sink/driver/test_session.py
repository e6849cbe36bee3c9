"""The sink's Spark configuration (pure: no JVM is started)."""

from __future__ import annotations

import pytest

from sink.driver.session import (
    FILESYSTEM_CHECKPOINTS,
    HDFS_PROVIDER,
    ROCKSDB_PROVIDER,
    local_checkpoint,
    session_conf,
)
from sink.settings import SinkSettings


@pytest.fixture
def settings(monkeypatch: pytest.MonkeyPatch) -> SinkSettings:
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    return SinkSettings(spark_jars="/opt/jars/a.jar,/opt/jars/b.jar", spark_shuffle_partitions=3)  # type: ignore[call-arg]


def test_state_store_is_rocksdb_with_changelog_and_no_row_counting(settings: SinkSettings) -> None:
    conf = session_conf(settings)
    assert conf["spark.sql.streaming.stateStore.providerClass"] == ROCKSDB_PROVIDER
    assert conf["spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"] == "true"
    assert conf["spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows"] == "false"
    hdfs = session_conf(settings.model_copy(update={"spark_state_store": "hdfs"}))
    assert hdfs["spark.sql.streaming.stateStore.providerClass"] == HDFS_PROVIDER


def test_settings_reach_the_conf(settings: SinkSettings) -> None:
    conf = session_conf(settings)
    assert conf["spark.sql.shuffle.partitions"] == "3"
    assert conf["spark.jars"] == "/opt/jars/a.jar,/opt/jars/b.jar"
    assert conf["spark.master"] == settings.spark_master
    assert conf["spark.python.worker.reuse"] == "true"


@pytest.mark.parametrize(
    ("location", "local"),
    [
        ("/var/lib/chatlog/checkpoint", True),
        ("relative/checkpoint", True),
        ("file:///var/lib/chatlog/checkpoint", True),
        ("FILE:/tmp/cp", True),
        ("hdfs://namenode:8020/chatlog/checkpoint", False),
        ("s3a://bucket/checkpoint", False),
        ("abfss://container@account.dfs.core.windows.net/cp", False),
    ],
)
def test_local_checkpoints_are_recognised(location: str, local: bool) -> None:
    assert local_checkpoint(location) is local


def test_local_checkpoints_use_the_filesystem_manager_and_remote_ones_spark_default(
    settings: SinkSettings,
) -> None:
    local = session_conf(settings.model_copy(update={"sink_checkpoint": "/tmp/cp"}))
    assert local["spark.sql.streaming.checkpointFileManagerClass"] == FILESYSTEM_CHECKPOINTS
    default = session_conf(settings)  # <state_dir>/sink/checkpoint
    assert default["spark.sql.streaming.checkpointFileManagerClass"] == FILESYSTEM_CHECKPOINTS
    remote = session_conf(settings.model_copy(update={"sink_checkpoint": "s3a://bucket/cp"}))
    assert "spark.sql.streaming.checkpointFileManagerClass" not in remote


def test_without_the_private_apis_spark_s_default_checkpoint_manager_is_kept(settings: SinkSettings) -> None:
    public = session_conf(
        settings.model_copy(update={"sink_checkpoint": "/tmp/cp", "sink_spark_private_api": False})
    )
    assert "spark.sql.streaming.checkpointFileManagerClass" not in public
