"""The sink on the cluster as a cluster wants it: submitted to the Spark standalone master (executors in the
workers' JVMs, their own Python workers), its checkpoint on a path they all reach, reading a topic with RF 3
and writing a keyspace with RF 3 at LOCAL_QUORUM: every distinct event is stored once (``make cluster``)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from core.settings import StackSettings
from lab.bench.scratch import drop_keyspaces
from lab.stack.cluster import Layout
from lab.stack.spark import master_state
from sink.settings import SinkSettings
from store.schema import apply_schema
from tests.integration.sink.records import make_events, message_ids, produce, uuids

pytestmark = [pytest.mark.integration, pytest.mark.cluster, pytest.mark.slow]


@pytest.fixture
def cluster_sink(cluster: Layout, replicated_topics: StackSettings) -> Iterator[SinkSettings]:
    """Sink settings on fresh topics and a fresh keyspace of the cluster, on its standalone master."""
    unique = uuid.uuid4().hex[:10]
    clients = cluster.client_settings(cassandra_keyspace=f"t{unique}")
    apply_schema(clients)
    names = ("topic_messages", "topic_deadletter", "topic_channels", "topic_status", "messages_partitions")
    settings = SinkSettings(
        **{n: getattr(replicated_topics, n) for n in names},
        kafka_bootstrap_servers=clients.kafka_bootstrap_servers,
        cassandra_hosts=clients.cassandra_hosts,
        cassandra_local_dc=clients.cassandra_local_dc,
        cassandra_replication=clients.cassandra_replication,
        cassandra_keyspace=clients.cassandra_keyspace,
        sink_checkpoint=str(cluster.settings.cluster_dir / "sink" / f"test-{unique}"),
        sink_metrics_port=0,
        sink_cassandra_retry_s=20,
        spark_master=cluster.spark_master.url,
        spark_app_name=f"chatlog-sink-{unique}",
        spark_shuffle_partitions=2,
        spark_log_level="ERROR",
    )
    yield settings
    drop_keyspaces(clients, [clients.cassandra_keyspace])


def test_the_sink_on_the_standalone_master_writes_each_event_once(
    cluster: Layout, cluster_sink: SinkSettings
) -> None:
    from pyspark.sql import SparkSession

    from sink.job import stream

    produced = produce(cluster_sink, make_events(600), bad_every=10_000)
    try:
        stream.run(cluster_sink, available_now=True)
        spark = SparkSession.getActiveSession()
        assert spark is not None and spark.sparkContext.master == cluster.spark_master.url
        state = master_state(cluster.spark_master.ui_port)
        assert state is not None
        (app,) = [a for a in state["activeapps"] if a["name"] == cluster_sink.spark_app_name]
        assert app["cores"] == cluster.settings.cluster_spark_workers  # an executor on every worker
    finally:
        active = SparkSession.getActiveSession()
        if active is not None:
            active.stop()
    assert sorted(message_ids(cluster_sink)) == sorted(uuids(produced.events))
