"""Scratch topics and keyspaces on the real stack: made for the block, gone after it, failure or not."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from core.cql import connect
from core.kafka_admin import admin_client, ensure_topics
from core.settings import StackSettings
from lab.bench.scratch import scratch_keyspaces, scratch_topics
from store.schema import apply_schema
from tests.kafka_topics import topics_named

pytestmark = pytest.mark.integration


def keyspaces(settings: StackSettings) -> set[str]:
    cluster, session = connect(settings, timeout=60)
    try:
        return {
            row.keyspace_name for row in session.execute("SELECT keyspace_name FROM system_schema.keyspaces")
        }
    finally:
        cluster.shutdown()


def test_scratch_topics_are_made_then_deleted_with_what_the_run_added(
    stack: StackSettings, unique: str
) -> None:
    prefix = f"scr{unique}"
    with scratch_topics(stack, prefix, also=(f"{prefix}-app-",), channel_buckets=4) as s:
        assert s.topic_channels == f"{prefix}.channels"
        assert s.channel_buckets == 4
        assert topics_named(stack, f"{prefix}.") == set(s.topic_names())
        extra = s.model_copy(update={"topic_messages": f"{prefix}-app-changelog"})
        ensure_topics(extra)  # a topic the run made besides the four
        assert f"{prefix}-app-changelog" in topics_named(stack, prefix)
    assert topics_named(stack, prefix, gone=True) == set()


def test_scratch_topics_are_deleted_when_the_run_fails(stack: StackSettings, unique: str) -> None:
    prefix = f"scr{unique}"
    with pytest.raises(RuntimeError, match="the benchmark broke"), scratch_topics(stack, prefix) as s:
        assert len(topics_named(stack, f"{prefix}.")) == len(s.topic_names())
        raise RuntimeError("the benchmark broke")
    assert topics_named(stack, prefix, gone=True) == set()


def test_scratch_keyspaces_are_dropped_failure_or_not(stack: StackSettings, unique: str) -> None:
    made, never_made = f"scr{unique}a", f"scr{unique}b"
    with pytest.raises(RuntimeError), scratch_keyspaces(stack, made, never_made) as names:
        assert names == (made, never_made)
        apply_schema(stack.model_copy(update={"cassandra_keyspace": made}))  # as the sink's set-up does
        assert made in keyspaces(stack)
        raise RuntimeError("the benchmark broke")
    assert not {made, never_made} & keyspaces(stack)


def test_a_keyspace_name_is_never_spliced_into_cql_unchecked(stack: StackSettings) -> None:
    with (
        pytest.raises(ValueError, match="not a keyspace name"),
        scratch_keyspaces(stack, "x; DROP KEYSPACE chatlog"),
    ):
        pass


def test_scratch_consumer_groups_are_deleted_and_missing_ones_are_no_error(
    stack: StackSettings, unique: str
) -> None:
    group, never = f"scr{unique}-app", f"scr{unique}-never"
    with scratch_topics(stack, f"scr{unique}", groups=(group, never)) as s:
        consumer = Consumer({**s.kafka_client_config(), "group.id": group, "auto.offset.reset": "earliest"})
        try:
            consumer.subscribe([s.topic_channels])
            deadline = time.monotonic() + 60
            while not consumer.assignment() and time.monotonic() < deadline:
                consumer.poll(0.5)
            assert consumer.assignment(), "the consumer never joined its group"
            consumer.commit(offsets=[TopicPartition(s.topic_channels, 0, 0)], asynchronous=False)  # kept
        finally:
            consumer.close()
        assert group in groups(stack)
    assert not {group, never} & groups(stack)


def groups(settings: StackSettings) -> set[str]:
    admin = admin_client(settings)  # held until the answer is in: a freed client fails its futures
    listed = admin.list_consumer_groups(request_timeout=30).result(timeout=60)
    return {g.group_id for g in listed.valid}
