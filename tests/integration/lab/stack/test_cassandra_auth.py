"""Cassandra with a login and TLS: the schema tool, the sink's writer and the reader connect with the
credentials and the CA from the settings, and are refused in one line without them.

The stack's own Cassandra stays as everyone uses it (AllowAllAuthenticator, no TLS): this module starts a
second, throw-away node from the same artifacts and the same command line (lab.stack.services), on
free ports, with a small heap, ``PasswordAuthenticator`` (default superuser cassandra/cassandra) and
client encryption required, and stops it at the end.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from core.cql import CassandraLoginError, connect
from core.errors import ChatlogError
from core.settings import StackSettings
from lab.stack import manager, process, security
from lab.stack.services import Cassandra
from store.schema import apply_schema

pytestmark = [pytest.mark.integration, pytest.mark.auth, pytest.mark.slow]

WRONG = "not-the-password-0815"
HEAP = "600m"  # beside the stack's own Cassandra on 2 cores


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StackSettings]:
    """Settings of a running Cassandra that wants a login over TLS, with the right credentials and CA."""
    home: Path = tmp_path_factory.mktemp("cassandra-auth")
    tls = security.ensure_tls(home / "tls")
    settings = StackSettings(
        state_dir=home,
        cassandra_port=_free_port(),
        cassandra_storage_port=_free_port(),
        cassandra_heap=HEAP,
        cassandra_keyspace="chatlog_auth",
        cassandra_username="cassandra",
        cassandra_password=SecretStr("cassandra"),
        cassandra_ssl_ca_location=tls.ca,
    )
    node = Cassandra(settings, name="cassandra-auth", password_auth=True, tls=tls)
    pid = manager.start(node, timeout=180, report=lambda _line: None)
    try:
        yield settings
    finally:
        process.stop(pid, timeout=1)  # a throw-away node: no need to wait for a clean shutdown


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert text and "\n" not in text and WRONG not in text and "Traceback" not in text, text
    return text


def test_schema_tool_connects_with_the_login_over_tls(secured: StackSettings) -> None:
    assert apply_schema(secured) > 0
    cluster, session = connect(secured, keyspace=secured.cassandra_keyspace)
    try:
        row = session.execute("SELECT ssl_enabled, username FROM system_views.clients").all()
        assert {(r.ssl_enabled, r.username) for r in row} == {(True, "cassandra")}
    finally:
        cluster.shutdown()


def test_without_credentials_the_login_is_refused_in_one_line(secured: StackSettings) -> None:
    anonymous = secured.model_copy(update={"cassandra_username": None, "cassandra_password": None})
    with pytest.raises(CassandraLoginError) as info:
        apply_schema(anonymous)
    assert "CHATLOG_CASSANDRA_USERNAME" in _one_line(info.value)


def test_a_wrong_password_is_refused_in_one_line(secured: StackSettings) -> None:
    wrong = secured.model_copy(update={"cassandra_password": SecretStr(WRONG)})
    with pytest.raises(CassandraLoginError) as info:
        connect(wrong, timeout=5)
    assert "cassandra" in _one_line(info.value)


def test_without_tls_the_node_is_not_reachable(secured: StackSettings) -> None:
    plain = secured.model_copy(update={"cassandra_ssl_ca_location": None})
    with pytest.raises(ChatlogError) as info:
        apply_schema(plain)
    assert str(secured.cassandra_port) in _one_line(info.value)


def test_sink_writer_and_reader_use_the_same_login(secured: StackSettings) -> None:
    from chatlog.cli.log_reader import read_events
    from core.testing import chat_events
    from sink.settings import SinkSettings
    from store.write import Caches, TaskWrite, WorkerSession, WriteOptions

    apply_schema(secured)
    names = [n for n in SinkSettings.model_fields if n.startswith("cassandra_")]
    sink = SinkSettings(**{n: getattr(secured, n) for n in names}, sink_cassandra_retry_s=10)
    (event,) = chat_events(1, channels=1)
    writer = WorkerSession(sink, sink.sink_cassandra_retry_s, sink.sink_cassandra_timeout_s)
    try:
        task = TaskWrite(writer, WriteOptions(keyspace=secured.cassandra_keyspace, retry_s=10), Caches())
        task.add(event)
        assert task.finish().events == 1
    finally:
        writer.shutdown()
    assert list(read_events(secured, "nochannel")) == []
    assert [e.message_id for e in read_events(secured, event.channel)] == [event.message_id]
    anonymous = secured.model_copy(update={"cassandra_username": None, "cassandra_password": None})
    with pytest.raises(ChatlogError) as info:
        list(read_events(anonymous, "nochannel"))
    assert "CHATLOG_CASSANDRA_USERNAME" in _one_line(info.value)
