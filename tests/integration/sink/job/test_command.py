"""``chatlog sink`` before Spark starts: with Kafka up and Cassandra down (or the topic missing), one line
naming the setting, exit code 2, within 15 s (issue 13: before, 120 s of retries and 38 driver tracebacks)."""

from __future__ import annotations

import pytest

from sink.settings import SinkSettings
from tests.unit.cli_runs import chatlog

pytestmark = pytest.mark.integration


def _env(settings: SinkSettings, **extra: str) -> dict[str, str]:
    return {
        "CHATLOG_KAFKA_BOOTSTRAP_SERVERS": settings.kafka_bootstrap_servers,
        "CHATLOG_TOPIC_MESSAGES": settings.topic_messages,
        "CHATLOG_CASSANDRA_KEYSPACE": settings.cassandra_keyspace,
        "CHATLOG_SINK_METRICS_PORT": "0",
        **extra,
    }


@pytest.mark.parametrize(
    ("extra", "setting"),
    [
        ({"CHATLOG_CASSANDRA_PORT": "1"}, "CHATLOG_CASSANDRA_PORT"),
        ({"CHATLOG_TOPIC_MESSAGES": "no.such.topic"}, "CHATLOG_TOPIC_MESSAGES"),
    ],
)
def test_a_service_or_topic_missing_at_start_is_one_line_in_seconds(
    sink_settings: SinkSettings, extra: dict[str, str], setting: str
) -> None:
    for args in (["sink"], ["sink", "--backfill", "--from", "2026-01-01T00:00:00Z"]):
        run = chatlog(args, _env(sink_settings, **extra))
        lines = run.stderr_lines
        assert (run.code, len(lines)) == (2, 1), run.output
        assert lines[0].startswith("chatlog: error: ") and setting in lines[0], lines
        assert run.seconds < 15, run.seconds
