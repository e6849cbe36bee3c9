"""Ingest settings: worker ids that stay valid as IRC nick prefixes, group ids, one-line errors, and the
producer and consumer configs librdkafka takes (its ranges)."""

from __future__ import annotations

import re

import pytest
from confluent_kafka import Consumer, Producer

from core.errors import SettingsError
from core.settings import load
from ingest.membership import consumer_config
from ingest.producer import producer_config
from ingest.settings import IngestSettings, default_worker_id
from tests.unit.refused_setting import refused_in_one_line

INT32_MAX = 2**31 - 1  # the largest value of librdkafka's integer configs


def test_group_id_and_worker_id() -> None:
    s = load(IngestSettings, ingest_replica=2, ingest_worker_id="pod-7", ingest_group_prefix="x")
    assert s.group_id == "x-r2" and s.worker_id == "pod-7"
    assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9\-]*-\d+", default_worker_id())
    assert load(IngestSettings).worker_id == default_worker_id()


@pytest.mark.parametrize("bad", ["a.b", "-x", "", "x" * 65, "a b"])
def test_bad_worker_ids_are_one_line_errors(bad: str) -> None:
    with pytest.raises(SettingsError) as exc:
        load(IngestSettings, ingest_worker_id=bad)
    assert "CHATLOG_INGEST_WORKER_ID" in str(exc.value) and "\n" not in str(exc.value)


def test_environment_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHATLOG_INGEST_HANDOFF_TIMEOUT_S", "2.5")
    monkeypatch.setenv("CHATLOG_METRICS_PORT", "0")
    monkeypatch.setenv("CHATLOG_INGEST_GROUP_PROTOCOL", "classic")
    s = load(IngestSettings)
    assert (s.ingest_handoff_timeout_s, s.metrics_port, s.ingest_group_protocol) == (2.5, 0, "classic")
    monkeypatch.setenv("CHATLOG_INGEST_GROUP_PROTOCOL", "eager")
    with pytest.raises(SettingsError):
        load(IngestSettings)


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("CHATLOG_INGEST_BATCH_BYTES", "2147483648"),  # librdkafka's int configs are int32
        ("CHATLOG_INGEST_QUEUE_MAX_MESSAGES", "2147483648"),
        ("CHATLOG_INGEST_QUEUE_MAX_KBYTES", "2147483648"),
        ("CHATLOG_INGEST_DELIVERY_TIMEOUT_MS", "2147483648"),
        ("CHATLOG_INGEST_LINGER_MS", "900001"),  # librdkafka: linger.ms 0..900000
        ("CHATLOG_INGEST_LINGER_MS", "120000"),  # not below delivery.timeout.ms: no producer
        ("CHATLOG_INGEST_SESSION_TIMEOUT_MS", "300001"),  # above max.poll.interval.ms: no consumer
    ],
)
def test_a_librdkafka_config_out_of_its_range_is_one_line_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    refused_in_one_line(monkeypatch, IngestSettings, variable, value)


def test_the_largest_values_allowed_make_a_librdkafka_producer_and_consumer() -> None:
    """librdkafka checks its config when the client is made (no broker needed): a traceback there before."""
    settings = load(
        IngestSettings,
        kafka_bootstrap_servers="127.0.0.1:1",
        ingest_linger_ms=900_000,
        ingest_batch_bytes=INT32_MAX,
        ingest_queue_max_messages=INT32_MAX,
        ingest_queue_max_kbytes=INT32_MAX,
        ingest_delivery_timeout_ms=INT32_MAX,
        ingest_session_timeout_ms=300_000,
    )
    Producer(producer_config(settings, "w1"))
    consumer = Consumer(
        consumer_config(
            settings.kafka_client_config(),
            group_id=settings.group_id,
            protocol="classic",
            session_timeout_ms=settings.ingest_session_timeout_ms,
            client_id="w1",
        )
    )
    consumer.close()
