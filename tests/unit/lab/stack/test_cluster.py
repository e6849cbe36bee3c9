"""lab/stack/cluster.py: where the nodes of the multi-node stack listen, how they form one cluster,
and the settings that point the pipeline at it."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import SettingsError, StackError
from core.settings import StackSettings, load
from lab.stack.cluster import Layout, cluster_env, min_insync, replicas


def _layout(tmp_path: Path, nodes: int = 3) -> Layout:
    return Layout(StackSettings(state_dir=tmp_path), nodes)


def test_nodes_have_their_own_ports_addresses_and_state_apart_from_the_single_stack(tmp_path: Path) -> None:
    layout = _layout(tmp_path)
    kafka = [layout.kafka(i) for i in (1, 2, 3)]
    assert [k.settings.kafka_port for k in kafka] == [19092, 19192, 19292]
    assert [k.settings.kafka_controller_port for k in kafka] == [19093, 19193, 19293]
    assert layout.voters == "1@127.0.0.1:19093,2@127.0.0.1:19193,3@127.0.0.1:19293"
    assert {k.cluster_id_file for k in kafka} == {tmp_path / "cluster" / "kafka-cluster.id"}
    cassandra = [layout.cassandra(i) for i in (1, 2, 3)]
    assert [c.host for c in cassandra] == ["127.0.0.11", "127.0.0.12", "127.0.0.13"]
    assert {c.seeds for c in cassandra} == {"127.0.0.11:7000"}
    assert all(c.ports == (9042, 7000) for c in cassandra)
    services = layout.services()
    assert len({s.name for s in services}) == len(services) == 10
    assert all(s.home.parent == tmp_path / "cluster" for s in services)
    assert not {p for s in services if s.host == "127.0.0.1" for p in s.ports} & {9092, 9093, 9095, 6667}
    assert layout.irc.ports == (16667,) and layout.client_settings().irc_port == 16667


def test_kafka_nodes_form_a_static_quorum_with_replicated_internal_topics(tmp_path: Path) -> None:
    node = _layout(tmp_path).kafka(2)
    assert node.node_id == 2 and node.internal_replicas == 3
    assert "min.insync.replicas=2" in node.broker_defaults
    assert "default.replication.factor=3" in node.broker_defaults
    assert "replica.lag.time.max.ms=10000" in node.broker_defaults
    assert "broker.session.timeout.ms=5000" in node.broker_defaults  # a hung broker is fenced in 5 s
    assert "broker.heartbeat.interval.ms=1000" in node.broker_defaults


def test_the_seed_starts_first_and_kafka_stops_all_at_once(tmp_path: Path) -> None:
    layout = _layout(tmp_path)
    first, rest = ([s.name for s in group] for group in layout.start_groups())
    assert first == ["kafka-1", "kafka-2", "kafka-3", "cassandra-1", "spark-master", "inspircd"]
    assert rest == ["cassandra-2", "cassandra-3", "spark-worker-1", "spark-worker-2"]
    kafka, timeout = layout.stop_groups()[-1]
    assert [s.name for s in kafka] == ["kafka-3", "kafka-2", "kafka-1"] and timeout < 60
    assert "auto_bootstrap: false" in layout.cassandra(2).node_options
    assert layout.cassandra(1).node_options == ""


def test_clients_get_a_clusters_replication(tmp_path: Path) -> None:
    clients = _layout(tmp_path).client_settings()
    assert clients.kafka_bootstrap_servers == "127.0.0.1:19092,127.0.0.1:19192,127.0.0.1:19292"
    assert clients.contact_points == ["127.0.0.11", "127.0.0.12", "127.0.0.13"]
    assert clients.cassandra_replication == "{'class': 'NetworkTopologyStrategy', 'datacenter1': 3}"
    assert clients.topic_replication_factor == 3 and clients.topic_min_isr == 2
    env = cluster_env(StackSettings(state_dir=tmp_path), 3)
    assert env["CHATLOG_SPARK_MASTER"] == "spark://127.0.0.1:17077"
    assert env["CHATLOG_SINK_CHECKPOINT"] == str(tmp_path / "cluster" / "sink" / "checkpoint")
    assert env["CHATLOG_TOPIC_MIN_INSYNC_REPLICAS"] == "2"
    assert env["CHATLOG_SINK_KAFKA_API_TIMEOUT_MS"] == "10000"
    assert env["CHATLOG_SINK_KAFKA_REQUEST_TIMEOUT_MS"] == "5000"
    assert env["CHATLOG_KAFKA_PRODUCER_REQUEST_TIMEOUT_MS"] == "5000"
    assert env["CHATLOG_SINK_KAFKA_METADATA_MAX_AGE_MS"] == "5000"
    assert env["CHATLOG_KAFKA_PRODUCER_METADATA_REFRESH_MS"] == "5000"
    assert env["CHATLOG_SINK_KAFKA_RECONNECT_BACKOFF_MS"] == "5000"
    assert env["CHATLOG_SINK_FAIL_ON_DATA_LOSS"] == "true"


def test_replication_of_smaller_clusters() -> None:
    assert [(replicas(n), min_insync(n)) for n in (2, 3, 5)] == [(2, 1), (3, 2), (3, 2)]


@pytest.mark.parametrize("nodes", [0, 1, 10])
def test_a_cluster_has_2_to_9_nodes(tmp_path: Path, nodes: int) -> None:
    with pytest.raises(StackError, match="2 to 9 nodes"):
        _layout(tmp_path, nodes)


def test_only_a_loopback_address_for_cassandra_nodes() -> None:
    with pytest.raises(SettingsError, match="loopback"):
        load(StackSettings, cluster_cassandra_address="10.0.0.1")
