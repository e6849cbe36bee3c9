"""The replication and write guarantees as settings: min.insync.replicas of created topics, the producers'
acks and idempotence, the consistency level of Cassandra sessions."""

from __future__ import annotations

from typing import Any

import pytest

from core import cql
from core.errors import SettingsError
from core.kafka_admin import topic_config
from core.settings import CassandraSettings, KafkaSettings, load


def test_min_insync_replicas_follows_the_replication_factor_unless_set() -> None:
    assert KafkaSettings().topic_min_isr is None
    assert topic_config(KafkaSettings(), {"a": "1"}) == {"a": "1"}
    three = KafkaSettings(topic_replication_factor=3)
    assert three.topic_min_isr == 2
    assert topic_config(three, {})["min.insync.replicas"] == "2"
    assert KafkaSettings(topic_replication_factor=5, topic_min_insync_replicas=3).topic_min_isr == 3
    with pytest.raises(SettingsError, match="no write could succeed"):
        load(KafkaSettings, topic_replication_factor=2, topic_min_insync_replicas=3)


def test_every_producer_writes_with_acks_all_and_idempotence_unless_set_otherwise() -> None:
    assert KafkaSettings().producer_guarantees() == {"acks": "all", "enable.idempotence": True}
    leader_only = KafkaSettings(kafka_acks="1", kafka_idempotence=False)
    assert leader_only.producer_guarantees() == {"acks": "1", "enable.idempotence": False}
    with pytest.raises(SettingsError, match="needs kafka_acks"):
        load(KafkaSettings, kafka_acks="1")


def test_a_producers_timeouts_are_librdkafkas_unless_set(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "request.timeout.ms" not in KafkaSettings().producer_guarantees()
    monkeypatch.setenv("CHATLOG_KAFKA_PRODUCER_REQUEST_TIMEOUT_MS", "5000")
    assert load(KafkaSettings).producer_guarantees()["request.timeout.ms"] == 5000
    assert "topic.metadata.refresh.interval.ms" not in KafkaSettings().producer_guarantees()
    monkeypatch.setenv("CHATLOG_KAFKA_PRODUCER_METADATA_REFRESH_MS", "5000")
    assert load(KafkaSettings).producer_guarantees()["topic.metadata.refresh.interval.ms"] == 5000
    with pytest.raises(SettingsError, match="kafka_producer_request_timeout_ms"):
        load(KafkaSettings, kafka_producer_request_timeout_ms=10)


@pytest.mark.parametrize("level", ["LOCAL_QUORUM", "ONE"])
def test_sessions_read_and_write_at_the_consistency_of_the_settings(
    monkeypatch: pytest.MonkeyPatch, level: str
) -> None:
    from cassandra import ConsistencyLevel, cluster

    profiles: list[Any] = []

    class _Cluster:
        def __init__(self, *_args: Any, execution_profiles: dict[Any, Any], **_kwargs: Any) -> None:
            profiles.extend(execution_profiles.values())
            self.metadata = None

        def connect(self, _keyspace: str | None) -> object:
            return object()

    monkeypatch.setattr(cluster, "Cluster", _Cluster)
    cql.connect(CassandraSettings(cassandra_consistency=level))  # type: ignore[arg-type]
    assert [p.consistency_level for p in profiles] == [ConsistencyLevel.name_to_value[level]]


def test_the_default_consistency_is_local_quorum() -> None:
    assert CassandraSettings().cassandra_consistency == "LOCAL_QUORUM"
