"""Shared fixtures. Integration fixtures bring the real local stack up once per session."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from core.settings import StackSettings

if TYPE_CHECKING:
    from chatlog.stack.security import TlsFiles


@pytest.fixture(scope="session")
def stack() -> Iterator[StackSettings]:
    """The real local stack (Kafka, Cassandra, InspIRCd), started if needed and stopped if we started it.

    Set ``CHATLOG_TEST_KEEP_STACK=1`` to leave a stack we started running after the tests.
    """
    from chatlog.stack import manager, process
    from chatlog.stack.services import all_services

    settings = StackSettings()
    already = all(process.read_pid(s.pid_file) is not None for s in all_services(settings))
    manager.up(settings, report=lambda _msg: None)
    yield settings
    if not already and os.environ.get("CHATLOG_TEST_KEEP_STACK") != "1":
        manager.down(settings, report=lambda _msg: None)


@pytest.fixture(scope="session")
def stack_tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    """A CA, a server keystore and a SCRAM password as ``chatlog stack`` makes them, in a temporary dir."""
    from chatlog.stack.security import ensure_tls

    return ensure_tls(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def unique() -> str:
    """A short random suffix for topics, keyspaces, channels and groups of one test."""
    return uuid.uuid4().hex[:10]


@pytest.fixture
def fresh_topics(stack: StackSettings, unique: str) -> Iterator[StackSettings]:
    """Stack settings whose four topics are new and empty (created here, deleted afterwards)."""
    from core.kafka_admin import admin_client, ensure_topics

    settings = stack.with_topics(f"t{unique}", channel_buckets=16, messages_partitions=4)
    ensure_topics(settings)
    yield settings
    admin = admin_client(settings)  # kept alive until its futures resolve (a freed client fails them)
    for fut in admin.delete_topics(settings.topic_names(), operation_timeout=30).values():
        with contextlib.suppress(Exception):
            fut.result(timeout=60)


@pytest.fixture
def fresh_keyspace(stack: StackSettings, unique: str) -> Iterator[StackSettings]:
    """Stack settings with a new keyspace (schema applied), dropped afterwards."""
    from core.cql import apply_schema, connect

    settings = stack.model_copy(update={"cassandra_keyspace": f"t{unique}"})
    apply_schema(settings)
    yield settings
    cluster, session = connect(settings)
    try:
        session.execute(f"DROP KEYSPACE IF EXISTS {settings.cassandra_keyspace}", timeout=60)
    finally:
        cluster.shutdown()
