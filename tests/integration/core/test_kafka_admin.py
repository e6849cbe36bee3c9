"""ensure_topics returns only once the topics are usable by any new client (issue 13, item 11).

Before, it returned when the create futures completed, while the broker's metadata did not list the
topics yet: a producer started right then (``chatlog import`` after ``chatlog init``) said "topic ...
does not exist" (13 of 15 rounds here).
"""

from __future__ import annotations

import contextlib

import pytest
from confluent_kafka import Producer

from core.kafka_admin import admin_client, ensure_topics, not_ready
from core.settings import StackSettings
from schemas.topics import topic_specs

pytestmark = pytest.mark.integration

ROUNDS = 5


def test_a_new_client_sees_every_topic_with_leaders_as_soon_as_ensure_topics_returns(
    stack: StackSettings, unique: str
) -> None:
    admin = admin_client(stack)
    names: list[str] = []
    try:
        for i in range(ROUNDS):
            settings = stack.with_topics(f"t{unique}r{i}", channel_buckets=16, messages_partitions=4)
            specs = topic_specs(settings)
            names += [s.name for s in specs]
            assert sorted(ensure_topics(settings)) == sorted(s.name for s in specs)
            producer = Producer({**settings.kafka_client_config(), "log_level": 0})
            topics = producer.list_topics(timeout=15).topics  # what `chatlog import` asks first
            assert not_ready(topics, {s.name: s.partitions for s in specs}) == [], f"round {i}"
            assert ensure_topics(settings) == []  # idempotent: nothing created the second time
    finally:
        for fut in admin.delete_topics(names, operation_timeout=30).values() if names else []:
            with contextlib.suppress(Exception):
                fut.result(timeout=60)
