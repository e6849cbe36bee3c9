"""The sink's Spark configuration (pure: no JVM is started)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sink.job.session import (
    FILESYSTEM_CHECKPOINTS,
    HDFS_PROVIDER,
    ROCKSDB_PROVIDER,
    code_archive,
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


def test_the_code_shipped_to_a_cluster_holds_every_package_the_writer_imports(tmp_path: Path) -> None:
    import zipfile

    with zipfile.ZipFile(code_archive(tmp_path / "code.zip")) as archive:
        names = set(archive.namelist())
    for module in (
        "sink/writer/partition.py",
        "sink/framing.py",
        "sink/dedup.py",
        "consent/records.py",
        "schemas/chat_event.py",
        "core/errors.py",
    ):
        assert module in names
    assert not any("__pycache__" in name for name in names)
