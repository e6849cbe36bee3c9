"""``chatlog init`` against the real stack: the topics of topics.toml and the keyspace appear."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chatlog.cli.init import run_init
from core.cql import connect
from core.kafka_admin import admin_client
from core.settings import KafkaSettings, StackSettings, load
from schemas.topics import topic_specs

pytestmark = pytest.mark.integration


@pytest.fixture
def isolated_env(
    stack: StackSettings, unique: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[StackSettings]:
    """CHATLOG_* variables naming new topics and a new keyspace; the keyspace is dropped afterwards."""
    env = {
        "CHATLOG_KAFKA_BOOTSTRAP_SERVERS": stack.kafka_bootstrap_servers,
        "CHATLOG_CASSANDRA_HOSTS": stack.cassandra_hosts,
        "CHATLOG_CASSANDRA_KEYSPACE": f"i{unique}",
        "CHATLOG_CHANNEL_BUCKETS": "8",
        "CHATLOG_MESSAGES_PARTITIONS": "2",
        **{
            f"CHATLOG_TOPIC_{role.upper()}": f"i{unique}.{role}"
            for role in ("channels", "messages", "deadletter", "status")
        },
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    yield load(StackSettings)
    cluster, session = connect(stack)
    try:
        session.execute(f"DROP KEYSPACE IF EXISTS i{unique}", timeout=60)
    finally:
        cluster.shutdown()


def test_init_creates_topics_and_keyspace_and_is_idempotent(isolated_env: StackSettings) -> None:
    messages: list[str] = []
    run_init(topics=True, cql=True, wait_s=0, report=messages.append)
    wanted = {s.name: s.partitions for s in topic_specs(load(KafkaSettings))}
    metadata = admin_client(isolated_env).list_topics(timeout=15).topics
    assert {name: len(metadata[name].partitions) for name in wanted if name in metadata} == wanted
    cluster, session = connect(isolated_env)
    try:
        rows = session.execute(
            "SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = %s",
            (isolated_env.cassandra_keyspace,),
        )
        assert [r.keyspace_name for r in rows] == [isolated_env.cassandra_keyspace]
    finally:
        cluster.shutdown()
    assert messages[0].startswith("topics: created")

    again: list[str] = []
    run_init(topics=True, cql=True, wait_s=0, report=again.append)
    assert again[0] == "topics: all present"
