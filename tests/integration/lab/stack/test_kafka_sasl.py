"""Kafka over the stack's SASL_SSL listener: every client kind gets in with the SCRAM user and the CA from
the settings, and is refused, in one line, without them."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from pydantic import SecretStr

from core.errors import ChatlogError, SettingsError
from core.kafka_admin import admin_client, ensure_topics
from core.settings import KafkaSettings, StackSettings
from lab.stack import process, security

pytestmark = [pytest.mark.integration, pytest.mark.auth]

WRONG = "wrong-password-4711"


@pytest.fixture(scope="module")
def sasl(stack: StackSettings) -> StackSettings:
    """Stack settings for the SASL_SSL listener: SCRAM-SHA-512 user, the stack's CA."""
    port = stack.kafka_sasl_ssl_port
    if not process.port_open(port):
        pytest.fail(
            f"Kafka has no SASL_SSL listener on 127.0.0.1:{port}: it was started before the listener "
            "existed; stop Kafka and run `chatlog stack up`"
        )
    return security.client_settings(stack)


@pytest.fixture
def sasl_topics(sasl: StackSettings) -> Iterator[StackSettings]:
    """Four new topics, created and deleted through the SASL_SSL listener (the admin client)."""
    settings = sasl.with_topics(f"sasl{uuid.uuid4().hex[:10]}", channel_buckets=2, messages_partitions=2)
    created = ensure_topics(settings)
    assert settings.topic_messages in created
    yield settings
    names = [v for n, v in settings.model_dump().items() if n.startswith("topic_") and isinstance(v, str)]
    for fut in admin_client(settings).delete_topics(names, operation_timeout=30).values():
        with contextlib.suppress(Exception):
            fut.result(timeout=60)


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text.strip(), text
    assert WRONG not in text and "Traceback" not in text
    return text


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"])
def test_producer_and_consumer_round_trip_over_sasl_ssl(sasl_topics: StackSettings, mechanism: str) -> None:
    settings = sasl_topics.model_copy(update={"kafka_sasl_mechanism": mechanism})
    conf = settings.kafka_client_config()
    assert conf["security.protocol"] == "SASL_SSL" and conf["ssl.ca.location"].endswith("ca.pem")
    key, value = b"somechannel", uuid.uuid4().bytes
    producer = Producer({**conf, "enable.idempotence": True, "acks": "all"})
    producer.produce(settings.topic_messages, key=key, value=value)
    assert producer.flush(15) == 0
    consumer = Consumer(
        {
            **conf,
            "group.id": f"sasl-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            "group.protocol": "consumer",
        }
    )
    consumer.subscribe([settings.topic_messages])
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None and msg.value() == value:
                assert msg.key() == key
                return
        pytest.fail("the record produced over SASL_SSL never came back")
    finally:
        consumer.close()


@pytest.mark.parametrize(
    ("update", "expect"),
    [
        ({"kafka_sasl_password": SecretStr(WRONG)}, "login"),
        ({"kafka_sasl_username": "nobody"}, "login"),
        ({"kafka_ssl_ca_location": None}, "TLS"),  # the system's CAs do not know the stack's CA
        # TLS without SASL, or neither: the broker hangs up at the first request; the line names the setting
        ({"kafka_security_protocol": "SSL"}, "CHATLOG_KAFKA_SECURITY_PROTOCOL=SSL"),
        ({"kafka_security_protocol": "PLAINTEXT"}, "CHATLOG_KAFKA_SECURITY_PROTOCOL=PLAINTEXT"),
    ],
)
def test_clients_without_the_right_credentials_are_refused_in_one_line(
    sasl: StackSettings, update: dict[str, Any], expect: str
) -> None:
    settings = sasl.model_copy(update=update)
    started = time.monotonic()
    with pytest.raises(ChatlogError) as info:
        ensure_topics(settings.with_topics(f"never{uuid.uuid4().hex[:8]}"))
    assert expect in _one_line(info.value).lower() or expect in str(info.value)
    assert time.monotonic() - started < 15


def test_sasl_without_a_user_or_password_is_a_settings_error(sasl: StackSettings) -> None:
    for missing in ("kafka_sasl_username", "kafka_sasl_password"):
        settings = sasl.model_copy(update={missing: None})
        with pytest.raises(SettingsError) as info:
            settings.kafka_client_config()
        assert f"CHATLOG_{missing.upper()}" in _one_line(info.value)


def _monitor_topics(settings: KafkaSettings) -> set[str]:
    """The topics aiokafka sees with the monitor's faust credentials (what its agents and tables use)."""
    import asyncio

    import aiokafka
    from faust.transport.drivers.aiokafka import credentials_to_aiokafka_auth

    from chatlog.monitor.preflight import broker_credentials
    from chatlog.monitor.settings import MonitorSettings

    monitor = MonitorSettings(**{n: getattr(settings, n) for n in KafkaSettings.model_fields})
    auth = credentials_to_aiokafka_auth(broker_credentials(monitor))

    async def topics() -> set[str]:
        consumer = aiokafka.AIOKafkaConsumer(
            bootstrap_servers=settings.kafka_bootstrap_servers, request_timeout_ms=10_000, **auth
        )
        try:
            await consumer.start()
            return set(await consumer.topics())
        finally:
            await consumer.stop()

    return asyncio.run(asyncio.wait_for(topics(), 20))


def test_monitor_faust_credentials_connect_over_sasl_ssl(sasl_topics: StackSettings) -> None:
    assert sasl_topics.topic_channels in _monitor_topics(sasl_topics)
    with pytest.raises(Exception) as info:
        _monitor_topics(sasl_topics.model_copy(update={"kafka_sasl_password": SecretStr(WRONG)}))
    assert WRONG not in str(info.value)


def _sink_settings(kafka: KafkaSettings, **update: Any) -> Any:
    from sink.settings import SinkSettings

    values = {name: getattr(kafka, name) for name in KafkaSettings.model_fields}
    return SinkSettings(
        **values, spark_master="local[2]", spark_shuffle_partitions=2, spark_log_level="ERROR"
    ).model_copy(update=update)


@pytest.mark.spark
@pytest.mark.slow
def test_spark_kafka_source_reads_over_sasl_ssl_and_is_refused_with_a_wrong_password(
    sasl_topics: StackSettings,
) -> None:
    from sink.job.session import get_session, kafka_failure, kafka_options

    producer = Producer(sasl_topics.kafka_client_config())
    for i in range(25):
        producer.produce(sasl_topics.topic_messages, key=b"c", value=str(i).encode())
    assert producer.flush(15) == 0

    def read(settings: Any) -> int:
        spark = get_session(settings)
        frame = (
            spark.read.format("kafka")
            .options(**kafka_options(settings))
            .option("subscribe", settings.topic_messages)
            .option("startingOffsets", "earliest")
            .option("endingOffsets", "latest")
            .option("fetchOffset.numRetries", "1")
            .load()
        )
        return int(frame.count())

    good = _sink_settings(sasl_topics)
    options = kafka_options(good)
    assert options["kafka.ssl.truststore.type"] == "PEM"
    assert "ScramLoginModule" in options["kafka.sasl.jaas.config"]
    assert read(good) == 25

    bad = _sink_settings(sasl_topics, kafka_sasl_password=SecretStr(WRONG))
    with pytest.raises(Exception) as info:
        read(bad)
    assert WRONG not in str(info.value)
    line = kafka_failure(info.value, bad)
    assert line is not None, str(info.value)[:2000]
    assert "Authentication failed" in line and "\n" not in line and WRONG not in line
