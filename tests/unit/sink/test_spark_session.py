"""The sink's Spark configuration (pure: no JVM is started)."""

from __future__ import annotations

import pytest

from sink.settings import SinkSettings
from sink.spark_session import HDFS_PROVIDER, ROCKSDB_PROVIDER, session_conf


@pytest.fixture
def settings(monkeypatch: pytest.MonkeyPatch) -> SinkSettings:
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    return SinkSettings(spark_jars="/opt/jars/a.jar,/opt/jars/b.jar", spark_shuffle_partitions=3)


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
