"""The instance a fill fills: this test's own topics and keyspace."""

from __future__ import annotations

import uuid

import pytest

from core.settings import StackSettings


@pytest.fixture
def filled_instance(fresh_topics: StackSettings, fresh_keyspace: StackSettings) -> StackSettings:
    """This test's topics and keyspace, as one instance."""
    return fresh_keyspace.model_copy(
        update={
            n: getattr(fresh_topics, n) for n in ("topic_messages", "topic_deadletter", "messages_partitions")
        }
    )


@pytest.fixture
def channel() -> str:
    return f"fill{uuid.uuid4().hex[:8]}"
