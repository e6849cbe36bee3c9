"""Fresh reads on the real stack (issue 34): the sink (Spark) writes, stops; more events reach Kafka; a
chat client's recent messages and the channel's day over HTTP hold them all, each once; after the sink
catches up, still each once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from core.testing import chat_events
from ingest.registry import PARTITIONER
from schemas.chat_event import ChatEvent, encode
from serve.api.app import create_app
from serve.settings import FreshSettings, ServeSettings
from sink.job import stream
from sink.settings import SinkSettings
from tests.uvicorn_thread import served

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]


def _produce(settings: SinkSettings, events: list[ChatEvent]) -> None:
    """As the ingesters do: keyed by channel, their partitioner, each event twice (two replica groups)."""
    producer = Producer({**settings.kafka_client_config(), "partitioner": PARTITIONER})
    for _copy in range(2):
        for event in events:
            producer.produce(settings.topic_messages, encode(event), event.channel.encode())
    assert producer.flush(30) == 0


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())


@pytest.fixture
def app_url(sink_settings: SinkSettings) -> Iterator[str]:
    serve = ServeSettings.model_validate(
        {"cassandra_keyspace": sink_settings.cassandra_keyspace, "serve_channels_ttl_s": 0}
    )
    fresh = FreshSettings.model_validate(
        {
            "topic_messages": sink_settings.topic_messages,
            "kafka_bootstrap_servers": sink_settings.kafka_bootstrap_servers,
        }
    )
    with served(create_app(serve, fresh=fresh)) as base:
        yield base


def test_reads_hold_what_kafka_has_beyond_the_sink_each_once(
    sink_settings: SinkSettings, app_url: str
) -> None:
    events = [e for e in chat_events(240, channels=1) if e.kind == "PRIVMSG"]
    channel = events[0].channel
    written, unwritten = events[:100], events[100:]
    _produce(sink_settings, written)
    stream.run(sink_settings, available_now=True)  # the sink writes the first 100, then stops
    _produce(sink_settings, unwritten)  # said while the sink is stopped

    def recent_ids() -> list[str]:
        lines = _get(f"{app_url}/api/v2/recent-messages/{channel}")["messages"]
        return [dict(t.split("=", 1) for t in line[1:].split(" ", 1)[0].split(";"))["id"] for line in lines]

    def day_ids() -> list[str]:
        day = datetime.fromtimestamp(events[-1].sent_at / 1000, UTC)
        body = _get(f"{app_url}/channel/{channel}/{day.year}/{day.month}/{day.day}?json")
        return [m["id"] for m in body["messages"]]

    def cli_ids() -> list[str]:
        env = {
            **os.environ,
            "CHATLOG_KAFKA_BOOTSTRAP_SERVERS": sink_settings.kafka_bootstrap_servers,
            "CHATLOG_TOPIC_MESSAGES": sink_settings.topic_messages,
            "CHATLOG_CASSANDRA_KEYSPACE": sink_settings.cassandra_keyspace,
        }
        chatlog = str(Path(sys.executable).parent / "chatlog")
        run = subprocess.run(
            [chatlog, "logs", channel, "--since", "0", "--format", "ndjson"],
            env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        return [json.loads(line)["message_id"] for line in run.stdout.splitlines()]

    expected = [e.message_id for e in events]
    today = [e.message_id for e in events if e.sent_at // 86_400_000 == events[-1].sent_at // 86_400_000]
    assert recent_ids() == expected  # every line, once, in order, though half are not in Cassandra
    assert day_ids() == today
    assert cli_ids() == expected  # chatlog logs too

    stream.run(sink_settings, available_now=True)  # the sink catches up
    assert recent_ids() == expected  # nothing twice
    assert day_ids() == today
