"""Fixtures of the read side's integration tests: sink settings on a fresh keyspace and fresh topics (what
the read side reads back is written by :func:`tests.integration.serve.events.write`, through store.write;
the live routes read the topics)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.cql import connect
from core.settings import StackSettings
from sink.settings import SinkSettings


@pytest.fixture
def sink_settings(fresh_topics: StackSettings, fresh_keyspace: StackSettings, tmp_path: Path) -> SinkSettings:
    """Sink settings on this test's own topics and keyspace."""
    names = ("topic_messages", "topic_deadletter", "topic_channels", "topic_status", "messages_partitions")
    values: dict[str, Any] = {n: getattr(fresh_topics, n) for n in names}
    values.update(
        cassandra_keyspace=fresh_keyspace.cassandra_keyspace,
        sink_checkpoint=str(tmp_path / "checkpoint"),
        sink_metrics_port=0,
        sink_cassandra_retry_s=20,
    )
    return SinkSettings(**values)


@pytest.fixture
def session(sink_settings: SinkSettings) -> Iterator[Any]:
    """A session on the test's keyspace."""
    cluster, session = connect(sink_settings, keyspace=sink_settings.cassandra_keyspace)
    yield session
    cluster.shutdown()
