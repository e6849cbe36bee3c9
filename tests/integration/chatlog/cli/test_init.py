"""``chatlog init`` against the real stack: the topics of topics.toml and the keyspace appear, the keyspace
at this code's storage layout, which the other commands require."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from chatlog.cli.init import run_init
from core.cql import connect
from core.errors import ChatlogError
from core.kafka_admin import admin_client
from core.settings import KafkaSettings, StackSettings, load
from lab.bench.scratch import drop_keyspaces
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
    drop_keyspaces(stack, [f"i{unique}"])


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


def test_init_records_the_layout_once_and_other_commands_refuse_another(
    isolated_env: StackSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new keyspace is created at this code's storage layout and recorded; ``chatlog init`` again changes
    nothing. A keyspace whose recorded layout is older is refused by ``chatlog logs`` and by the sink's
    start in one line that says to run ``chatlog init``, which moves it; one of a newer layout is refused
    by ``chatlog init`` itself."""
    import store.schema
    from chatlog.cli.log_reader import read_events
    from core.testing import chat_events
    from sink.job import stream
    from sink.settings import SinkSettings
    from store.layout import LAYOUT, tables_of
    from store.schema import LayoutMismatch, found_layout, record_layout
    from store.write import Caches, TaskWrite, WriteOptions, worker_session_of

    keyspace = isolated_env.cassandra_keyspace
    recorded: list[tuple[str, int]] = []
    real_record = store.schema.record_layout

    def spy(session: Any, ks: str, version: int = LAYOUT) -> None:
        recorded.append((ks, version))
        real_record(session, ks, version)

    monkeypatch.setattr(store.schema, "record_layout", spy)
    cluster, session = connect(isolated_env)
    try:
        assert found_layout(session, keyspace) is None
        first: list[str] = []
        run_init(topics=False, cql=True, wait_s=0, report=first.append)
        assert found_layout(session, keyspace) == LAYOUT
        assert recorded == [(keyspace, LAYOUT)]
        tables = tables_of(session, keyspace)
        (event,) = chat_events(1, channels=1)
        task = TaskWrite(worker_session_of(session), WriteOptions(keyspace=keyspace), Caches())
        task.add(event)
        task.finish()

        again: list[str] = []
        run_init(topics=False, cql=True, wait_s=0, report=again.append)
        assert again == first and len(first) == 1 and first[0].startswith("cql: "), first
        assert recorded == [(keyspace, LAYOUT)]  # not recorded again
        assert (found_layout(session, keyspace), tables_of(session, keyspace)) == (LAYOUT, tables)
        assert [e.raw for e in read_events(isolated_env, event.channel)] == [event.raw]

        record_layout(session, keyspace, LAYOUT - 1)
        logs = subprocess.run(
            [sys.executable, "-m", "chatlog", "logs", event.channel],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert logs.returncode == 2, logs.stderr
        assert logs.stdout == ""
        assert logs.stderr.splitlines() == [
            f"chatlog: error: keyspace {keyspace} holds storage layout {LAYOUT - 1}, this chatlog reads and "
            f"writes layout {LAYOUT}: run `chatlog init` to move it"
        ]
        sink = load(SinkSettings)
        assert sink.cassandra_keyspace == keyspace and sink.sink_apply_schema
        with pytest.raises(ChatlogError) as refused:
            stream.run(sink, available_now=True)
        message = str(refused.value)
        assert "\n" not in message and f"storage layout {LAYOUT - 1}" in message, message
        assert "run `chatlog init` to move it" in message
        assert found_layout(session, keyspace) == LAYOUT - 1  # the sink neither moved nor recorded it

        moved: list[str] = []
        run_init(topics=False, cql=True, wait_s=0, report=moved.append)
        assert found_layout(session, keyspace) == LAYOUT
        assert [e.raw for e in read_events(isolated_env, event.channel)] == [event.raw]

        record_layout(session, keyspace, LAYOUT + 1)
        with pytest.raises(LayoutMismatch) as newer:
            run_init(topics=False, cql=True, wait_s=0, report=lambda _line: None)
        assert str(newer.value) == (
            f"keyspace {keyspace} holds storage layout {LAYOUT + 1}, newer than this chatlog's {LAYOUT}: "
            "upgrade chatlog"
        )
    finally:
        cluster.shutdown()
