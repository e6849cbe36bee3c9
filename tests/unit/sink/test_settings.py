"""Sink settings and time arguments."""

from __future__ import annotations

import pytest

from core.errors import ChatlogError, SettingsError
from core.settings import load
from core.times import format_time, parse_time
from sink.settings import SinkSettings, interval_ms, local_checkpoint
from tests.unit.refused_setting import refused_in_one_line


def test_defaults_are_documented_and_sane(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    monkeypatch.setenv("CHATLOG_STATE_DIR", "/var/lib/chatlog")
    s = load(SinkSettings)
    assert s.checkpoint_location == "/var/lib/chatlog/sink/checkpoint"
    assert (s.spark_master, s.sink_metrics_port) == ("local[*]", 9101)
    assert (s.dedup_window_ms, s.trigger_ms, s.dedup_retention_ms) == (30_000, 10_000, 40_000)
    assert s.spark_driver_java_options == "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
    for name, field in SinkSettings.model_fields.items():
        assert field.description, name


def test_environment_overrides_and_hadoop_uris(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHATLOG_SINK_CHECKPOINT", "s3a://bucket/chatlog/ckpt")
    monkeypatch.setenv("CHATLOG_SINK_DEDUP_WINDOW", "90 seconds")
    monkeypatch.setenv("CHATLOG_SPARK_DRIVER_JAVA_OPTIONS", "")
    s = load(SinkSettings)
    assert s.checkpoint_location == "s3a://bucket/chatlog/ckpt" and s.dedup_window_ms == 90_000
    assert s.spark_driver_java_options == ""


@pytest.mark.parametrize("variable", ["CHATLOG_SINK_TRIGGER", "CHATLOG_SINK_DEDUP_WINDOW"])
def test_a_bad_interval_is_one_line_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv(variable, "soon")
    with pytest.raises(SettingsError, match=variable):
        load(SinkSettings)


@pytest.mark.parametrize(
    ("text", "ms"), [("10 minutes", 600_000), ("500 milliseconds", 500), ("2s", 2000), ("1.5 h", 5_400_000)]
)
def test_intervals(text: str, ms: int) -> None:
    assert interval_ms(text) == ms


def test_times_are_iso_or_epoch_ms() -> None:
    assert parse_time("1795281600000") == 1_795_281_600_000
    assert parse_time("2026-11-21T15:04:05Z") == parse_time("2026-11-21 15:04:05") == 1_795_273_445_000
    assert parse_time("2026-11-21T16:04:05+01:00") == 1_795_273_445_000
    assert format_time(1_795_273_445_000) == "2026-11-21 15:04:05"
    with pytest.raises(ChatlogError, match="not a time"):
        parse_time("yesterday")


def test_spark_kafka_consumers_do_not_wait_half_a_second_at_the_end_of_the_log(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from sink.job.session import kafka_options

    assert kafka_options(SinkSettings())["kafka.fetch.max.wait.ms"] == "10"  # type: ignore[call-arg]
    assert kafka_options(SinkSettings())["kafka.request.timeout.ms"] == "10000"  # type: ignore[call-arg]
    assert "kafka.default.api.timeout.ms" not in kafka_options(SinkSettings())  # type: ignore[call-arg]
    monkeypatch.setenv("CHATLOG_SINK_KAFKA_API_TIMEOUT_MS", "10000")
    assert kafka_options(SinkSettings())["kafka.default.api.timeout.ms"] == "10000"  # type: ignore[call-arg]
    assert "kafka.metadata.max.age.ms" not in kafka_options(SinkSettings())  # type: ignore[call-arg]
    monkeypatch.setenv("CHATLOG_SINK_KAFKA_METADATA_MAX_AGE_MS", "5000")
    assert kafka_options(SinkSettings())["kafka.metadata.max.age.ms"] == "5000"  # type: ignore[call-arg]
    assert "kafka.reconnect.backoff.ms" not in kafka_options(SinkSettings())  # type: ignore[call-arg]
    monkeypatch.setenv("CHATLOG_SINK_KAFKA_RECONNECT_BACKOFF_MS", "5000")
    backoff = kafka_options(SinkSettings())  # type: ignore[call-arg]
    assert backoff["kafka.reconnect.backoff.ms"] == backoff["kafka.reconnect.backoff.max.ms"] == "5000"
    monkeypatch.setenv("CHATLOG_SINK_KAFKA_FETCH_MAX_WAIT_MS", "250")
    assert kafka_options(SinkSettings())["kafka.fetch.max.wait.ms"] == "250"  # type: ignore[call-arg]


def test_spark_kafka_consumers_poll_a_batch_s_records_in_a_few_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spark lists a partition's offsets after every poll: polls of Kafka's default 500 records made a
    batch cost the broker two requests per 500 records."""
    from sink.job.session import kafka_options

    options = kafka_options(SinkSettings())  # type: ignore[call-arg]
    assert options["kafka.max.poll.records"] == "20000"
    assert int(options["kafka.max.partition.fetch.bytes"]) >= 20_000 * 800  # a fetch holds a poll of events
    monkeypatch.setenv("CHATLOG_SINK_KAFKA_MAX_POLL_RECORDS", "500")
    assert kafka_options(SinkSettings())["kafka.max.poll.records"] == "500"  # type: ignore[call-arg]


def test_read_tasks_follow_the_shuffle_partitions_unless_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHATLOG_SPARK_SHUFFLE_PARTITIONS", "3")
    assert SinkSettings().read_tasks == 3  # type: ignore[call-arg]
    monkeypatch.setenv("CHATLOG_SINK_READ_TASKS", "0")
    assert SinkSettings().read_tasks == 0  # type: ignore[call-arg]
    monkeypatch.setenv("CHATLOG_SINK_READ_TASKS", "-1")
    with pytest.raises(ValueError, match="sink_read_tasks"):
        SinkSettings()  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("CHATLOG_SINK_CASSANDRA_RETRY_S", "2147484"),  # the dead-letter producer's message.timeout.ms: int32
        ("CHATLOG_SINK_KAFKA_FETCH_MAX_WAIT_MS", "2147483648"),  # an int of Kafka's Java consumer
    ],
)
def test_a_kafka_client_config_past_int32_is_one_line_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    refused_in_one_line(monkeypatch, SinkSettings, variable, value)


def test_the_longest_retry_allowed_makes_a_dead_letter_producer() -> None:
    from confluent_kafka import Producer

    from sink.writer.deadletter import DeadLetters

    settings = load(SinkSettings, kafka_bootstrap_servers="127.0.0.1:1", sink_cassandra_retry_s=2_147_483)
    Producer(DeadLetters(settings)._config)


@pytest.mark.parametrize(
    ("location", "local"),
    [
        ("/var/lib/chatlog/checkpoint", True),
        ("relative/checkpoint", True),
        ("file:///var/lib/chatlog/checkpoint", True),
        ("FILE:/tmp/cp", True),
        ("hdfs://namenode:8020/chatlog/checkpoint", False),
        ("s3a://bucket/checkpoint", False),
        ("abfss://container@account.dfs.core.windows.net/cp", False),
    ],
)
def test_local_checkpoints_are_recognised(location: str, local: bool) -> None:
    assert local_checkpoint(location) is local
