"""The Kafka TLS and SASL settings as Spark's Kafka source takes them (sink/job/session.py): a PEM
truststore, an escaped JAAS line, the client certificate inline, redacted options, one-line failures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core.errors import SettingsError
from core.settings import KafkaSettings
from lab.stack.security import TlsFiles
from sink.settings import SinkSettings
from tests.unit.core.tls_settings import SECRET, sasl_ssl


def sink(stack_tls: TlsFiles, **kw: Any) -> SinkSettings:
    return SinkSettings(**sasl_ssl(stack_tls.ca, **kw).model_dump(include=set(KafkaSettings.model_fields)))


def test_spark_kafka_source_gets_a_pem_truststore_and_an_escaped_jaas_line(stack_tls: TlsFiles) -> None:
    from sink.job.session import kafka_options

    opts = kafka_options(sink(stack_tls))
    assert opts["kafka.security.protocol"] == "SASL_SSL"
    assert opts["kafka.sasl.mechanism"] == "SCRAM-SHA-512"
    assert (opts["kafka.ssl.truststore.type"], opts["kafka.ssl.truststore.location"]) == (
        "PEM",
        str(stack_tls.ca),
    )
    assert opts["kafka.sasl.jaas.config"] == (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="chatlog" password="s3cr\\\\et\\"pass";'
    )
    plain = kafka_options(sink(stack_tls, kafka_sasl_mechanism="PLAIN"))["kafka.sasl.jaas.config"]
    assert plain.startswith("org.apache.kafka.common.security.plain.PlainLoginModule required ")
    assert "kafka.ssl.endpoint.identification.algorithm" not in opts
    no_check = kafka_options(sink(stack_tls, kafka_ssl_check_hostname=False))
    assert no_check["kafka.ssl.endpoint.identification.algorithm"] == ""


def test_spark_client_certificate_goes_inline_as_a_pem_keystore(stack_tls: TlsFiles, tmp_path: Path) -> None:
    from sink.job.session import kafka_options

    cert, key = tmp_path / "client.pem", tmp_path / "client.key"
    cert.write_text("-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n")
    key.write_text("-----BEGIN PRIVATE KEY-----\ny\n-----END PRIVATE KEY-----\n")
    opts = kafka_options(
        sink(stack_tls, kafka_ssl_certificate_location=str(cert), kafka_ssl_key_location=str(key))
    )
    assert opts["kafka.ssl.keystore.type"] == "PEM"
    assert opts["kafka.ssl.keystore.certificate.chain"] == cert.read_text()
    assert opts["kafka.ssl.keystore.key"] == key.read_text()
    with pytest.raises(SettingsError, match=r"CHATLOG_KAFKA_SSL_CERTIFICATE_LOCATION.*no such file"):
        kafka_options(
            sink(
                stack_tls,
                kafka_ssl_certificate_location=str(tmp_path / "gone.pem"),
                kafka_ssl_key_location=str(key),
            )
        )


def test_spark_redacts_the_credential_options(stack_tls: TlsFiles) -> None:
    import re

    from sink.job.session import REDACTED_OPTIONS, kafka_options, session_conf

    settings = sink(stack_tls)
    assert session_conf(settings)["spark.sql.redaction.options.regex"] == REDACTED_OPTIONS
    secret_keys = {k for k, v in kafka_options(settings).items() if "s3cr" in v}
    assert secret_keys == {"kafka.sasl.jaas.config"}
    for key in (*secret_keys, "kafka.ssl.keystore.key", "kafka.ssl.key.password"):
        assert re.search(REDACTED_OPTIONS, key)


def test_spark_without_credentials_or_with_an_unknown_mechanism_is_one_line(stack_tls: TlsFiles) -> None:
    from sink.job.session import jaas_config, kafka_options

    with pytest.raises(SettingsError, match="CHATLOG_KAFKA_SASL_PASSWORD"):
        kafka_options(sink(stack_tls).model_copy(update={"kafka_sasl_password": None}))
    with pytest.raises(SettingsError, match="SCRAM-SHA-512") as info:
        jaas_config("GSSAPI", "u", SECRET)
    assert SECRET not in str(info.value)


def test_kafka_failure_finds_kafka_s_reason_and_masks_the_password(stack_tls: TlsFiles) -> None:
    from sink.job.session import kafka_failure

    settings = sink(stack_tls)
    error = RuntimeError(
        "An error occurred while calling o64.count.\n: java.util.concurrent.ExecutionException: "
        "org.apache.kafka.common.errors.SaslAuthenticationException: Authentication failed for "
        f"{SECRET}\n\tat org.apache.kafka..."
    )
    line = kafka_failure(error, settings)
    assert line is not None and "\n" not in line and SECRET not in line
    assert "SaslAuthenticationException: Authentication failed" in line
    assert kafka_failure(RuntimeError("something else"), settings) is None
