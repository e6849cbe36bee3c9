"""TLS and SASL settings reach every client: librdkafka's config, Spark's Kafka source, the monitor's faust
credentials, the Cassandra driver; missing credentials are one line; no secret in any of those lines."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import pytest

from chatlog.stack import security
from core.errors import SettingsError
from core.settings import CassandraSettings, KafkaSettings, StackSettings, load

SECRET = 's3cr\\et"pass'


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> security.TlsFiles:
    return security.ensure_tls(tmp_path_factory.mktemp("tls"))


def kafka(**kw: Any) -> KafkaSettings:
    return load(KafkaSettings, **kw)


def sasl_ssl(tls: security.TlsFiles, **kw: Any) -> KafkaSettings:
    values: dict[str, Any] = {
        "kafka_security_protocol": "SASL_SSL",
        "kafka_sasl_mechanism": "SCRAM-SHA-512",
        "kafka_sasl_username": "chatlog",
        "kafka_sasl_password": SECRET,
        "kafka_ssl_ca_location": str(tls.ca),
    }
    return kafka(**{**values, **kw})


def test_librdkafka_config_carries_sasl_and_tls(tls: security.TlsFiles) -> None:
    conf = sasl_ssl(tls).kafka_client_config()
    assert conf["security.protocol"] == "SASL_SSL"
    assert conf["sasl.mechanism"] == "SCRAM-SHA-512"
    assert (conf["sasl.username"], conf["sasl.password"]) == ("chatlog", SECRET)
    assert conf["ssl.ca.location"] == str(tls.ca)
    assert "ssl.endpoint.identification.algorithm" not in conf  # librdkafka's default: verify the host
    client = sasl_ssl(
        tls,
        kafka_ssl_certificate_location="/c.pem",
        kafka_ssl_key_location="/k.pem",
        kafka_ssl_key_password="kp",
        kafka_ssl_check_hostname=False,
    ).kafka_client_config()
    assert client["ssl.certificate.location"] == "/c.pem" and client["ssl.key.location"] == "/k.pem"
    assert client["ssl.key.password"] == "kp"
    assert client["ssl.endpoint.identification.algorithm"] == "none"


def test_plaintext_config_has_no_tls_keys(tls: security.TlsFiles) -> None:
    conf = kafka(kafka_ssl_ca_location=str(tls.ca)).kafka_client_config()
    assert conf == {"bootstrap.servers": "127.0.0.1:9092", "security.protocol": "PLAINTEXT"}


@pytest.mark.parametrize("missing", ["kafka_sasl_username", "kafka_sasl_password"])
def test_sasl_without_user_or_password_is_one_line_without_secrets(
    tls: security.TlsFiles, missing: str
) -> None:
    settings = sasl_ssl(tls).model_copy(update={missing: None})
    with pytest.raises(SettingsError) as info:
        settings.kafka_client_config()
    text = str(info.value)
    assert f"CHATLOG_{missing.upper()}" in text and "\n" not in text and SECRET not in text


def test_python_ssl_context_trusts_the_ca_and_checks_the_host(tls: security.TlsFiles) -> None:
    context = sasl_ssl(tls).kafka_ssl_context()
    assert context is not None and context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED
    assert [c["subject"] for c in context.get_ca_certs()] == [
        ((("organizationName", "chatlog local stack"),), (("commonName", "chatlog dev CA"),))
    ]
    assert kafka().kafka_ssl_context() is None
    assert sasl_ssl(tls, kafka_ssl_check_hostname=False).kafka_ssl_context().check_hostname is False  # type: ignore[union-attr]


def test_monitor_gets_scram_credentials_and_the_ca(tls: security.TlsFiles) -> None:
    from chatlog.monitor.preflight import broker_credentials
    from chatlog.monitor.settings import MonitorSettings

    settings = load(MonitorSettings, **sasl_ssl(tls).model_dump(include=set(KafkaSettings.model_fields)))
    creds = broker_credentials(settings)
    assert (creds.username, creds.password, creds.mechanism.value) == ("chatlog", SECRET, "SCRAM-SHA-512")
    assert creds.ssl_context.get_ca_certs()
    assert SECRET not in repr(creds)


def sink(tls: security.TlsFiles, **kw: Any) -> Any:
    from sink.settings import SinkSettings

    return SinkSettings(**sasl_ssl(tls, **kw).model_dump(include=set(KafkaSettings.model_fields)))


def test_spark_kafka_source_gets_a_pem_truststore_and_an_escaped_jaas_line(tls: security.TlsFiles) -> None:
    from sink.driver.session import kafka_options

    opts = kafka_options(sink(tls))
    assert opts["kafka.security.protocol"] == "SASL_SSL"
    assert opts["kafka.sasl.mechanism"] == "SCRAM-SHA-512"
    assert (opts["kafka.ssl.truststore.type"], opts["kafka.ssl.truststore.location"]) == ("PEM", str(tls.ca))
    assert opts["kafka.sasl.jaas.config"] == (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="chatlog" password="s3cr\\\\et\\"pass";'
    )
    plain = kafka_options(sink(tls, kafka_sasl_mechanism="PLAIN"))["kafka.sasl.jaas.config"]
    assert plain.startswith("org.apache.kafka.common.security.plain.PlainLoginModule required ")
    assert "kafka.ssl.endpoint.identification.algorithm" not in opts
    no_check = kafka_options(sink(tls, kafka_ssl_check_hostname=False))
    assert no_check["kafka.ssl.endpoint.identification.algorithm"] == ""


def test_spark_client_certificate_goes_inline_as_a_pem_keystore(
    tls: security.TlsFiles, tmp_path: Path
) -> None:
    from sink.driver.session import kafka_options

    cert, key = tmp_path / "client.pem", tmp_path / "client.key"
    cert.write_text("-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n")
    key.write_text("-----BEGIN PRIVATE KEY-----\ny\n-----END PRIVATE KEY-----\n")
    opts = kafka_options(sink(tls, kafka_ssl_certificate_location=str(cert), kafka_ssl_key_location=str(key)))
    assert opts["kafka.ssl.keystore.type"] == "PEM"
    assert opts["kafka.ssl.keystore.certificate.chain"] == cert.read_text()
    assert opts["kafka.ssl.keystore.key"] == key.read_text()
    with pytest.raises(SettingsError, match="cannot read"):
        kafka_options(
            sink(
                tls,
                kafka_ssl_certificate_location=str(tmp_path / "gone.pem"),
                kafka_ssl_key_location=str(key),
            )
        )


def test_spark_redacts_the_credential_options(tls: security.TlsFiles) -> None:
    import re

    from sink.driver.session import REDACTED_OPTIONS, kafka_options, session_conf

    settings = sink(tls)
    assert session_conf(settings)["spark.sql.redaction.options.regex"] == REDACTED_OPTIONS
    secret_keys = {k for k, v in kafka_options(settings).items() if "s3cr" in v}
    assert secret_keys == {"kafka.sasl.jaas.config"}
    for key in (*secret_keys, "kafka.ssl.keystore.key", "kafka.ssl.key.password"):
        assert re.search(REDACTED_OPTIONS, key)


def test_spark_without_credentials_or_with_an_unknown_mechanism_is_one_line(tls: security.TlsFiles) -> None:
    from sink.driver.session import jaas_config, kafka_options

    with pytest.raises(SettingsError, match="CHATLOG_KAFKA_SASL_PASSWORD"):
        kafka_options(sink(tls).model_copy(update={"kafka_sasl_password": None}))
    with pytest.raises(SettingsError, match="SCRAM-SHA-512") as info:
        jaas_config("GSSAPI", "u", SECRET)
    assert SECRET not in str(info.value)


def test_kafka_failure_finds_kafka_s_reason_and_masks_the_password(tls: security.TlsFiles) -> None:
    from sink.driver.session import kafka_failure

    settings = sink(tls)
    error = RuntimeError(
        "An error occurred while calling o64.count.\n: java.util.concurrent.ExecutionException: "
        "org.apache.kafka.common.errors.SaslAuthenticationException: Authentication failed for "
        f"{SECRET}\n\tat org.apache.kafka..."
    )
    line = kafka_failure(error, settings)
    assert line is not None and "\n" not in line and SECRET not in line
    assert "SaslAuthenticationException: Authentication failed" in line
    assert kafka_failure(RuntimeError("something else"), settings) is None


def cassandra(tls: security.TlsFiles | None = None, **kw: Any) -> CassandraSettings:
    ca = {"cassandra_ssl_ca_location": str(tls.ca)} if tls is not None else {}
    return load(CassandraSettings, **ca, **kw)


def test_cassandra_tls_context(tls: security.TlsFiles) -> None:
    from core.cql import ssl_context

    assert ssl_context(cassandra()) is None
    context = ssl_context(cassandra(tls))
    assert context is not None and context.check_hostname and context.get_ca_certs()
    system = ssl_context(cassandra(cassandra_ssl=True))
    assert system is not None and system.verify_mode == ssl.CERT_REQUIRED
    assert ssl_context(cassandra(tls, cassandra_ssl_check_hostname=False)).check_hostname is False  # type: ignore[union-attr]


def test_cassandra_login_refusals_are_one_line() -> None:
    from cassandra import AuthenticationFailed
    from cassandra.cluster import NoHostAvailable

    from core.cql import login_refused

    required = NoHostAvailable(
        "x", {"127.0.0.1:9042": AuthenticationFailed("Remote end requires authentication")}
    )
    line = login_refused(cassandra(), required)
    assert line is not None and "CHATLOG_CASSANDRA_USERNAME" in line
    bad = AuthenticationFailed('Failed: code=0100 [Bad credentials] message="Provided username cassandra..."')
    line = login_refused(cassandra(cassandra_username="cassandra", cassandra_password=SECRET), bad)
    assert line is not None and "bad credentials" in line and SECRET not in line and "\n" not in line
    assert (
        login_refused(cassandra(), NoHostAvailable("x", {"h": ConnectionRefusedError(111, "refused")}))
        is None
    )


def test_stack_tls_files_are_made_once_and_chain_to_the_ca(tls: security.TlsFiles) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import pkcs12

    again = security.ensure_tls(tls.directory)
    assert again.ca.read_bytes() == tls.ca.read_bytes()  # kept, not regenerated
    assert oct(tls.keystore.stat().st_mode & 0o777) == "0o600"
    key, cert, chain = pkcs12.load_key_and_certificates(
        tls.keystore.read_bytes(), tls.keystore_password.encode()
    )
    ca = x509.load_pem_x509_certificate(tls.ca.read_bytes())
    assert key is not None and cert is not None and chain == [ca]
    cert.verify_directly_issued_by(ca)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {str(ip) for ip in names.get_values_for_type(x509.IPAddress)} == {"127.0.0.1"}
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]


def test_kafka_listener_config_and_client_settings(tls: security.TlsFiles, tmp_path: Path) -> None:
    settings = load(StackSettings, state_dir=str(tmp_path), kafka_sasl_ssl_port=19095)
    files = security.ensure_tls(security.tls_dir(settings))
    conf = security.kafka_listener_config(settings, files)
    assert "listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512,SCRAM-SHA-256,PLAIN" in conf
    assert f"listener.name.sasl_ssl.ssl.keystore.location={files.keystore}" in conf
    client = security.client_settings(settings)
    assert client.kafka_bootstrap_servers == "127.0.0.1:19095"
    assert client.kafka_client_config()["sasl.password"] == files.scram_password
    assert client.kafka_ssl_ca_location == files.ca
