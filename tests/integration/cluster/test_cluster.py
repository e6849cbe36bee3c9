"""The multi-node stack forms one cluster: a KRaft quorum of 3 brokers that replicates a topic 3 times, a
ring of 3 Cassandra nodes that holds a keyspace with RF 3 at LOCAL_QUORUM, and a Spark standalone master
whose workers run a job's Python tasks in their executors (``make cluster``)."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import ConfigResource

from core.cql import connect
from core.kafka_admin import admin_client
from core.settings import StackSettings
from lab.stack import manager
from lab.stack.cluster import DATA_CENTER, Layout
from lab.stack.services import node_query
from lab.stack.spark import master_state

pytestmark = [pytest.mark.integration, pytest.mark.cluster, pytest.mark.slow]


def test_status_shows_every_node_up(cluster: Layout) -> None:
    states = {s.name: s for s in manager.status(cluster.settings, nodes=3)}
    assert set(states) == {
        *(f"kafka-{i}" for i in (1, 2, 3)),
        *(f"cassandra-{i}" for i in (1, 2, 3)),
        "spark-master",
        "spark-worker-1",
        "spark-worker-2",
        "inspircd",
    }
    for state in states.values():
        assert state.state == "up", state
        assert state.pid is not None and state.rss_mib is not None
    assert {states[f"cassandra-{i}"].host for i in (1, 2, 3)} == {"127.0.0.11", "127.0.0.12", "127.0.0.13"}
    print(f"\ncluster RSS: {sum(s.rss_mib or 0 for s in states.values()):.0f} MiB")


def test_a_topic_has_three_replicas_all_in_sync_and_min_isr_2(replicated_topics: StackSettings) -> None:
    topic = replicated_topics.topic_messages
    producer = Producer(
        {**replicated_topics.kafka_client_config(), "enable.idempotence": True, "acks": "all"}
    )
    for i in range(60):
        producer.produce(topic, key=f"channel{i}".encode(), value=b"x")
    assert producer.flush(30) == 0

    admin = admin_client(replicated_topics)
    meta = admin.list_topics(topic, timeout=10).topics[topic]
    assert len(meta.partitions) == 6
    for partition in meta.partitions.values():
        assert sorted(partition.replicas) == [1, 2, 3], partition
        assert sorted(partition.isrs) == [1, 2, 3], partition
    assert {p.leader for p in meta.partitions.values()} == {1, 2, 3}  # leadership spread over the brokers
    (described,) = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)]).values()
    assert described.result(timeout=10)["min.insync.replicas"].value == "2"


def test_the_pipeline_topics_of_the_cluster_are_replicated_three_times(
    cluster_clients: StackSettings,
) -> None:
    admin = admin_client(cluster_clients)
    topics = admin.list_topics(timeout=10).topics
    for name in cluster_clients.topic_names():
        assert all(len(p.replicas) == 3 for p in topics[name].partitions.values()), name
    offsets = topics["__consumer_offsets"].partitions.values() if "__consumer_offsets" in topics else []
    assert all(len(p.replicas) == 3 for p in offsets)


@pytest.fixture
def keyspace(cluster_clients: StackSettings) -> Iterator[tuple[StackSettings, Any]]:
    settings = cluster_clients.model_copy(update={"cassandra_keyspace": f"t{uuid.uuid4().hex[:10]}"})
    cluster, session = connect(settings, timeout=30)
    session.execute(
        f"CREATE KEYSPACE {settings.cassandra_keyspace} WITH replication = {settings.cassandra_replication}",
        timeout=60,
    )
    session.execute(f"CREATE TABLE {settings.cassandra_keyspace}.kv (k text PRIMARY KEY, v int)", timeout=60)
    try:
        yield settings, session
    finally:
        session.execute(f"DROP KEYSPACE IF EXISTS {settings.cassandra_keyspace}", timeout=60)
        cluster.shutdown()


def test_a_keyspace_with_rf_3_is_written_and_read_at_local_quorum_and_on_every_node(
    cluster: Layout, keyspace: tuple[StackSettings, Any]
) -> None:
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement

    settings, session = keyspace
    ks = settings.cassandra_keyspace
    row = session.execute(
        "SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = %s", (ks,)
    ).one()
    assert row.replication["class"].endswith("NetworkTopologyStrategy")
    assert row.replication[DATA_CENTER] == "3"

    write = SimpleStatement(
        f"INSERT INTO {ks}.kv (k, v) VALUES (%s, %s)", consistency_level=ConsistencyLevel.LOCAL_QUORUM
    )
    for i in range(20):
        session.execute(write, (f"key{i}", i))
    read = SimpleStatement(f"SELECT k, v FROM {ks}.kv", consistency_level=ConsistencyLevel.LOCAL_QUORUM)
    assert {(r.k, r.v) for r in session.execute(read)} == {(f"key{i}", i) for i in range(20)}
    assert len(session.cluster.metadata.get_replicas(ks, b"key0")) == 3  # the driver's view of the ring

    # every node, as the coordinator, reads all of them at LOCAL_QUORUM (once the new table's schema has
    # reached it: the driver waits at most 10 s for the nodes to agree on it)
    for node in (1, 2, 3):
        address = cluster.cassandra_address(node)
        deadline = time.monotonic() + 30
        while (rows := node_query(settings, address, f"SELECT count(*) FROM {ks}.kv", 10)) is None:
            assert time.monotonic() < deadline, f"{address} does not answer at LOCAL_QUORUM"
            time.sleep(1)
        assert rows[0].count == 20, address


def test_a_job_runs_on_the_standalone_master_in_the_workers_executors(cluster: Layout) -> None:
    from sink.job.session import get_session
    from sink.settings import SinkSettings

    master = cluster.spark_master
    # the sink's session (the JVM this process starts keeps its jars: the Kafka source of test_sink.py)
    check: dict[str, Any] = {
        "spark_master": master.url,
        "spark_app_name": "chatlog-cluster-check",
        "spark_log_level": "ERROR",
    }
    settings = SinkSettings(**check)
    spark = get_session(settings)
    try:
        state = master_state(master.ui_port)
        assert state is not None
        assert any(app["name"] == "chatlog-cluster-check" for app in state["activeapps"])
        sc = spark.sparkContext
        pairs = sc.parallelize(range(1000), 8).map(lambda x: (os.getpid(), x)).collect()
        assert sum(x for _pid, x in pairs) == sum(range(1000))
        assert os.getpid() not in {pid for pid, _x in pairs}  # Python workers of the executors, not ours
        executors = sc._jsc.sc().getExecutorMemoryStatus().size() - 1  # block managers but the driver's
        assert executors == 2
    finally:
        spark.stop()


def test_up_again_starts_only_the_nodes_that_died(cluster: Layout, replicated_topics: StackSettings) -> None:
    """kill -9 of a broker and a Cassandra node; ``up --nodes 3`` starts those two again, the others keep
    their pids, and the quorum, the ring and the topic's in-sync replicas are whole again."""
    before = {s.name: s.pid for s in manager.status(cluster.settings, nodes=3)}
    for name in ("kafka-3", "cassandra-3"):
        manager.stop_service(cluster.settings, name, kill=True, nodes=3)
    lines: list[str] = []
    manager.up(cluster.settings, report=lines.append, nodes=3)
    after = {s.name: s.pid for s in manager.status(cluster.settings, nodes=3)}
    restarted = {name for name in before if after[name] != before[name]}
    assert restarted == {"kafka-3", "cassandra-3"}, lines
    assert sum("already running" in line for line in lines) == 8

    topic = replicated_topics.topic_messages
    admin = admin_client(replicated_topics)
    deadline = time.monotonic() + 60
    while True:  # the restarted broker catches up and rejoins every ISR
        partitions = admin.list_topics(topic, timeout=10).topics[topic].partitions.values()
        if all(sorted(p.isrs) == [1, 2, 3] for p in partitions) or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert all(sorted(p.isrs) == [1, 2, 3] for p in partitions), [p.isrs for p in partitions]
