"""TLS and SASL of the local stack: a dev CA, a server certificate for 127.0.0.1, SCRAM credentials.

Everything is generated locally with :pypi:`cryptography` (EC P-256 keys; what it costs at start-up is
in the README, "Transport security and logins") and kept under
``<state_dir>/kafka/tls``: ``ca.pem`` (what clients trust: ``CHATLOG_KAFKA_SSL_CA_LOCATION``,
``CHATLOG_CASSANDRA_SSL_CA_LOCATION``), ``server.p12`` (the servers' key and certificate chain, PKCS#12,
which Kafka and Cassandra read alike) and the random passwords of that keystore and of the SCRAM user.
Nothing here is a production secret: the files are made for, and stay on, this machine.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import StackError
from core.settings import StackSettings

SCRAM_USER = "chatlog"
SCRAM_MECHANISMS = ("SCRAM-SHA-512", "SCRAM-SHA-256")
SASL_MECHANISMS = (*SCRAM_MECHANISMS, "PLAIN")
_SCRAM_ITERATIONS = 8192
_VALID_DAYS = 3650
_RENEW_DAYS = 30


@dataclass(frozen=True)
class TlsFiles:
    """A dev CA and a server certificate signed by it, in ``directory``."""

    directory: Path

    @property
    def ca(self) -> Path:
        return self.directory / "ca.pem"

    @property
    def keystore(self) -> Path:
        return self.directory / "server.p12"

    @property
    def keystore_password(self) -> str:
        return (self.directory / "keystore.password").read_text().strip()

    @property
    def scram_password(self) -> str:
        return (self.directory / "scram.password").read_text().strip()


def tls_dir(settings: StackSettings) -> Path:
    return settings.state_dir / "kafka" / "tls"


def ensure_tls(directory: Path, hosts: tuple[str, ...] = ("127.0.0.1", "localhost")) -> TlsFiles:
    """The CA and server certificate in ``directory``, made once (and again when near expiry)."""
    files = TlsFiles(directory)
    if _valid(files):
        return files
    directory.mkdir(parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    _write_secret(directory / "keystore.password", secrets.token_urlsafe(18))
    if not (directory / "scram.password").exists():
        _write_secret(directory / "scram.password", secrets.token_urlsafe(18))
    ca_key, ca_cert = _ca()
    key, cert = _server(ca_key, ca_cert, hosts)
    _write_pkcs12(files, key, cert, ca_cert)
    from cryptography.hazmat.primitives.serialization import Encoding

    files.ca.write_bytes(ca_cert.public_bytes(Encoding.PEM))
    return files


def _write_secret(path: Path, value: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(value + "\n")


def _valid(files: TlsFiles) -> bool:
    from cryptography import x509

    needed = (
        files.ca,
        files.keystore,
        files.directory / "keystore.password",
        files.directory / "scram.password",
    )
    if not all(p.exists() for p in needed):
        return False
    try:
        cert = x509.load_pem_x509_certificate(files.ca.read_bytes())
    except ValueError:
        return False
    left = cert.not_valid_after_utc - dt.datetime.now(dt.UTC)
    return left > dt.timedelta(days=_RENEW_DAYS)


def _name(common_name: str) -> Any:
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "chatlog local stack"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _builder(subject: Any, issuer: Any, public_key: Any) -> Any:
    from cryptography import x509

    now = dt.datetime.now(dt.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=_VALID_DAYS))
    )


def _ca() -> tuple[Any, Any]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    name = _name("chatlog dev CA")
    cert = (
        _builder(name, name, key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _server(ca_key: Any, ca_cert: Any, hosts: tuple[str, ...]) -> tuple[Any, Any]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID

    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        _builder(_name(hosts[0]), ca_cert.subject, key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return key, cert


def _write_pkcs12(files: TlsFiles, key: Any, cert: Any, ca_cert: Any) -> None:
    from cryptography.hazmat.primitives.serialization import BestAvailableEncryption, pkcs12

    data = pkcs12.serialize_key_and_certificates(
        b"server", key, cert, [ca_cert], BestAvailableEncryption(files.keystore_password.encode())
    )
    files.keystore.write_bytes(data)
    os.chmod(files.keystore, 0o600)


def kafka_listener_config(settings: StackSettings, files: TlsFiles) -> str:
    """The broker properties of the SASL_SSL listener (appended to server.properties)."""
    prefix = "listener.name.sasl_ssl"
    scram = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
    plain = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'user_{SCRAM_USER}="{files.scram_password}";'
    )
    lines = [
        f"{prefix}.sasl.enabled.mechanisms={','.join(SASL_MECHANISMS)}",
        *(f"{prefix}.{m.lower()}.sasl.jaas.config={scram}" for m in SCRAM_MECHANISMS),
        f"{prefix}.plain.sasl.jaas.config={plain}",
        f"{prefix}.ssl.keystore.type=PKCS12",
        f"{prefix}.ssl.keystore.location={files.keystore}",
        f"{prefix}.ssl.keystore.password={files.keystore_password}",
        f"{prefix}.ssl.client.auth=none",
    ]
    return "\n".join(["# SASL_SSL listener (lab/stack/security.py)", *lines]) + "\n"


def client_settings(settings: StackSettings, **update: Any) -> StackSettings:
    """``settings`` pointed at the stack's SASL_SSL listener with its SCRAM-SHA-512 user and CA."""
    if not settings.kafka_sasl_ssl_port:
        raise StackError("the stack has no SASL_SSL listener (CHATLOG_KAFKA_SASL_SSL_PORT=0)")
    files = TlsFiles(tls_dir(settings))
    try:
        password = files.scram_password
    except OSError:
        raise StackError(f"no SASL credentials in {files.directory}: run `chatlog stack up`") from None
    from pydantic import SecretStr

    values: dict[str, Any] = {
        "kafka_bootstrap_servers": f"127.0.0.1:{settings.kafka_sasl_ssl_port}",
        "kafka_security_protocol": "SASL_SSL",
        "kafka_sasl_mechanism": "SCRAM-SHA-512",
        "kafka_sasl_username": SCRAM_USER,
        "kafka_sasl_password": SecretStr(password),
        "kafka_ssl_ca_location": files.ca,
    }
    return settings.model_copy(update={**values, **update})


def ensure_scram_user(settings: StackSettings, timeout: float = 15.0) -> bool:
    """Create the SCRAM user (both mechanisms) through the PLAINTEXT listener; True if it was missing.

    Credentials live in the KRaft metadata, so they survive restarts; a new state directory (new
    password file) gets them on its first ``up``.
    """
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialAlteration,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{settings.kafka_port}", "log_level": 0})
    wanted = {ScramMechanism.SCRAM_SHA_512, ScramMechanism.SCRAM_SHA_256}
    try:
        described: Any = admin.describe_user_scram_credentials([SCRAM_USER], request_timeout=timeout)
        have = {info.mechanism for info in described[SCRAM_USER].result().scram_credential_infos}
    except KafkaException:
        have = set()  # RESOURCE_NOT_FOUND: no credentials for this user yet
    if wanted <= have:
        return False
    password = TlsFiles(tls_dir(settings)).scram_password.encode()
    upserts: list[UserScramCredentialAlteration] = [
        UserScramCredentialUpsertion(SCRAM_USER, ScramCredentialInfo(m, _SCRAM_ITERATIONS), password)
        for m in sorted(wanted - have, key=lambda m: m.name)
    ]
    try:
        for upsert in upserts:  # one alteration of a user per request (DUPLICATE_RESOURCE otherwise)
            for fut in admin.alter_user_scram_credentials([upsert], request_timeout=timeout).values():
                fut.result()
    except KafkaException as exc:
        raise StackError(f"creating the SCRAM user {SCRAM_USER} failed: {exc.args[0]}") from None
    return True
