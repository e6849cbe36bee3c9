"""lab/stack/security.py: the local stack's CA, server keystore, SCRAM user and SASL_SSL listener."""

from __future__ import annotations

from pathlib import Path

from core.settings import StackSettings, load
from lab.stack import security
from lab.stack.security import TlsFiles


def test_stack_tls_files_are_made_once_and_chain_to_the_ca(stack_tls: TlsFiles) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import pkcs12

    again = security.ensure_tls(stack_tls.directory)
    assert again.ca.read_bytes() == stack_tls.ca.read_bytes()  # kept, not regenerated
    assert oct(stack_tls.keystore.stat().st_mode & 0o777) == "0o600"
    key, cert, chain = pkcs12.load_key_and_certificates(
        stack_tls.keystore.read_bytes(), stack_tls.keystore_password.encode()
    )
    ca = x509.load_pem_x509_certificate(stack_tls.ca.read_bytes())
    assert key is not None and cert is not None and chain == [ca]
    cert.verify_directly_issued_by(ca)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {str(ip) for ip in names.get_values_for_type(x509.IPAddress)} == {"127.0.0.1"}
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]


def test_kafka_listener_config_and_client_settings(stack_tls: TlsFiles, tmp_path: Path) -> None:
    settings = load(StackSettings, state_dir=str(tmp_path), kafka_sasl_ssl_port=19095)
    files = security.ensure_tls(security.tls_dir(settings))
    conf = security.kafka_listener_config(settings, files)
    assert "listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512,SCRAM-SHA-256,PLAIN" in conf
    assert f"listener.name.sasl_ssl.ssl.keystore.location={files.keystore}" in conf
    client = security.client_settings(settings)
    assert client.kafka_bootstrap_servers == "127.0.0.1:19095"
    assert client.kafka_client_config()["sasl.password"] == files.scram_password
    assert client.kafka_ssl_ca_location == files.ca
