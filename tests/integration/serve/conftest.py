"""Fixtures of the read side's integration tests: sink settings on a fresh keyspace (the sink's executor
writes what the read side reads back), and chat events to write."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from core.settings import StackSettings
from schemas.chat_event import ChatEvent
from sink.settings import SinkSettings


@pytest.fixture
def sink_settings(fresh_topics: StackSettings, fresh_keyspace: StackSettings, tmp_path: Path) -> SinkSettings:
    """Sink settings on this test's own topics and keyspace."""
    names = ("topic_messages", "topic_deadletter", "topic_channels", "topic_status", "messages_partitions")
    values: dict[str, Any] = {n: getattr(fresh_topics, n) for n in names}
    values.update(
        cassandra_keyspace=fresh_keyspace.cassandra_keyspace,
        sink_checkpoint=str(tmp_path / "checkpoint"),
        sink_metrics_port=0,
        sink_cassandra_retry_s=20,
    )
    return SinkSettings(**values)


def make_events(n: int, *, channels: int = 7, now_ms: int | None = None) -> list[ChatEvent]:
    """``n`` events 37 ms apart ending at ``now_ms``, over ``channels`` channels; a CLEARCHAT now and then."""
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    out = []
    for i in range(n):
        kind = "CLEARCHAT" if i % 97 == 5 else "PRIVMSG"
        user = None if kind == "CLEARCHAT" or i % 50 == 3 else f"user{i % 23}"
        out.append(
            ChatEvent(
                message_id=str(uuid.uuid4()),
                kind=kind,
                channel=f"chan{i % channels}",
                user_login=user,
                text=f"message {i}" if kind == "PRIVMSG" else "baduser",
                sent_at=now - (n - i) * 37,
                received_at=now - (n - i) * 37 + 5,
                tags={"id": str(i)},
                raw=f"raw {i}",
                ingester="r1",
            )
        )
    return out
