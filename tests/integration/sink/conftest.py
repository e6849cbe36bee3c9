"""Fixtures of the sink's integration tests: fresh topics, keyspace and checkpoint, and a Spark session
(producing and counting: :mod:`tests.integration.sink.records`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.settings import StackSettings
from sink.settings import SinkSettings


@pytest.fixture
def sink_settings(fresh_topics: StackSettings, fresh_keyspace: StackSettings, tmp_path: Path) -> SinkSettings:
    """Sink settings on this test's own topics, keyspace and checkpoint; small and quick."""
    names = ("topic_messages", "topic_deadletter", "topic_channels", "topic_status", "messages_partitions")
    return SinkSettings(
        **{n: getattr(fresh_topics, n) for n in names},
        cassandra_keyspace=fresh_keyspace.cassandra_keyspace,
        sink_checkpoint=str(tmp_path / "checkpoint"),
        sink_metrics_port=0,
        sink_trigger="200 milliseconds",
        sink_cassandra_retry_s=20,
        spark_master="local[2]",
        spark_shuffle_partitions=2,
        spark_log_level="ERROR",
    )


@pytest.fixture
def spark_session() -> Iterator[Any]:
    """The sink's Spark session in this process (shared with the unit tests' JVM when run together)."""
    from sink.job.session import get_session
    from sink.settings import SinkSettings

    settings = SinkSettings(spark_master="local[2]", spark_shuffle_partitions=2, spark_log_level="ERROR")  # type: ignore[call-arg]
    yield get_session(settings)
