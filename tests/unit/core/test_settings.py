"""core/settings.py: the Kafka client settings (librdkafka's config, Python's TLS context, one-line errors
without secrets) and CHATLOG_HOME, under which the relative defaults live."""

from __future__ import annotations

import ssl
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from core import settings
from core.errors import SettingsError
from core.settings import CassandraSettings, StackSettings, home_dir, load
from lab.stack.security import TlsFiles
from serve.settings import ServeSettings
from tests.unit.core.tls_settings import SECRET, kafka, sasl_ssl


def test_librdkafka_config_carries_sasl_and_tls(stack_tls: TlsFiles) -> None:
    conf = sasl_ssl(stack_tls.ca).kafka_client_config()
    assert conf["security.protocol"] == "SASL_SSL"
    assert conf["sasl.mechanism"] == "SCRAM-SHA-512"
    assert (conf["sasl.username"], conf["sasl.password"]) == ("chatlog", SECRET)
    assert conf["ssl.ca.location"] == str(stack_tls.ca)
    assert "ssl.endpoint.identification.algorithm" not in conf  # librdkafka's default: verify the host
    cert, key = stack_tls.directory / "c.pem", stack_tls.directory / "k.pem"  # files that are there
    cert.write_text("cert"), key.write_text("key")
    client = sasl_ssl(
        stack_tls.ca,
        kafka_ssl_certificate_location=str(cert),
        kafka_ssl_key_location=str(key),
        kafka_ssl_key_password="kp",
        kafka_ssl_check_hostname=False,
    ).kafka_client_config()
    assert client["ssl.certificate.location"] == str(cert) and client["ssl.key.location"] == str(key)
    assert client["ssl.key.password"] == "kp"
    assert client["ssl.endpoint.identification.algorithm"] == "none"


def test_plaintext_config_has_no_tls_keys(stack_tls: TlsFiles) -> None:
    conf = kafka(kafka_ssl_ca_location=str(stack_tls.ca)).kafka_client_config()
    assert conf == {"bootstrap.servers": "127.0.0.1:9092", "security.protocol": "PLAINTEXT"}


@pytest.mark.parametrize("missing", ["kafka_sasl_username", "kafka_sasl_password"])
def test_sasl_without_user_or_password_is_one_line_without_secrets(stack_tls: TlsFiles, missing: str) -> None:
    settings = sasl_ssl(stack_tls.ca).model_copy(update={missing: None})
    with pytest.raises(SettingsError) as info:
        settings.kafka_client_config()
    text = str(info.value)
    assert f"CHATLOG_{missing.upper()}" in text and "\n" not in text and SECRET not in text


def test_python_ssl_context_trusts_the_ca_and_checks_the_host(stack_tls: TlsFiles) -> None:
    context = sasl_ssl(stack_tls.ca).kafka_ssl_context()
    assert context is not None and context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED
    assert [c["subject"] for c in context.get_ca_certs()] == [
        ((("organizationName", "chatlog local stack"),), (("commonName", "chatlog dev CA"),))
    ]
    assert kafka().kafka_ssl_context() is None
    unchecked = sasl_ssl(stack_tls.ca, kafka_ssl_check_hostname=False).kafka_ssl_context()
    assert unchecked is not None and unchecked.check_hostname is False


def test_home_is_chatlog_home_else_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert home_dir({}) == tmp_path
    assert home_dir({"CHATLOG_HOME": "  "}) == tmp_path
    assert home_dir({"CHATLOG_HOME": "data"}) == tmp_path / "data"
    assert home_dir({"CHATLOG_HOME": "/srv/chatlog"}) == Path("/srv/chatlog")
    assert home_dir({"CHATLOG_HOME": "~/x"}) == Path.home() / "x"


def test_the_stack_defaults_live_under_the_home() -> None:
    stack = load(StackSettings)
    assert stack.state_dir == settings.CHATLOG_HOME / ".state"
    assert stack.cache_dir == settings.CHATLOG_HOME / ".cache"
    assert settings.PROJECT_ROOT == settings.CHATLOG_HOME


@pytest.mark.parametrize(("home", "state"), [(None, ".state"), ("h", "h/.state")])
def test_the_home_is_fixed_when_chatlog_starts_never_the_installed_code(
    tmp_path: Path, home: str | None, state: str
) -> None:
    code = "from core.settings import StackSettings; print(StackSettings().state_dir)"
    env = {"PATH": "/usr/bin:/bin", **({"CHATLOG_HOME": home} if home else {})}
    out = subprocess.run(
        [sys.executable, "-c", code], check=False, cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(tmp_path / state)


@pytest.mark.parametrize(
    ("cls", "variable", "value"),
    [
        (StackSettings, "CHATLOG_CASSANDRA_TTL_S", "630720001"),  # past 20 years: every write refused
        (StackSettings, "CHATLOG_MESSAGES_PARTITIONS", "2147483648"),  # past int32: an OverflowError
        (StackSettings, "CHATLOG_MESSAGES_PARTITIONS", "100001"),  # librdkafka creates at most 100000
        (StackSettings, "CHATLOG_TOPIC_REPLICATION_FACTOR", "10001"),  # librdkafka: at most 10000
        (StackSettings, "CHATLOG_START_TIMEOUT_S", "inf"),
        (StackSettings, "CHATLOG_START_TIMEOUT_S", "nan"),
        (ServeSettings, "CHATLOG_SERVE_HOST", ""),  # would bind every interface
        (ServeSettings, "CHATLOG_SERVE_LOG_LEVEL", "loud"),
        (ServeSettings, "CHATLOG_SERVE_ADMIN_KEY", "weakkey1"),  # a guessable key for every channel's logs
    ],
)
def test_a_setting_out_of_range_is_one_line_naming_it(
    monkeypatch: pytest.MonkeyPatch, cls: type[StackSettings] | type[ServeSettings], variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError) as info:
        load(cls)
    text = str(info.value)
    assert variable in text and "\n" not in text and "weakkey1" not in text


def test_the_largest_ttl_cassandra_takes_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHATLOG_CASSANDRA_TTL_S", "630720000")
    assert load(StackSettings).cassandra_ttl_s == 630_720_000


@pytest.mark.parametrize("content", [None, "not a certificate\n"])
def test_a_tls_file_that_cannot_be_used_is_one_line_naming_its_setting(
    tmp_path: Path, content: str | None
) -> None:
    ca = tmp_path / "ca.pem"
    if content is not None:
        ca.write_text(content)
    for variables in ("CHATLOG_CASSANDRA_SSL", "CHATLOG_KAFKA_SSL"):
        with pytest.raises(SettingsError) as info:
            settings.tls_context(ca, check_hostname=True, variables=variables)
        assert str(info.value).startswith(f"{variables}_CA_LOCATION: cannot use {ca}: ")
        assert "\n" not in str(info.value)


def test_a_client_certificate_that_is_not_one_names_both_of_its_settings(stack_tls: TlsFiles) -> None:
    with pytest.raises(SettingsError) as info:
        settings.tls_context(
            stack_tls.ca, check_hostname=True, certificate=stack_tls.ca.parent / "nowhere.pem"
        )
    assert str(info.value).startswith(
        "CHATLOG_CASSANDRA_SSL_CERTIFICATE_LOCATION / CHATLOG_CASSANDRA_SSL_KEY_LOCATION: cannot use "
    )


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("CHATLOG_IRC_OAUTH", "oauth:SECRETTOKEN123\r\nQUIT :bye"),  # a second IRC command after PASS
        ("CHATLOG_IRC_OAUTH", "oauth:SECRET TOKEN123"),
        ("CHATLOG_IRC_NICK", "bad\r\nQUIT"),
        ("CHATLOG_IRC_NICK", "two words"),
        ("CHATLOG_IRC_NICK", ":prefix"),
    ],
)
def test_an_irc_nick_or_token_that_would_break_its_line_is_refused_without_echoing_the_token(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError) as caught:
        load(settings.IrcSettings)
    message = str(caught.value)
    assert variable in message and "\n" not in message and "SECRET" not in message


def test_a_usual_nick_and_token_are_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHATLOG_IRC_NICK", "Justin_fan[1]")
    monkeypatch.setenv("CHATLOG_IRC_OAUTH", "oauth:abcdef0123456789")
    loaded = load(settings.IrcSettings)
    assert loaded.irc_nick == "Justin_fan[1]" and loaded.irc_oauth is not None


@pytest.mark.parametrize(
    ("variable", "value", "reason"),
    [
        ("CHATLOG_KAFKA_SSL_CA_LOCATION", "/nonexistent/ca.pem", "no such file"),
        ("CHATLOG_KAFKA_SSL_CERTIFICATE_LOCATION", "/", "not a file"),
        ("CHATLOG_KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:abc", "not host[:port]"),  # was port 0, silently
        ("CHATLOG_KAFKA_BOOTSTRAP_SERVERS", "b1:9092,b2:70000", "port 70000"),
        ("CHATLOG_KAFKA_BOOTSTRAP_SERVERS", " ", "empty"),
        ("CHATLOG_CASSANDRA_HOSTS", "127.0.0.1:9042", "without ports"),  # was 127.0.0.1:9042:9042
        ("CHATLOG_CASSANDRA_HOSTS", ",", "empty"),
    ],
)
def test_a_wrong_address_or_tls_file_is_one_line_naming_its_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, reason: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError) as caught:
        load(StackSettings)
    assert variable in str(caught.value) and reason in str(caught.value)


def test_usual_addresses_and_an_empty_path_are_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHATLOG_KAFKA_BOOTSTRAP_SERVERS", "SSL://b1:9093, b2, [::1]:9092")
    monkeypatch.setenv("CHATLOG_CASSANDRA_HOSTS", "10.0.0.1, db.example, ::1")
    monkeypatch.setenv("CHATLOG_KAFKA_SSL_CA_LOCATION", "")  # not set, not the working directory
    monkeypatch.setenv("CHATLOG_CASSANDRA_SSL_CA_LOCATION", "")
    loaded = load(StackSettings)
    assert loaded.contact_points == ["10.0.0.1", "db.example", "::1"]
    assert loaded.kafka_ssl_ca_location is None and loaded.cassandra_ssl_ca_location is None


def _encrypted_client_key(directory: Path, password: bytes) -> tuple[Path, Path]:
    """A self-signed client certificate and its key, encrypted with ``password``."""
    import datetime as dt

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "client")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + dt.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "client.pem", directory / "client.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    encryption = serialization.BestAvailableEncryption(password)
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    )
    return cert_path, key_path


def test_an_encrypted_client_key_is_never_a_password_prompt(tmp_path: Path) -> None:
    from core.cql import ssl_context

    cert, key = _encrypted_client_key(tmp_path, b"kpass")
    files: dict[str, Any] = {
        "cassandra_ssl_certificate_location": str(cert),
        "cassandra_ssl_key_location": str(key),
    }
    with pytest.raises(
        SettingsError, match="the key is encrypted: give its password in CHATLOG_CASSANDRA_SSL_KEY"
    ):
        ssl_context(load(settings.CassandraSettings, **files))  # OpenSSL's own prompt would wait on the tty
    with pytest.raises(SettingsError, match="wrong key password"):
        ssl_context(load(settings.CassandraSettings, **files, cassandra_ssl_key_password="nope"))
    assert (
        ssl_context(load(settings.CassandraSettings, **files, cassandra_ssl_key_password="kpass")) is not None
    )


@pytest.mark.parametrize("prefix", ["CHATLOG_KAFKA_SSL", "CHATLOG_CASSANDRA_SSL"])
def test_a_client_key_without_its_certificate_is_one_line_not_ignored(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, prefix: str
) -> None:
    key = tmp_path / "client.key"
    key.write_text("key")
    monkeypatch.setenv(f"{prefix}_KEY_LOCATION", str(key))
    with pytest.raises(
        SettingsError, match=f"{prefix}_KEY_LOCATION is set without {prefix}_CERTIFICATE_LOCATION"
    ):
        load(StackSettings)


def test_an_option_given_on_the_command_line_is_named_not_its_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    options = {"cassandra_keyspace": "--keyspace"}
    with pytest.raises(SettingsError) as given:
        load(settings.CassandraSettings, cassandra_keyspace="Bad-KS", options=options)
    assert str(given.value).startswith("option --keyspace: String should match pattern")
    monkeypatch.setenv("CHATLOG_CASSANDRA_KEYSPACE", "Bad-KS")  # from the environment: the variable
    with pytest.raises(SettingsError) as from_env:
        load(settings.CassandraSettings, options=options)
    assert str(from_env.value).startswith("setting cassandra_keyspace (CHATLOG_CASSANDRA_KEYSPACE)")


def test_a_cassandra_login_needs_both_the_user_and_the_password() -> None:
    assert load(CassandraSettings).cassandra_login is None
    assert load(CassandraSettings, cassandra_username="u").cassandra_login is None
    assert load(CassandraSettings, cassandra_password="p").cassandra_login is None
    assert load(CassandraSettings, cassandra_username="u", cassandra_password="p").cassandra_login == (
        "u",
        "p",
    )
